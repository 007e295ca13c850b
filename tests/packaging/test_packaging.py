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


# The explorer (explore.py, and explore_parallel.py which splits its search between
# forked processes) is the tool that searches the model, not the model: it may time itself
# and use processes, files and the operating system. Nothing else under model/ may.
EXPLORER = ("explore.py", "explore_parallel.py")


def test_model_is_pure():
    """Goal: the model does no I/O and draws no randomness or time (only the explorer
    may time itself and fork). Method: scan imports under model/."""
    forbidden = {"random", "socket", "subprocess", "boto3", "pyarrow", "fastavro", "sqlite3", "os",
                 "threading", "multiprocessing", "tempfile", "shutil", "pickle"}
    explorer_may = {"os", "multiprocessing", "tempfile", "shutil", "pickle"}
    bad = [(str(p.relative_to(ROOT)), m) for p, m in imports_of(ROOT / "model")
           if (m.split(".")[0] in forbidden and not (p.name in EXPLORER and m.split(".")[0] in explorer_may))
           or m.startswith("icefloe.impl")]
    timed = [(str(p.relative_to(ROOT)), m) for p, m in imports_of(ROOT / "model")
             if m == "time" and p.name not in EXPLORER]
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


def test_one_help_lists_every_command():
    """Goal: `icefloe --help` is the one place that lists every command, the table
    commands and the conformance suite's alike. Method: run the console script's help and
    look for each subcommand the impl CLI and the console script define."""
    from icefloe.conformance import cli as console
    from icefloe.impl import cli as impl_cli
    out = subprocess.run([sys.executable, "-m", "icefloe.conformance.cli", "--help"], capture_output=True,
                         text=True, check=True).stdout
    sub = next(a for a in impl_cli.build_parser()._actions if a.dest == "command")
    for name in [*sub.choices, *console.COMMANDS]:
        assert f"    {name} " in out, name


def test_a_missing_extra_is_named():
    """Goal: `icefloe conform` without its packages says which extra to install, in one
    line. Method: hide hypothesis from the import system in a subprocess."""
    code = ("import importlib.util, sys\n"
            "real = importlib.util.find_spec\n"
            "importlib.util.find_spec = lambda n, *a: None if n == 'hypothesis' else real(n, *a)\n"
            "from icefloe.conformance import cli\n"
            "sys.exit(cli.main(['conform']))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip() == "icefloe conform: needs hypothesis: pip install 'icefloe[conform]'"
