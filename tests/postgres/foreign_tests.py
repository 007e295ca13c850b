"""Running another folder's tests against this suite's PostgreSQL server, without copying them.

Test modules are not importable by name from another folder (tests/ has no packages), so the
module is loaded from its file, and its `test_*` functions are bound into the calling module,
where that module's fixtures (not the original's) supply what the tests ask for.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

TESTS_ROOT = Path(__file__).resolve().parents[1]


def load_test_module(relative_path: str, module_name: str) -> ModuleType:
    path = TESTS_ROOT / relative_path
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bind_tests(module: ModuleType, namespace: dict) -> list[str]:
    """Put every `test_*` function of `module` into `namespace`; returns their names."""
    names = sorted(name for name in vars(module) if name.startswith("test_"))
    assert names, f"no tests in {module.__name__}"
    for name in names:
        assert name not in namespace, f"{name} would hide a test of the binding module"
        namespace[name] = getattr(module, name)
    return names
