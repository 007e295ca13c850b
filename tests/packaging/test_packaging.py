"""Packaging and architecture: one import namespace, dependencies pointing one way,
a model free of I/O, and a wheel that carries both packages."""
from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imports_of(folder: Path):
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, alias.name
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield path, node.module


def test_impl_never_imports_model_or_harness():
    """Goal: dependencies point one way (impl <- harness -> model). Method: scan every
    import statement under impl/ with ast."""
    bad = [(str(p.relative_to(ROOT)), m) for p, m in imports_of(ROOT / "impl")
           if m.startswith(("icefloe.model", "icefloe.conformance"))]
    assert not bad, bad


def test_model_is_pure():
    """Goal: the model does no I/O and draws no randomness or time (only the explorer's
    CLI may time itself). Method: scan imports under model/."""
    forbidden = ("icefloe.impl", "random", "socket", "subprocess", "boto3", "pyarrow",
                 "fastavro", "sqlite3", "os", "threading")
    bad = [(str(p.relative_to(ROOT)), m) for p, m in imports_of(ROOT / "model")
           if m.split(".")[0] in {f.split(".")[0] for f in forbidden if "." not in f}
           or m.startswith("icefloe.impl")]
    timed = [(str(p.relative_to(ROOT)), m) for p, m in imports_of(ROOT / "model")
             if m == "time" and p.name != "explore.py"]
    assert not bad and not timed, (bad, timed)


def test_namespace_imports():
    """Goal: icefloe.model and icefloe.impl import from the installed package, wherever
    the interpreter starts. Method: import them in a subprocess started in /."""
    code = "import icefloe.model.explore, icefloe.impl.outcomes; print('ok')"
    out = subprocess.run([sys.executable, "-c", code], cwd="/", capture_output=True,
                         text=True, check=True).stdout
    assert out.strip() == "ok"


def test_wheel_contains_both_packages(tmp_path):
    """Goal: a wheel build maps model/ and impl/ into icefloe/. Method: build it with pip
    (no build isolation: the venv has setuptools) and list the archive."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True, cwd=tmp_path)
    (wheel,) = tmp_path.glob("icefloe-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for must in ("icefloe/model/iceberg.py", "icefloe/model/explore.py",
                 "icefloe/impl/outcomes.py", "icefloe/impl/io/base.py",
                 "icefloe/impl/catalog/base.py"):
        assert must in names, must
    assert not any(n.startswith(("tests/", "model/", "impl/")) for n in names)
    assert not any(n.startswith("icefloe/__init__") for n in names), "icefloe is a namespace package"
