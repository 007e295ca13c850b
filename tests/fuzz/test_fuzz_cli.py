"""Hostile CLI identifiers and filters (issue 14 item 7). Method: the icefloe command line
in process on a real table (SQLite catalog, local warehouse); `scan` and `history` with
Hypothesis-made identifiers and `scan --filter` with Hypothesis-made filters must exit 0
or 2 with one line on stderr (never a traceback) and change no file of the warehouse."""
from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, example, given, settings, strategies as st

import fuzz_targets as F
from mutations import EXAMPLES, mutated
from icefloe.impl.cli import EXIT_OK, EXIT_USAGE, main as cli_main

CLI_EXAMPLES = max(1, EXAMPLES // 4)  # each input runs the CLI: catalog, metadata and manifests read


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cli-fuzz")
    pq.write_table(F.ROWS, root / "rows.parquet")
    assert _cli(root, "create", "db.t", "--schema-from", str(root / "rows.parquet"), "--partition-by", "cat") == 0
    assert _cli(root, "append", "db.t", str(root / "rows.parquet")) == 0
    return root


def _cli(root: Path, *args: str) -> int:
    return cli_main(["--catalog", f"sqlite:///{root}/icefloe.db", "--warehouse", str(root / "warehouse"), *args])


def _files(root: Path) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def _run(root: Path, capsys, *args: str) -> None:
    F.COUNTS[f"cli {args[0]}"] += 1
    before = _files(root)
    capsys.readouterr()
    try:
        code = _cli(root, *args)
        usage = False
    except SystemExit as e:  # argparse's own refusal (e.g. a name starting with '-'): usage, then one error line
        code, usage = e.code, True
    err = capsys.readouterr().err.strip().splitlines()
    assert code in (EXIT_OK, EXIT_USAGE), code
    if code == EXIT_USAGE:
        assert err and err[-1].startswith("icefloe") and "Traceback" not in "\n".join(err), err
        assert usage or len(err) == 1, err
    assert _files(root) == before


identifiers = st.one_of(mutated(b"db.t"), st.text(max_size=24).map(lambda t: t.encode("utf-8", "surrogatepass")),
                        st.lists(st.sampled_from(["db", "t", "", "..", "/", "/tmp", "x.metadata.json", "\x00", " "]),
                                 max_size=5).map(lambda ps: ".".join(ps).encode()))


@settings(max_examples=CLI_EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(identifiers, st.sampled_from(["scan", "history"]))
@example(b"db./etc/passwd", "scan")
@example(b"db.t\xff", "history")
def test_read_commands_with_hostile_identifiers(warehouse, capsys, data, command):
    # capsys is function-scoped but only read and cleared per input: no state leaks between inputs
    _run(warehouse, capsys, command, F._text(data))


@settings(max_examples=CLI_EXAMPLES, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(mutated(F.SEEDS["filter"]()), st.text(max_size=40).map(lambda t: t.encode("utf-8", "surrogatepass"))))
@example(b"cat = '\xff'")
def test_scan_with_hostile_filters(warehouse, capsys, data):
    # as above: capsys is cleared per input
    _run(warehouse, capsys, "scan", "db.t", "--filter", F._text(data), "--format", "csv")
