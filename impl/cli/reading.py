"""`icefloe scan` and `icefloe history`: reading a table (spec/PROTOCOL.md 10 "Readers").

A scan streams: planning reads the manifests, then each data file is decoded a batch at
a time and written out at once (output.py), so memory stays bounded whatever the
table's size. The current state is read with the table's current schema, time travel
with its snapshot's schema (as Iceberg-Java and pyiceberg do).
"""
from __future__ import annotations

import argparse
import json
import sys

from icefloe.impl.cli.common import (
    EXIT_OK, FILTER_GRAMMAR, OUTPUT_FORMATS, TIME_HELP, UsageError, add_command, iso_ms, positive_int, table_or_file,
    time_ms,
)

PYTHON_BATCH_ROWS = 8192


def _snapshot(metadata, args):
    """The snapshot --snapshot-id, --ref or --as-of names, else the current one."""
    if args.snapshot_id is not None:
        snap = metadata.snapshot_by_id(args.snapshot_id)
        if snap is None:
            raise UsageError(f"snapshot {args.snapshot_id} is not retained (icefloe history lists those that are)")
        return snap
    if args.ref is not None:
        if args.ref not in metadata.refs:
            known = ", ".join(sorted(metadata.refs)) or "none"
            raise UsageError(f"no tag or branch {args.ref!r} (refs: {known})")
        return metadata.ref_head(args.ref)
    if args.as_of is not None:
        snap = metadata.snapshot_as_of(args.as_of)
        if snap is None:
            raise UsageError(f"no snapshot was current at {iso_ms(args.as_of)} ({args.as_of} ms)")
        return snap
    return metadata.current_snapshot()


def cmd_scan(args) -> int:
    import pyarrow as pa

    from icefloe.impl.cli import output
    from icefloe.impl.format.expression_parser import parse as parse_filter
    from icefloe.impl.format.types import schema_to_arrow
    from icefloe.impl.table import scan as S
    store, metadata = table_or_file(args)
    row_filter = parse_filter(args.filter) if args.filter else None
    incremental = args.from_snapshot is not None or args.to_snapshot is not None
    if incremental and any(x is not None for x in (args.snapshot_id, args.ref, args.as_of)):
        raise UsageError("--from-snapshot/--to-snapshot read appended rows between two snapshots; "
                         "--snapshot-id, --as-of and --tag read one snapshot: give one or the other")
    if incremental:
        appends = incremental_appends(metadata, args.from_snapshot, args.to_snapshot)
        snapshot = appends[-1] if appends else metadata.snapshot_by_id(args.to_snapshot or args.from_snapshot)
        travel = args.to_snapshot is not None and args.to_snapshot != metadata.current_snapshot_id
    else:
        snapshot = _snapshot(metadata, args)
        travel = any(x is not None for x in (args.snapshot_id, args.ref, args.as_of))
    schema = S.snapshot_schema(metadata, snapshot) if travel else metadata.schema()
    columns = None
    if args.columns:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
        lineage = S.check_lineage_columns(metadata, columns, schema)  # Table.scan's refusal below v3
        if lineage and incremental:
            raise UsageError(f"--columns: {', '.join(lineage)} with --from-snapshot/--to-snapshot is not supported: "
                             "read the snapshot (--snapshot-id) and select the rows you need")
        missing = [c for c in columns if (schema.field_by_name(c) is None and c not in lineage) or "." in c]
        if missing:
            raise UsageError(f"--columns: no top-level column {', '.join(map(repr, missing))} "
                             f"(columns: {', '.join(f.name for f in schema.fields)}; on v3 tables also "
                             f"{', '.join(S.LINEAGE_COLUMNS)})")
    # Formats that make a Python object per value take smaller batches (1M rows as JSON:
    # 176 MB RSS at 8192 rows a batch, 207 MB at 65536; CSV is written by Arrow itself).
    batch_rows = args.batch_rows or (S.BATCH_ROWS_DEFAULT if args.format == "csv" else PYTHON_BATCH_ROWS)
    if incremental:
        batches = appended_batches(store, metadata, appends, row_filter, columns, schema, batch_rows)
    else:
        batches = S.scan_batches(store, metadata, snapshot, row_filter, columns, schema=schema, batch_rows=batch_rows)
    arrow_schema = schema_to_arrow(S.lineage_schema(schema) if S.lineage_asked(columns, schema) else schema)
    if columns is not None:
        arrow_schema = pa.schema([arrow_schema.field(c) for c in columns])
    output.write(_limited(batches, args.limit), arrow_schema, args.format)
    return EXIT_OK


# Operations an incremental read passes over: a compaction rewrites rows it already read.
SKIPPED_OPERATIONS = ("replace",)


