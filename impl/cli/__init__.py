"""The `icefloe` command line (docs/table.md "The command line"; README "Tables").

    icefloe [--catalog URI] [--warehouse DIR] COMMAND ...     icefloe COMMAND --help

The default catalog is the SQLite file ./icefloe.db with catalog name `icefloe`, so
pyiceberg's SqlCatalog("icefloe", uri=...) opens the same tables. `--catalog
s3://bucket/prefix` is the S3 pointer-object catalog (no database) and `--warehouse
s3://bucket/prefix` puts new tables on S3; the endpoint and keys come from the
environment (`ICEFLOE_S3_ENDPOINT` or `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, ...;
docs/s3.md). Bad input gets one line on stderr and exit 2; a commit that did not commit
exits 1; a bug of ours exits 3 with one line, never a traceback.

This package is the front door: the console script `icefloe` is `icefloe.impl.cli:main`.
The table commands live in modules by group, each with `register(sub)`, which adds its
subcommands (with `set_defaults(fn=...)`). Other packages register their own commands:
ELSEWHERE names, as text, a `register(sub)` in a small module of each
(`icefloe.impl.serve.cli` for serve, `icefloe.conformance.cli` for conform and
demo-pipeline), imported only to build the parser; so impl imports nothing of the suite
for the table commands. (A table in code rather than an entry-point group: installed
metadata can be stale, e.g. an old icefloe.egg-info in the working directory, and a
command must not vanish with it.) A command that parses its own arguments sets
`own_arguments=True` and receives them as `args.argv`.

Every module imported to build the parser imports neither pyarrow, boto3 nor
hypothesis: `icefloe --help` and `icefloe COMMAND --help` are a help text, not a load of
the table layer (tests/impl/cli/test_cli_imports.py); a command imports what it needs
when it runs.
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

# The table commands: modules with `register(sub)`, in the order `icefloe --help` lists them.
COMMAND_GROUPS = [
    "icefloe.impl.cli.tables",        # create list describe append delete overwrite drop namespace
    "icefloe.impl.cli.update",        # update (row-level: copy-on-write or merge-on-read)
    "icefloe.impl.cli.reading",       # scan history
    "icefloe.impl.cli.metadata_tables",  # inspect TABLE snapshots|history|refs|manifests|entries|files|partitions
    "icefloe.impl.cli.schema",        # schema add-column|rename-column|drop-column|widen
    "icefloe.impl.cli.layout",        # partition add|remove|rename, sort-order set|unset
    "icefloe.impl.cli.admin",         # rename, properties set|unset, register
    "icefloe.impl.cli.add_files",     # add-files
    "icefloe.impl.cli.refs",          # branch tag rollback set-current cherry-pick
    "icefloe.impl.cli.maintenance",   # compact expire remove-orphans
]
# Commands of other packages: "module:function" of a register(sub) in a module with no heavy imports.
ELSEWHERE = [
    "icefloe.impl.serve.cli:add_parser",      # serve (the REST catalog server, impl/serve)
    "icefloe.conformance.cli:register",       # conform, conform-rest, demo-pipeline (the suite)
]

_EPILOG = """\
first steps:
  icefloe create db.events --schema-from events.parquet --partition-by "day(ts)"
  icefloe append db.events events.parquet
  icefloe scan db.events --filter "id > 10" --limit 20
  icefloe history db.events
  icefloe inspect db.events files                    # metadata tables: snapshots, files, partitions, ...
`icefloe COMMAND --help` describes a command, with examples (the filter grammar: scan
--help; the partition grammar: create --help)."""


class _Parser(argparse.ArgumentParser):
    """Usage errors in one line, naming where the help is (subcommands' parsers are of
    this class too: add_subparsers takes the parent's class)."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _registered_elsewhere() -> list:
    """The register(sub) of each ELSEWHERE entry; a package that is not there (a wheel
    without the suite) adds no command."""
    found = []
    for value in ELSEWHERE:
        module_name, _, function = value.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as e:
            if e.name and module_name.startswith(e.name):
                continue                      # that package is not installed: no such commands
            raise
        found.append(getattr(module, function))
    return found


def build_parser(elsewhere: dict[str, str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command: the table commands (COMMAND_GROUPS) and those other
    packages register (ELSEWHERE). `elsewhere` (name -> one-line description)
    lists more commands by name only (a caller that runs them itself)."""
    ap = _Parser(prog="icefloe", description="Iceberg tables (format v1 to v3) with a verified commit protocol",
                                 epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--catalog", default="sqlite:///./icefloe.db",
                    help="catalog URI: sqlite:///F, postgresql://..., s3://bucket/prefix, or http(s)://HOST:PORT "
                         "(an Iceberg REST catalog such as icefloe serve; token: $ICEFLOE_CATALOG_TOKEN) "
                         "(default sqlite:///./icefloe.db)")
    ap.add_argument("--warehouse", default="./warehouse",
                    help="where new tables live: a directory or s3://bucket/prefix (default ./warehouse)")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_GROUPS:
        importlib.import_module(name).register(sub)
    for register in _registered_elsewhere():
        register(sub)
    for name, text in (elsewhere or {}).items():
        if name not in sub.choices:
            sub.add_parser(name, help=text, add_help=False)
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
        args, rest = ap.parse_known_args(sys.argv[1:] if argv is None else argv)
        if getattr(args, "own_arguments", False):
            args.argv = rest               # the command parses them itself (conform, demo-pipeline)
        elif rest:
            ap.error(f"unrecognized arguments: {' '.join(rest)}")
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
