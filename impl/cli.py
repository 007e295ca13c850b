"""The `icefloe` command line (issue: reference implementation, item 7).

    icefloe [--catalog URI] [--warehouse DIR] create db.t --schema-from F.parquet [--partition-by "cat, bucket(16, id)"]
    icefloe append db.t FILE.parquet|FILE.csv
    icefloe scan db.t|METADATA.json [--snapshot-id ID | --as-of MS | --tag T] [--filter EXPR] [--format table|json|csv]
    icefloe history db.t|METADATA.json [--json] [--graph OUT.png|OUT.dot]
    icefloe rollback db.t SNAPSHOT_ID
    icefloe compact db.t
    icefloe expire db.t [--older-than MS] [--retain-last N]

The default catalog is the SQLite file ./icefloe.db with catalog name `icefloe`, so
pyiceberg's SqlCatalog("icefloe", uri=...) opens the same tables. Bad input gets one
line on stderr and exit code 2; a commit that did not commit exits 1.
`--catalog s3://bucket/prefix` is the S3 pointer-object catalog (no database) and
`--warehouse s3://bucket/prefix` puts new tables on S3; the endpoint and keys come from
the environment (`ICEFLOE_S3_ENDPOINT` or `AWS_ENDPOINT_URL`, `AWS_ACCESS_KEY_ID`, ...;
docs/s3.md). Locations of any registered scheme are read through one StoreRouter.
`history --graph` draws the snapshot DAG (parent links, refs, main's current snapshot)
as a PNG with matplotlib, or writes DOT text when the name ends in `.dot`.
"""
from __future__ import annotations

import argparse
import io as _io
import json
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq

from icefloe.impl.catalog.base import CatalogError, TableIdentifier
from icefloe.impl.catalog.s3 import S3Catalog
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format.expression_parser import parse as parse_filter
from icefloe.impl.format.metadata import from_json
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.format.types import schema_from_arrow, schema_to_arrow
from icefloe.impl.io.locations import scheme_of
from icefloe.impl.io.router import StoreRouter
from icefloe.impl.io.locations import canonical_location
from icefloe.impl.outcomes import STORE, Committed, IcefloeError
from icefloe.impl.table import scan as S
from icefloe.impl.table.append_schema import SchemaMismatch, conform_rows
from icefloe.impl.table.table import Table, create_table

EXIT_OK, EXIT_NOT_COMMITTED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3


class UsageError(Exception):
    pass


