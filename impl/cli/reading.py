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
    snapshot = _snapshot(metadata, args)
    travel = any(x is not None for x in (args.snapshot_id, args.ref, args.as_of))
    schema = S.snapshot_schema(metadata, snapshot) if travel else metadata.schema()
    columns = None
    if args.columns:
        columns = [c.strip() for c in args.columns.split(",") if c.strip()]
        missing = [c for c in columns if schema.field_by_name(c) is None or "." in c]
        if missing:
            raise UsageError(f"--columns: no top-level column {', '.join(map(repr, missing))} "
                             f"(columns: {', '.join(f.name for f in schema.fields)})")
    # Formats that make a Python object per value take smaller batches (1M rows as JSON:
    # 176 MB RSS at 8192 rows a batch, 207 MB at 65536; CSV is written by Arrow itself).
    batch_rows = args.batch_rows or (S.BATCH_ROWS_DEFAULT if args.format == "csv" else PYTHON_BATCH_ROWS)
    batches = S.scan_batches(store, metadata, snapshot, row_filter, columns, schema=schema, batch_rows=batch_rows)
    arrow_schema = schema_to_arrow(schema)
    if columns is not None:
        arrow_schema = pa.schema([arrow_schema.field(c) for c in columns])
    output.write(_limited(batches, args.limit), arrow_schema, args.format)
    return EXIT_OK


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
        icefloe scan warehouse/db/events/metadata/00003-....metadata.json""")
    p.add_argument("table", help="namespace.table, or a metadata JSON path/URI (read-only)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--snapshot-id", type=int, help="a snapshot id (icefloe history lists them)")
    g.add_argument("--as-of", type=time_ms, metavar="TIME",
                   help="the snapshot that was current at TIME: " + TIME_HELP)
    g.add_argument("--tag", "--ref", dest="ref", metavar="REF", help="the head of a tag or branch")
    p.add_argument("--filter", help="a row filter (grammar below)")
    p.add_argument("--columns", help="comma-separated top-level columns to print (default: all)")
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

