"""What every `icefloe` command shares: the catalog and table a command names, input
files, time arguments, and the one-line report of a commit's outcome.

Exit codes: 0 done (committed, or nothing to do), 1 a commit that did not commit
(Conflict or Unknown, named), 2 bad input (one line on stderr), 3 a bug of ours.

This module is imported to build the parser (`icefloe --help`), so it imports neither
pyarrow nor the table layer at its top: the functions that need them import them.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import sys
import textwrap
from pathlib import Path

from icefloe.impl.catalog.base import TableIdentifier
from icefloe.impl.io.locations import canonical_location, scheme_of
from icefloe.impl.outcomes import STORE, Committed

EXIT_OK, EXIT_NOT_COMMITTED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
S3_SCHEMES = ("s3://", "s3a://")
# Values the help texts show, kept here so that building the parser imports no table
# module (tests/impl/cli/test_cli_help.py checks each equals its source's).
MAIN_BRANCH = "main"                                   # icefloe.impl.format.metadata.MAIN_BRANCH
OUTPUT_FORMATS = ("table", "csv", "json", "jsonl")     # icefloe.impl.cli.output.FORMATS


class UsageError(Exception):
    """Bad input to a command: printed as one line, exit 2."""


# -- help ----------------------------------------------------------------------------------

def add_command(sub, name: str, summary: str, description: str, examples: str, **kwargs) -> argparse.ArgumentParser:
    """A subcommand with a one-line summary (in `icefloe --help`), a description and
    examples (in `icefloe NAME --help`)."""
    return sub.add_parser(name, help=summary, description=textwrap.dedent(description).strip(),
                          epilog="examples:\n" + textwrap.indent(textwrap.dedent(examples).strip(), "  "),
                          formatter_class=argparse.RawDescriptionHelpFormatter, **kwargs)


FILTER_GRAMMAR = """\
filter grammar (--filter):
  PREDICATE   column OP literal        OP: = == != <> < <= > >=
              column in (v1, v2, ...)  column not in (...)
              column is null           column is not null
              column is nan            column is not nan
              starts_with(column, 'prefix')
  combine     a and b, a or b, not a, ( ... )        and binds tighter than or
  literals    42  -1.5  'text' ('' is a quote)  true false
              dates and timestamps as strings: '2024-01-02', '2024-01-02T13:00:00+00:00'
  columns     plain, dotted for a nested field (address.city), or "quoted" / `quoted`"""

PARTITION_GRAMMAR = """\
partition grammar (--partition-by), comma separated fields:
  col                identity: one partition per value            dir  col=value
  bucket(N, col)     hash into N buckets (Iceberg's murmur3)       dir  col_bucket=3
  truncate(W, col)   strings to W characters, numbers to a W grid  dir  col_trunc=ab
  year(ts)           years since 1970 (date or timestamp column)   dir  ts_year=2024
  month(ts)                                                        dir  ts_month=2024-01
  day(ts)                                                          dir  ts_day=2024-01-02
  hour(ts)           timestamp columns only                        dir  ts_hour=2024-01-02-13"""

TIME_HELP = ("milliseconds since the epoch, an ISO-8601 time (2024-01-02T13:00:00+01:00; "
             "without a zone: UTC; a bare date: its midnight UTC), or 'now'")


# -- arguments -----------------------------------------------------------------------------

_DURATION_RE = re.compile(r"(\d+)\s*(ms|s|m|h|d)")
_DURATION_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def time_ms(text: str) -> int:
    """An argparse type: a point in time as milliseconds since the epoch."""
    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    if text.lower() == "now":
        return dt_to_ms(dt.datetime.now(dt.timezone.utc))
    try:
        value = dt.datetime.fromisoformat(text.replace(" ", "T", 1) if len(text) > 10 else text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is neither milliseconds since the epoch nor an ISO-8601 time "
            "(e.g. 2024-01-02T13:00:00Z, 2024-01-02T13:00:00+01:00, 2024-01-02)") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return dt_to_ms(value)


def dt_to_ms(value: dt.datetime) -> int:
    return (value - dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)) // dt.timedelta(milliseconds=1)


def duration_ms(text: str) -> int:
    """An argparse type: a duration such as 5d, 12h, 30m, 90s, 250ms or plain milliseconds."""
    text = text.strip().lower()
    if re.fullmatch(r"\d+", text):
        return int(text)
    m = _DURATION_RE.fullmatch(text)
    if not m:
        raise argparse.ArgumentTypeError(f"{text!r}: a duration is N followed by ms, s, m, h or d (e.g. 5d)")
    return int(m[1]) * _DURATION_MS[m[2]]


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return value


def iso_ms(ms: int | None) -> str:
    """A timestamp in ms as ISO-8601 UTC, to the millisecond."""
    if ms is None:
        return "-"
    try:
        value = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=ms)
    except OverflowError:
        return f"{ms} ms"
    return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def human_ms(ms: int) -> str:
    """A duration for people, to its two largest units: 5d, 3h 20m, 42s."""
    rest = ms // 1000
    days, rest = divmod(rest, 86_400)
    hours, rest = divmod(rest, 3_600)
    minutes, seconds = divmod(rest, 60)
    parts = [f"{v}{u}" for v, u in ((days, "d"), (hours, "h"), (minutes, "m"), (seconds, "s")) if v]
    return " ".join(parts[:2]) or f"{ms}ms"


# -- catalogs, tables, files ---------------------------------------------------------------

def catalog(args):
    """The catalog --catalog names: SqlCatalog, S3Catalog or RestCatalog."""
    from icefloe.impl.catalog.s3 import S3Catalog
    from icefloe.impl.catalog.sql import SqlCatalog
    from icefloe.impl.io.router import StoreRouter
    if args.catalog.startswith(("http://", "https://")):
        # An Iceberg REST catalog (`icefloe serve`, or any other): commits go through its
        # endpoint; the token, if it wants one, from the environment (never a flag: shell history).
        from icefloe.impl.catalog.rest import RestCatalog
        return RestCatalog(args.catalog, StoreRouter(), token=os.environ.get("ICEFLOE_CATALOG_TOKEN"))
    if args.catalog.startswith(S3_SCHEMES):
        io = StoreRouter()
        return S3Catalog(io.store_for(args.catalog), args.catalog)  # type: ignore[arg-type]
    # A command that only reads (set_defaults(read_only=True)) creates no database (issue 14).
    return SqlCatalog(args.catalog, read_only=getattr(args, "read_only", False))


NAME_LEVEL_BYTES_MAX = 255   # a level is a directory name in the table's location (NAME_MAX of most file systems)


def check_name_levels(text: str, levels, what: str = "table name") -> None:
    """Refuse a name the catalog would store as another name than the one a user reads:
    a level with leading or trailing whitespace ("db.t " is not db.t; bug18), or one longer
    than a directory name may be (which a store would report as a failure of its own)."""
    for level in levels:
        if level != level.strip():
            raise UsageError(f"{what} {text!r}: {level!r} has leading or trailing whitespace "
                             f"(did you mean {'.'.join(x.strip() for x in levels)!r}?)")
        if len(level.encode("utf-8")) > NAME_LEVEL_BYTES_MAX:
            raise UsageError(f"{what} {text[:40]!r}...: a level of {len(level.encode('utf-8'))} bytes; "
                             f"at most {NAME_LEVEL_BYTES_MAX} (it names a directory)")


def ensure_namespace(cat, namespace: tuple[str, ...]) -> None:
    """Create a table's namespace where the catalog does not do it with the table (a REST
    catalog's register answers NoSuchNamespace; the SQL and S3 catalogs create it)."""
    from icefloe.impl.catalog.base import NamespaceAlreadyExists
    from icefloe.impl.catalog.rest import RestCatalog
    if isinstance(cat, RestCatalog):
        try:
            cat.create_namespace(namespace)
        except NamespaceAlreadyExists:
            pass


def identifier(text: str) -> TableIdentifier:
    """The table a command names, refused (UsageError) if it is not exactly one a user
    can name again: see check_name_levels."""
    check_name_levels(text, text.split("."))
    return TableIdentifier.parse(text)


def open_table(args, name: str | None = None):
    from icefloe.impl.io.router import StoreRouter
    from icefloe.impl.table.table import Table
    return Table(catalog(args), identifier(name or args.table), StoreRouter())


def is_metadata_path(text: str) -> bool:
    return (text.endswith(".metadata.json") or text.startswith(("file:", *S3_SCHEMES))
            or os.sep in text)


def read_only(text: str):
    """(store, metadata) of a table read straight from a metadata JSON file, no catalog."""
    if text.startswith(S3_SCHEMES):
        location = text
    else:
        location = canonical_location(text if text.startswith("file:") else "file://" + str(Path(text).resolve()))
    from icefloe.impl.format.metadata import from_json
    from icefloe.impl.io.router import StoreRouter
    store = StoreRouter()
    return store, from_json(store.get(location), location)


def table_or_file(args):
    """(store, metadata) of a table named by identifier, or by a metadata file (read-only)."""
    if is_metadata_path(args.table):
        return read_only(args.table)
    table = open_table(args)
    return table.io, table.metadata


def table_location(warehouse: str, ident: TableIdentifier) -> str:
    if warehouse.startswith(S3_SCHEMES):
        return "/".join([warehouse.rstrip("/"), *ident.namespace, ident.name])
    if "://" in warehouse and scheme_of(warehouse) != "file":
        raise UsageError(f"--warehouse {warehouse}: a local directory or s3://bucket/prefix")
    # A plain file:// location, not a percent-encoded URI: a warehouse "./my wh" is the
    # directory "my wh", as every reader of the metadata will take it.
    return "file://" + str(Path(warehouse.removeprefix("file://")).resolve().joinpath(*ident.namespace, ident.name))


# -- outcomes ------------------------------------------------------------------------------

def report(outcome, what: str = "") -> int:
    """One line for a commit's outcome: `committed snapshot ID ...` or `committed (no
    snapshot: metadata change) ...`; a commit that did not commit on stderr, exit 1."""
    suffix = f": {what}" if what else ""
    if isinstance(outcome, Committed) and outcome.attempts == 0:
        print(f"nothing to do: no commit{suffix}")
        return EXIT_OK
    if isinstance(outcome, Committed):
        head = f"snapshot {outcome.snapshot_id}" if outcome.snapshot_id is not None else "no snapshot: metadata change"
        print(f"committed {head} in {outcome.attempts} attempt(s){suffix}")
        return EXIT_OK
    if getattr(outcome, "cause", None) == STORE:
        print(f"not committed: storage or catalog unavailable: {outcome.reason}", file=sys.stderr)
        return EXIT_NOT_COMMITTED
    cause = f" ({outcome.cause})" if getattr(outcome, "cause", None) else ""
    print(f"not committed: {type(outcome).__name__}{cause}: {outcome.reason}", file=sys.stderr)
    return EXIT_NOT_COMMITTED
