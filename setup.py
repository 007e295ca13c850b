"""Map the top-level folders onto one import namespace.

`model/` is `icefloe.model` and `impl/` is `icefloe.impl` (the user's layout);
`icefloe` itself is a PEP 420 namespace package. Subpackages are discovered here
so that adding one never needs an edit to pyproject.toml.
"""
import os

from setuptools import setup

PACKAGE_ROOTS = {"icefloe.model": "model", "icefloe.impl": "impl", "icefloe.conformance": "conformance"}


def discover_packages():
    packages = []
    for package, folder in PACKAGE_ROOTS.items():
        for dirpath, dirnames, filenames in os.walk(folder):
            dirnames[:] = sorted(n for n in dirnames if not n.startswith((".", "__")))
            if "__init__.py" in filenames:
                rel = os.path.relpath(dirpath, folder)
                packages.append(package if rel == "." else f"{package}.{rel.replace(os.sep, '.')}")
    return packages


setup(packages=discover_packages(), package_dir=PACKAGE_ROOTS, include_package_data=False)