def _read_rows(path: str) -> pa.Table:
    if not os.path.exists(path):
        raise UsageError(f"{path}: no such file")
    try:
        if path.endswith(".csv"):
            return pa_csv.read_csv(path)
        return pq.read_table(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise UsageError(f"{path}: not a readable {'CSV' if path.endswith('.csv') else 'Parquet'} file: {e}") from None


S3_SCHEMES = ("s3://", "s3a://")


def _catalog(args) -> SqlCatalog | S3Catalog:
    if args.catalog.startswith(S3_SCHEMES):
        io = StoreRouter()
        return S3Catalog(io.store_for(args.catalog), args.catalog)  # type: ignore[arg-type]
    return SqlCatalog(args.catalog, read_only=getattr(args, "read_only", False))


def _table(args) -> Table:
    return Table(_catalog(args), TableIdentifier.parse(args.table), StoreRouter())


def _is_metadata_path(text: str) -> bool:
    return (text.endswith(".metadata.json") or text.startswith(("file:", *S3_SCHEMES))
            or os.sep in text)


def _read_only(text: str):
    """A table read straight from a metadata JSON file, without a catalog."""
    if text.startswith(S3_SCHEMES):
        location = text
    else:
        location = canonical_location(text if text.startswith("file:") else "file://" + str(Path(text).resolve()))
    store = StoreRouter()
    return store, from_json(store.get(location), location)


def _table_location(warehouse: str, ident: TableIdentifier) -> str:
    if warehouse.startswith(S3_SCHEMES):
        return "/".join([warehouse.rstrip("/"), *ident.namespace, ident.name])
    if "://" in warehouse and scheme_of(warehouse) != "file":
        raise UsageError(f"--warehouse {warehouse}: a local directory or s3://bucket/prefix")
    # A plain file:// location, not a percent-encoded URI: a warehouse "./my wh" is the
    # directory "my wh", as every reader of the metadata will take it.
    return "file://" + str(Path(warehouse.removeprefix("file://")).resolve().joinpath(*ident.namespace, ident.name))


def cmd_create(args) -> int:
    rows = _read_rows(args.schema_from)
    schema = schema_from_arrow(rows.schema)
    spec = parse_partition_spec(args.partition_by, schema) if args.partition_by else None
    ident = TableIdentifier.parse(args.table)
    location = _table_location(args.warehouse, ident)
    create_table(_catalog(args), ident, schema, spec, location=location, io=StoreRouter())
    print(f"created {ident} at {location}")
    return EXIT_OK


def cmd_append(args) -> int:
    table = _table(args)
    rows = _read_rows(args.file)
    try:
        rows = conform_rows(rows, table.metadata.schema(), widen=args.cast)
    except SchemaMismatch as e:
        raise UsageError(f"{args.file}: {e}") from None
    return _report(table.append(rows, widen=args.cast))


def _report(outcome) -> int:
    if isinstance(outcome, Committed) and outcome.attempts == 0:
        print("nothing to do: no commit")
        return EXIT_OK
    if isinstance(outcome, Committed):
        what = f"snapshot {outcome.snapshot_id}" if outcome.snapshot_id is not None else "no snapshot: metadata change"
        print(f"committed {what} in {outcome.attempts} attempt(s)")
        return EXIT_OK
    if getattr(outcome, "cause", None) == STORE:
        print(f"not committed: storage or catalog unavailable: {outcome.reason}", file=sys.stderr)
        return EXIT_NOT_COMMITTED
    cause = f" ({outcome.cause})" if getattr(outcome, "cause", None) else ""
    print(f"not committed: {type(outcome).__name__}{cause}: {outcome.reason}", file=sys.stderr)
    return EXIT_NOT_COMMITTED


def _snapshot(metadata, args):
    if args.snapshot_id is not None:
        snap = metadata.snapshot_by_id(args.snapshot_id)
        if snap is None:
            raise UsageError(f"snapshot {args.snapshot_id} is not retained")
        return snap
    if args.tag is not None:
        if args.tag not in metadata.refs:
            raise UsageError(f"no tag or branch {args.tag!r}")
        return metadata.ref_head(args.tag)
    if args.as_of is not None:
        snap = metadata.snapshot_as_of(args.as_of)
        if snap is None:
            raise UsageError(f"no snapshot was current at {args.as_of}")
        return snap
    return metadata.current_snapshot()


def cmd_scan(args) -> int:
    if _is_metadata_path(args.table):
        store, metadata = _read_only(args.table)
    else:
        table = _table(args)
        store, metadata = table.io, table.metadata
    row_filter = parse_filter(args.filter) if args.filter else None
    rows = S.scan(store, metadata, _snapshot(metadata, args), row_filter)
    if args.format == "json":
        print(json.dumps(rows.to_pylist(), default=str))
    elif args.format == "csv":
        buf = _io.BytesIO()
        pa_csv.write_csv(rows, buf)
        sys.stdout.write(buf.getvalue().decode())
    else:
        print(_text_table(rows))
    return EXIT_OK


def _text_table(rows: pa.Table) -> str:
    if not rows.num_rows:
        return "(no rows)"
    cells = [[str(v) for v in col.to_pylist()] for col in rows.columns]
    widths = [max(len(name), *(len(c) for c in col)) for name, col in zip(rows.column_names, cells)]
    lines = ["  ".join(n.rjust(w) for n, w in zip(rows.column_names, widths))]
    for i in range(rows.num_rows):
        lines.append("  ".join(col[i].rjust(w) for col, w in zip(cells, widths)))
    return "\n".join(lines)


def cmd_history(args) -> int:
    if _is_metadata_path(args.table):
        _, metadata = _read_only(args.table)
    else:
        metadata = _table(args).metadata
    if args.graph is not None and not args.graph.endswith((".png", ".dot")):
        raise UsageError(f"--graph {args.graph}: the name must end in .png or .dot")
    current = metadata.current_snapshot_id
    rows = [{"snapshot_id": s.snapshot_id, "parent_snapshot_id": s.parent_snapshot_id,
             "sequence_number": s.sequence_number, "timestamp_ms": s.timestamp_ms,
             "operation": s.summary.get("operation"), "current": s.snapshot_id == current}
            for s in sorted(metadata.snapshots, key=lambda s: s.sequence_number)]
    if args.json:
        print(json.dumps(rows))
    else:
        for r in rows:
            mark = "*" if r["current"] else " "
            print(f"{mark} {r['snapshot_id']:>20}  parent {str(r['parent_snapshot_id']):>20}  "
                  f"seq {r['sequence_number']:>4}  {r['operation']}")
    if args.graph is not None:
        from icefloe.impl.table import lineage_graph  # networkx + matplotlib: only when drawing
        graph = lineage_graph.write_graph(metadata, args.graph, title=args.table)
        print(f"wrote {args.graph}: {graph.number_of_nodes()} snapshot(s), {graph.number_of_edges()} parent link(s)",
              file=sys.stderr if args.json else sys.stdout)
    return EXIT_OK


def cmd_rollback(args) -> int:
    return _report(_table(args).rollback_to(args.snapshot_id))


def cmd_compact(args) -> int:
    return _report(_table(args).rewrite_files())


def _cleanup_report(cleanup, what: str) -> None:
    print(cleanup.summary())
    if not cleanup.complete:
        print(f"icefloe: warning: {what}; cleanup incomplete (orphan removal can finish it later): "
              f"{cleanup.summary()}", file=sys.stderr)


def cmd_expire(args) -> int:
    outcome, cleanup = _table(args).expire_snapshots(args.older_than, args.retain_last)
    code = _report(outcome)
    if code == EXIT_OK:
        _cleanup_report(cleanup, "committed")
    return code


def cmd_remove_orphans(args) -> int:
    cleanup = _table(args).remove_orphan_files(args.older_than, dry_run=args.dry_run)
    for location in cleanup:
        print(f"{'would delete' if args.dry_run else 'deleted'} {location}")
    for location in cleanup.refused:
        print(f"refused (outside the table) {location}")
    _cleanup_report(cleanup, "orphan removal ran")
    return EXIT_OK


def build_parser(elsewhere: dict[str, str] | None = None) -> argparse.ArgumentParser:
    """The parser of every table command. `elsewhere` (name -> one-line description) names
    commands the console script runs from other packages (the conformance suite), so that
    `icefloe --help` lists every command although impl imports none of them."""
    ap = argparse.ArgumentParser(prog="icefloe", description="Iceberg v2 tables with a verified commit protocol")
    ap.add_argument("--catalog", default="sqlite:///./icefloe.db", help="catalog URI: sqlite:///F, postgresql://..., or s3://bucket/prefix "
                         "(default sqlite:///./icefloe.db)")
    ap.add_argument("--warehouse", default="./warehouse", help="where new tables live: a directory or s3://bucket/prefix "
                         "(default ./warehouse)")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, text in (elsewhere or {}).items():
        sub.add_parser(name, help=text, add_help=False)
    p = sub.add_parser("create", help="create an empty table with the schema of a Parquet/CSV file")
    p.add_argument("table")
    p.add_argument("--schema-from", required=True)
    p.add_argument("--partition-by")
    p.set_defaults(fn=cmd_create)
    p = sub.add_parser("append", help="append the rows of a Parquet or CSV file")
    p.add_argument("table")
    p.add_argument("file")
    p.add_argument("--cast", action="store_true",
                   help="also apply the safe widenings (int to long, float to double, a wider decimal); "
                        "without it the file's column types must be the table's. Never: dropping a column, "
                        "moving a zoned timestamp to UTC wall time, strings into numbers, narrowing")
    p.set_defaults(fn=cmd_append)
    for name, fn, text in (("scan", cmd_scan, "print the rows of a snapshot (current, by id, time or tag)"),
                           ("history", cmd_history, "list the snapshots, or draw them with --graph")):
        p = sub.add_parser(name, help=text)
        p.add_argument("table", help="namespace.table, or a metadata JSON path/URI (read-only)")
        if name == "scan":
            g = p.add_mutually_exclusive_group()
            g.add_argument("--snapshot-id", type=int)
            g.add_argument("--as-of", type=int, help="milliseconds since the epoch")
            g.add_argument("--tag")
            p.add_argument("--filter")
            p.add_argument("--format", choices=("table", "json", "csv"), default="table")
        else:
            p.add_argument("--json", action="store_true")
            p.add_argument("--graph", metavar="OUT.png|OUT.dot",
                           help="draw the snapshot DAG: a PNG, or DOT text for a .dot name")
        p.set_defaults(fn=fn, snapshot_id=None, as_of=None, tag=None, read_only=True)
    p = sub.add_parser("rollback", help="move main back to an ancestor snapshot")
    p.add_argument("table")
    p.add_argument("snapshot_id", type=int)
    p.set_defaults(fn=cmd_rollback)
    p = sub.add_parser("compact", help="rewrite small data files into one per partition")
    p.add_argument("table")
    p.set_defaults(fn=cmd_compact)
    p = sub.add_parser("expire", help="expire old snapshots and delete the files only they reached")
    p.add_argument("table")
    p.add_argument("--older-than", type=int, help="milliseconds since the epoch")
    p.add_argument("--retain-last", type=int)
    p.set_defaults(fn=cmd_expire)
    p = sub.add_parser("remove-orphans", help="delete files no snapshot reaches (and dead writers' temporary files)")
    p.add_argument("table")
    p.add_argument("--older-than", type=int, metavar="MS",
                   help="only files last modified before this time, in ms since the epoch (default: 3 days ago; "
                        "younger files may belong to a commit in flight)")
    p.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    p.set_defaults(fn=cmd_remove_orphans)
    return ap


def main(argv=None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    try:
        return args.fn(args)
    except BrokenPipeError:            # `icefloe scan ... | head`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (UsageError, IcefloeError, CatalogError, ValueError, KeyError, OSError) as e:
        message = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"icefloe: {type(e).__name__}: {message}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as e:  # noqa: BLE001 - a bug of ours: one line, its own exit code, never a traceback
        message = str(e).splitlines()[0] if str(e) else ""
        print(f"icefloe: internal error ({type(e).__name__}: {message}); please report it with the command",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