def incremental_appends(metadata, from_snapshot_id: int | None, to_snapshot_id: int | None) -> list:
    """The append snapshots after `from_snapshot_id` (exclusive; None: from the first)
    up to `to_snapshot_id` (inclusive; None: main's current), oldest first, on one line of
    ancestry (spec/PROTOCOL.md 10.4). A snapshot in between that deleted or overwrote rows
    is refused, as Iceberg's incremental append scan refuses it: its rows are not "what was
    appended"; a compaction (replace) is passed over."""
    from icefloe.impl.table import scan as S
    to_id = metadata.current_snapshot_id if to_snapshot_id is None else to_snapshot_id
    if to_id is None:
        raise UsageError("the table has no snapshot yet: nothing was appended")
    for name, sid in (("--from-snapshot", from_snapshot_id), ("--to-snapshot", to_id)):
        if sid is not None and metadata.snapshot_by_id(sid) is None:
            raise UsageError(f"{name} {sid}: not a retained snapshot (icefloe history lists those that are)")
    try:
        line = S.appended_between(metadata, from_snapshot_id, to_id)
    except S.IncrementalGap as e:
        raise UsageError(f"--from-snapshot {from_snapshot_id} --to-snapshot {to_id}: {e} (the range must be "
                         "one line of ancestry, older snapshot first)") from None
    refused = [s for s in line if s.operation not in ("append", *SKIPPED_OPERATIONS)]
    if refused:
        s = refused[0]
        raise UsageError(f"snapshot {s.snapshot_id} in the range is not an append (operation {s.operation}): an incremental "
                         "read returns appended rows only (read the whole snapshot with scan --snapshot-id)")
    return [s for s in line if s.operation == "append"]


def appended_batches(store, metadata, appends, row_filter, columns, schema, batch_rows: int):
    """The rows the data files added by `appends` hold, filtered, as batches (files are
    read by field id into `schema`, as a scan reads them)."""
    from icefloe.impl.format import expressions as E
    from icefloe.impl.format.parquet import iter_data_file
    from icefloe.impl.format.types import schema_to_arrow
    from icefloe.impl.table.files import TreeReader
    from icefloe.impl.format import name_mapping as NM
    tree = TreeReader(store)
    mapping = NM.of(metadata.properties)
    arrow_filter = None if row_filter is None else E.to_arrow(E.bind(row_filter, schema))
    arrow_schema = schema_to_arrow(schema)
    for snap in appends:
        for entry in tree.changes(snap).added_data:
            path = entry.data_file.file_path
            for rows in iter_data_file(store.get(path), schema, path, data_file=entry.data_file, batch_rows=batch_rows,
                                       name_mapping=mapping):
                if arrow_filter is not None:
                    rows = rows.filter(arrow_filter)
                rows = rows.cast(arrow_schema)
                yield rows if columns is None else rows.select(columns)


def _limited(batches, limit: int | None):
    if limit is None:
        yield from batches
        return
    left = limit
    for rows in batches:
        if left <= 0:
            return
        yield rows.slice(0, left)
        left -= rows.num_rows


def _refs_by_snapshot(metadata) -> dict:
    out: dict = {}
    for name, ref in sorted(metadata.refs.items()):
        out.setdefault(ref.snapshot_id, []).append(name if ref.type == "branch" else f"tag:{name}")
    return out


def history_rows(metadata) -> list[dict]:
    current = metadata.current_snapshot_id
    on_main = {s.snapshot_id for s in metadata.ancestors_of(current)}
    refs = _refs_by_snapshot(metadata)
    rows = []
    for s in sorted(metadata.snapshots, key=lambda s: s.sequence_number):
        summary = s.summary
        rows.append({"snapshot_id": s.snapshot_id, "parent_snapshot_id": s.parent_snapshot_id,
                     "sequence_number": s.sequence_number, "timestamp_ms": s.timestamp_ms,
                     "timestamp": iso_ms(s.timestamp_ms), "operation": s.operation,
                     "current": s.snapshot_id == current, "on_main": s.snapshot_id in on_main,
                     "refs": refs.get(s.snapshot_id, []),
                     "added_records": summary.get("added-records"), "deleted_records": summary.get("deleted-records"),
                     "total_records": summary.get("total-records")})
    return rows


def _change(r: dict) -> str:
    parts = []
    if r["added_records"] not in (None, "0"):
        parts.append(f"+{r['added_records']}")
    if r["deleted_records"] not in (None, "0"):
        parts.append(f"-{r['deleted_records']}")
    total = f" = {r['total_records']}" if r["total_records"] is not None else ""
    return (" ".join(parts) or "0") + total


