"""The front door: `icefloe` starts in icefloe.impl.cli, adds the other packages' commands
through their own register(sub), and a help text loads no heavy package."""
from __future__ import annotations

import argparse
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from icefloe.impl import cli

HEAVY = ("pyarrow", "boto3", "botocore", "hypothesis")
_PROBE = """
import sys
from icefloe.impl.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as e:              # a command with its own parser may exit from --help
    code = e.code
finally:
    heavy = sorted(p for p in {heavy!r} if p in sys.modules)
    print("HEAVY:" + ",".join(heavy), file=sys.stderr)
sys.exit(code)
"""


def _commands() -> list[str]:
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def _heavy_loaded(*argv) -> tuple[int, str, list[str]]:
    done = subprocess.run([sys.executable, "-c", _PROBE.format(heavy=HEAVY), *argv],
                          capture_output=True, text=True, timeout=120)
    line = [ln for ln in done.stderr.splitlines() if ln.startswith("HEAVY:")]
    assert line, done.stderr
    return done.returncode, done.stdout, [p for p in line[-1][len("HEAVY:"):].split(",") if p]


def test_top_level_help_imports_no_heavy_package():
    """Goal: `icefloe --help` is a help text, not a load of the table layer. Method: run it
    in a fresh interpreter and look at sys.modules afterwards."""
    code, out, heavy = _heavy_loaded("--help")
    assert code == 0 and "first steps" in out
    assert heavy == []




@pytest.mark.parametrize("command", _commands())
def test_every_command_help_imports_no_heavy_package(command):
    """Goal: `icefloe COMMAND --help` imports neither pyarrow, boto3 nor hypothesis, for
    every command the parser lists (the table commands, serve, conform, demo-pipeline).
    Method: run each in a fresh interpreter; exit 0 with a usage text, and no heavy module."""
    code, out, heavy = _heavy_loaded(command, "--help")
    assert code == 0 and "usage:" in out, (command, out)
    assert heavy == [], (command, heavy)


def test_other_packages_register_their_commands():
    """Goal: serve, conform and demo-pipeline are registered by their own packages, so the
    table commands never import the suite. Method: ELSEWHERE names those packages'
    modules, and building the parser lists their commands without importing
    icefloe.conformance.conform, the REST server's app or the table layer."""
    assert [v.split(":")[0] for v in cli.ELSEWHERE] == ["icefloe.impl.serve.cli", "icefloe.conformance.cli"]
    names = _commands()
    for name in ("serve", "conform", "conform-rest", "demo-pipeline"):
        assert name in names, name
    code = ("import sys\nfrom icefloe.impl import cli\ncli.build_parser()\n"
            "bad = [m for m in ('icefloe.conformance.conform', 'icefloe.conformance.adapter', "
            "'icefloe.impl.serve.app', 'icefloe.impl.table.table') if m in sys.modules]\n"
            "print(bad)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "[]"


def test_console_script_is_the_impl_front_door():
    """Goal: the `icefloe` script starts in icefloe.impl.cli. Method: read pyproject.toml's
    [project.scripts] and the script the venv holds."""
    root = Path(__file__).resolve().parents[3]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"icefloe": "icefloe.impl.cli:main"}
    installed = Path(sys.executable).parent / "icefloe"
    assert "from icefloe.impl.cli import main" in installed.read_text()


def test_a_command_with_its_own_arguments_gets_them_all(capsys):
    """Goal: the suite's commands parse their own arguments (the table parser neither
    eats nor refuses them), and a table command still refuses an unknown option.
    Method: `conform --bogus` reaches conform's own parser (its error names `icefloe
    conform`); `scan db.t --bogus` is refused by the table parser."""
    assert cli.main(["conform", "--bogus"]) == 2
    assert "icefloe conform: unrecognized arguments: --bogus" in capsys.readouterr().err
    assert cli.main(["scan", "db.t", "--bogus"]) == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments: --bogus" in err and err.startswith("icefloe")
