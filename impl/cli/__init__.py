"""The `icefloe` command line (docs/table.md "The command line"; README "Tables").

    icefloe [--catalog URI] [--warehouse DIR] COMMAND ...     icefloe COMMAND --help

The default catalog is the SQLite file ./icefloe.db with catalog name `icefloe`, so
pyiceberg's SqlCatalog("icefloe", uri=...) opens the same tables. `--catalog
s3://bucket/prefix` is the S3 pointer-object catalog (no database) and `--warehouse
s3://bucket/prefix` puts new tables on S3; the endpoint and keys come from the
environment (`ICEFLOE_S3_ENDPOINT` or `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, ...;
docs/s3.md). Bad input gets one line on stderr and exit 2; a commit that did not commit
exits 1; a bug of ours exits 3 with one line, never a traceback.

Commands live in modules by group; each has `register(sub)` (or `add_parser(sub)`), which
adds its subcommands (with `set_defaults(fn=...)`). Another package adds its own group by naming its module
in COMMAND_GROUPS (e.g. the REST server's `serve`); the module is imported when the
parser is built, so it should import its heavy dependencies inside its command.
"""
from __future__ import annotations

import argparse
import errno
import importlib
import os
import sys

from icefloe.impl.catalog.base import CatalogError
from icefloe.impl.cli.common import (  # noqa: F401 - the CLI's public names
    EXIT_INTERNAL, EXIT_NOT_COMMITTED, EXIT_OK, EXIT_USAGE, UsageError,
)
from icefloe.impl.outcomes import IcefloeError

# The registration point: modules with `register(sub)`, in the order `icefloe --help` lists them.
COMMAND_GROUPS = [
    "icefloe.impl.cli.tables",        # create list describe append delete overwrite drop namespace
    "icefloe.impl.cli.reading",       # scan history
    "icefloe.impl.cli.schema",        # schema add-column|rename-column|drop-column|widen
    "icefloe.impl.cli.refs",          # branch tag rollback set-current cherry-pick
    "icefloe.impl.cli.maintenance",   # compact expire remove-orphans
    "icefloe.impl.serve.cli",          # serve (issue 13; its module's add_parser)
]

_EPILOG = """\
first steps:
  icefloe create db.events --schema-from events.parquet --partition-by "day(ts)"
  icefloe append db.events events.parquet
  icefloe scan db.events --filter "id > 10" --limit 20
  icefloe history db.events
`icefloe COMMAND --help` describes a command, with examples (the filter grammar: scan
--help; the partition grammar: create --help)."""


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line, naming where the help is (subcommands' parsers are of
    this class too: add_subparsers takes the parent's class)."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser(elsewhere: dict[str, str] | None = None) -> argparse.ArgumentParser:
    """The parser of every table command. `elsewhere` (name -> one-line description) names
    commands the console script runs from other packages (the conformance suite), so that
    `icefloe --help` lists every command although impl imports none of them."""
    ap = _Parser(prog="icefloe", description="Iceberg v2 tables with a verified commit protocol",
                                 epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--catalog", default="sqlite:///./icefloe.db",
                    help="catalog URI: sqlite:///F, postgresql://..., or s3://bucket/prefix (default sqlite:///./icefloe.db)")
    ap.add_argument("--warehouse", default="./warehouse",
                    help="where new tables live: a directory or s3://bucket/prefix (default ./warehouse)")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in (elsewhere or {}).items():
        sub.add_parser(name, help=text, add_help=False)
    for name in COMMAND_GROUPS:
        module = importlib.import_module(name)
        (getattr(module, "register", None) or module.add_parser)(sub)
    return ap


def _one_line(e: BaseException) -> str:
    text = str(e)
    return text.splitlines()[0] if text.strip() else type(e).__name__


def _quiet_broken_pipe() -> int:
    """The reader of our output has gone (`icefloe scan ... | head`): stop quietly. stdout
    is pointed at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except OSError:
        pass
    return EXIT_OK


def main(argv=None) -> int:
    ap = build_parser()
    try:
        args = ap.parse_args(argv)
    except SystemExit as e:            # --help (0) or a usage error (2, one line printed)
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    try:
        return args.fn(args)
    except BrokenPipeError:
        return _quiet_broken_pipe()
    except (UsageError, IcefloeError, CatalogError, ValueError, KeyError, OSError) as e:
        if isinstance(e, OSError) and e.errno == errno.EPIPE:
            return _quiet_broken_pipe()
        print(f"icefloe: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("icefloe: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # noqa: BLE001 - a bug of ours: one line, its own exit code, never a traceback
        print(f"icefloe: internal error ({type(e).__name__}: {_one_line(e)}); please report it with the command",
              file=sys.stderr)
        return EXIT_INTERNAL
