"""Help that teaches: every subcommand's --help has a description and an example, the
grammars and defaults are where a user looks, and usage errors are one line."""
from __future__ import annotations

import argparse

from icefloe.impl import cli


def _subcommands():
    sub = next(a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def test_every_subcommand_has_a_description_and_an_example():
    """Goal: `icefloe X --help` explains X. Method: walk the parser; each table command's
    parser has a description of at least a sentence and an `examples:` epilog whose
    lines start with `icefloe X` (or a tool reading its output)."""
    for name, parser in _subcommands().items():
        if name in ("serve", "conform", "conform-rest", "demo-pipeline"):
            continue                   # other packages' commands (their own help: test_cli_imports.py)
        assert parser.description and len(parser.description) > 40, name
        assert parser.epilog and parser.epilog.startswith("examples:"), name
        examples = [line.strip() for line in parser.epilog.splitlines()[1:] if line.strip()]
        assert examples and any(f"icefloe {name}" in e or f"icefloe --" in e for e in examples), (name, examples)


def test_grammars_and_defaults_are_in_help(capsys):
    """Goal: the filter and partition grammars and expire's defaults are in --help.
    Method: render the help of scan, delete, create, expire and the top level."""
    def help_of(*argv):
        assert cli.main([*argv, "--help"]) == 0
        return capsys.readouterr().out
    for command in ("scan", "delete", "overwrite"):
        text = help_of(command)
        assert "filter grammar" in text and "starts_with(column, 'prefix')" in text and "is not null" in text
    text = help_of("create")
    for transform in ("bucket(N, col)", "truncate(W, col)", "ts_day=2024-01-02", "ts_month=2024-01",
                      "ts_hour=2024-01-02-13", "ts_year=2024"):
        assert transform in text, transform
    text = help_of("expire")
    assert "default 1" in text and "(default 5d)" in text and "--retain-last 5" in text and "5d ago" in text
    assert "ISO-8601" in help_of("scan") and "first steps" in help_of()


def test_usage_errors_are_one_line(capsys):
    """Goal: a mistyped command gets one line, not a usage block. Method: an unknown
    option, a missing argument, a bad time; exit 2 and one stderr line each."""
    for argv in (["scan"], ["scan", "db.t", "--bogus"], ["expire", "db.t", "--older-than", "soon"],
                 ["nosuchcommand"], ["schema", "widen", "db.t"]):
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "--help" in err, (argv, err)


def test_help_constants_are_the_table_layers():
    """Goal: the defaults --help shows (kept in the CLI so that help imports no table module)
    are the ones the table layer applies. Method: compare each with its source."""
    from icefloe.impl.cli import common, maintenance, output
    from icefloe.impl.format.metadata import MAIN_BRANCH
    from icefloe.impl.table import maintenance as M, operations as ops
    assert common.MAIN_BRANCH == MAIN_BRANCH
    assert output.FORMATS == common.OUTPUT_FORMATS
    assert maintenance.MAX_SNAPSHOT_AGE_MS_DEFAULT == ops.MAX_SNAPSHOT_AGE_MS_DEFAULT
    assert maintenance.MIN_SNAPSHOTS_TO_KEEP_DEFAULT == ops.MIN_SNAPSHOTS_TO_KEEP_DEFAULT
    assert maintenance.ORPHAN_AGE_MS_DEFAULT == M.ORPHAN_AGE_MS_DEFAULT