def print_history(rows: list[dict]) -> None:
    header = ("", "snapshot", "parent", "seq", "committed (UTC)", "operation", "rows", "refs")
    table = [header]
    for r in rows:
        mark = "*" if r["current"] else ("|" if r["on_main"] else " ")
        table.append((mark, str(r["snapshot_id"]), str(r["parent_snapshot_id"] or "-"), str(r["sequence_number"]),
                      r["timestamp"], str(r["operation"]), _change(r), ", ".join(r["refs"])))
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    if rows:
        print("* current snapshot (head of main)   | an ancestor of it   rows: added -deleted = total")


def cmd_history(args) -> int:
    _, metadata = table_or_file(args)
    if args.graph is not None and not args.graph.endswith((".png", ".dot")):
        raise UsageError(f"--graph {args.graph}: the name must end in .png or .dot")
    rows = history_rows(metadata)
    if args.json:
        print(json.dumps(rows))
    elif rows:
        print_history(rows)
    else:
        print("no snapshots yet (append some rows: icefloe append TABLE FILE)")
    if args.graph is not None:
        from icefloe.impl.table import lineage_graph  # networkx + matplotlib: only when drawing
        graph = lineage_graph.write_graph(metadata, args.graph, title=args.table)
        print(f"wrote {args.graph}: {graph.number_of_nodes()} snapshot(s), {graph.number_of_edges()} parent link(s)",
              file=sys.stderr if args.json else sys.stdout)
    return EXIT_OK


def register(sub) -> None:
    p = add_command(sub, "scan", "print the rows of a snapshot (current, by id, time, tag or branch)", f"""
        Print the rows of the table's current snapshot, or of an older one (time travel).
        Rows are written as they are read, one batch at a time, so a scan of any size
        runs in bounded memory and `icefloe scan ... | head` stops early and quietly.
        TABLE is namespace.table, or a metadata JSON path/URI (read-only, no catalog).

        {FILTER_GRAMMAR}""", """
        icefloe scan db.events
        icefloe scan db.events --filter "ts >= '2024-01-02' and cat in ('a', 'b')" --format csv > out.csv
        icefloe scan db.events --as-of 2024-01-02T12:00:00Z --format jsonl | head
        icefloe scan db.events --tag v1 --columns id,cat --limit 10
        icefloe scan db.events --from-snapshot 4211829340412345 --format jsonl   # rows appended since then
        icefloe scan warehouse/db/events/metadata/00003-....metadata.json""")
    p.add_argument("table", help="namespace.table, or a metadata JSON path/URI (read-only)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--snapshot-id", type=int, help="a snapshot id (icefloe history lists them)")
    g.add_argument("--as-of", type=time_ms, metavar="TIME",
                   help="the snapshot that was current at TIME: " + TIME_HELP)
    g.add_argument("--tag", "--ref", dest="ref", metavar="REF", help="the head of a tag or branch")
    p.add_argument("--from-snapshot", type=int, metavar="ID",
                   help="read only the rows appended after snapshot ID (exclusive) ...")
    p.add_argument("--to-snapshot", type=int, metavar="ID",
                   help="... up to snapshot ID (inclusive; default: main's current). A delete or overwrite "
                        "in between is refused; a compaction is passed over")
    p.add_argument("--filter", help="a row filter (grammar below)")
    p.add_argument("--columns", help="comma-separated top-level columns to print (default: all); on a v3 table "
                   "also the row lineage columns _row_id and _last_updated_sequence_number")
    p.add_argument("--limit", type=positive_int, help="print at most this many rows")
    p.add_argument("--format", choices=OUTPUT_FORMATS, default="table",
                   help="table (aligned, for people), csv, json (one array) or jsonl (a row per line); default table")
    p.add_argument("--batch-rows", type=positive_int, help=argparse.SUPPRESS)
    p.set_defaults(fn=cmd_scan, read_only=True)

    p = add_command(sub, "history", "list the snapshots with times and refs, or draw them with --graph", """
        List the table's retained snapshots, oldest first: id, parent, sequence number,
        commit time (UTC), operation, rows added/deleted/total, and the branches and tags
        pointing at each. `*` marks main's current snapshot, `|` its ancestors; a snapshot
        off main's line was left by a rollback or lives on a branch.""", """
        icefloe history db.events
        icefloe history db.events --json | jq '.[] | {snapshot_id, timestamp, refs}'
        icefloe history db.events --graph lineage.png     # the snapshot DAG (lineage.dot: DOT text)""")
    p.add_argument("table", help="namespace.table, or a metadata JSON path/URI (read-only)")
    p.add_argument("--json", action="store_true", help="one JSON array of snapshot objects")
    p.add_argument("--graph", metavar="OUT.png|OUT.dot", help="draw the snapshot DAG: a PNG, or DOT text for a .dot name")
    p.set_defaults(fn=cmd_history, read_only=True)

