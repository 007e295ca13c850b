"""`icefloe inspect TABLE KIND`: the table's metadata as rows (Iceberg's metadata tables,
as Spark SQL's `db.t.snapshots` or pyiceberg's `table.inspect.snapshots()` show them):

    snapshots   one row per retained snapshot (the metadata's `snapshots`)
    history     the snapshot log: when each snapshot became main's current one
    refs        branches and tags, with their retention
    manifests   the manifest list of a snapshot (spec "Manifest Lists")
    entries     every manifest entry of a snapshot, ADDED, EXISTING and DELETED (spec "Manifests")
    files       the live data and delete files of a snapshot (spec "Manifests": data_file)
    partitions  per partition of a snapshot: rows, files, delete files, last update

Written in the formats of `scan` (table, csv, json, jsonl) by the same writers. A
partition is shown as its path (`cat=a/ts_day=2024-01-02`), a snapshot summary and
column metrics as JSON text. Only reads; TABLE may be a metadata JSON file.
"""
from __future__ import annotations

from icefloe.impl.cli.common import (
    EXIT_OK, OUTPUT_FORMATS, UsageError, add_command, iso_ms, table_or_file,
)

KINDS = ("snapshots", "history", "refs", "manifests", "entries", "files", "partitions")
CONTENT = {0: "data", 1: "position_deletes", 2: "equality_deletes"}
STATUS = {0: "existing", 1: "added", 2: "deleted"}


def _snapshot(metadata, args):
    if args.snapshot_id is not None:
        snap = metadata.snapshot_by_id(args.snapshot_id)
        if snap is None:
            raise UsageError(f"snapshot {args.snapshot_id} is not retained (icefloe inspect TABLE snapshots lists them)")
        return snap
    if args.ref is not None:
        if args.ref not in metadata.refs:
            raise UsageError(f"no tag or branch {args.ref!r} (refs: {', '.join(sorted(metadata.refs)) or 'none'})")
        return metadata.ref_head(args.ref)
    return metadata.current_snapshot()


def _json(value) -> str:
    import json
    return json.dumps(value, sort_keys=True, default=str)


def _metrics(d: dict | None) -> str | None:
    return None if d is None else _json({str(k): v for k, v in sorted(d.items())})


def snapshots_rows(metadata, tree, args) -> list[dict]:
    return [{"committed_at": iso_ms(s.timestamp_ms), "snapshot_id": s.snapshot_id,
             "parent_id": s.parent_snapshot_id, "sequence_number": s.sequence_number, "operation": s.operation,
             "manifest_list": s.manifest_list, "schema_id": s.schema_id, "summary": _json(dict(s.summary))}
            for s in sorted(metadata.snapshots, key=lambda s: s.sequence_number)]


def history_rows(metadata, tree, args) -> list[dict]:
    on_main = {s.snapshot_id for s in metadata.ancestors_of(metadata.current_snapshot_id)}
    return [{"made_current_at": iso_ms(e.timestamp_ms), "snapshot_id": e.snapshot_id,
             "parent_id": getattr(metadata.snapshot_by_id(e.snapshot_id), "parent_snapshot_id", None),
             "is_current_ancestor": e.snapshot_id in on_main} for e in metadata.snapshot_log]


def refs_rows(metadata, tree, args) -> list[dict]:
    return [{"name": name, "type": r.type, "snapshot_id": r.snapshot_id,
             "max_reference_age_in_ms": r.max_ref_age_ms, "min_snapshots_to_keep": r.min_snapshots_to_keep,
             "max_snapshot_age_in_ms": r.max_snapshot_age_ms} for name, r in sorted(metadata.refs.items())]


def manifests_rows(metadata, tree, args) -> list[dict]:
    snap = _snapshot(metadata, args)
    return [{"content": ("data", "deletes")[int(m.content)], "path": m.manifest_path, "length": m.manifest_length,
             "partition_spec_id": m.partition_spec_id, "added_snapshot_id": m.added_snapshot_id,
             "sequence_number": m.sequence_number, "min_sequence_number": m.min_sequence_number,
             "added_files_count": m.added_files_count, "existing_files_count": m.existing_files_count,
             "deleted_files_count": m.deleted_files_count, "added_rows_count": m.added_rows_count,
             "existing_rows_count": m.existing_rows_count, "deleted_rows_count": m.deleted_rows_count}
            for m in tree.manifests(snap)]


def _file_row(metadata, spec_id: int, f) -> dict:
    from icefloe.impl.table.env import partition_path_of
    spec = metadata.spec_by_id(spec_id)
    return {"content": CONTENT[int(f.content)], "file_path": f.file_path, "file_format": f.file_format,
            "spec_id": spec_id, "partition": partition_path_of(spec, metadata.schema(), f.partition) if spec else None,
            "record_count": f.record_count, "file_size_in_bytes": f.file_size_in_bytes,
            "column_sizes": _metrics(f.column_sizes), "value_counts": _metrics(f.value_counts),
            "null_value_counts": _metrics(f.null_value_counts), "nan_value_counts": _metrics(f.nan_value_counts),
            "lower_bounds": _metrics(f.lower_bounds and {k: v.hex() for k, v in f.lower_bounds.items()}),
            "upper_bounds": _metrics(f.upper_bounds and {k: v.hex() for k, v in f.upper_bounds.items()}),
            "sort_order_id": f.sort_order_id}


def entries_rows(metadata, tree, args) -> list[dict]:
    snap = _snapshot(metadata, args)
    rows = []
    for m in tree.manifests(snap):
        for e in tree.entries(m):
            rows.append({"status": STATUS[int(e.status)], "snapshot_id": e.snapshot_id,
                         "sequence_number": e.sequence_number, "file_sequence_number": e.file_sequence_number,
                         "manifest_path": m.manifest_path, **_file_row(metadata, m.partition_spec_id, e.data_file)})
    return rows


def files_rows(metadata, tree, args) -> list[dict]:
    from icefloe.impl.table.files import LIVE
    snap = _snapshot(metadata, args)
    return [_file_row(metadata, m.partition_spec_id, e.data_file)
            for m in tree.manifests(snap) for e in tree.entries(m) if e.status in LIVE]


def partitions_rows(metadata, tree, args) -> list[dict]:
    from icefloe.impl.table.files import LIVE
    snap = _snapshot(metadata, args)
    out: dict = {}
    for m in tree.manifests(snap):
        for e in tree.entries(m):
            if e.status not in LIVE:
                continue
            f = e.data_file
            row = _file_row(metadata, m.partition_spec_id, f)
            p = out.setdefault((m.partition_spec_id, row["partition"]), {
                "partition": row["partition"], "spec_id": m.partition_spec_id, "record_count": 0, "file_count": 0,
                "position_delete_record_count": 0, "position_delete_file_count": 0,
                "equality_delete_record_count": 0, "equality_delete_file_count": 0,
                "last_updated_at": None, "last_updated_snapshot_id": None, "_seq": -1})
            kind = CONTENT[int(f.content)]
            if kind == "data":
                p["record_count"] += f.record_count
                p["file_count"] += 1
            else:
                p[f"{kind[:-1]}_record_count"] += f.record_count
                p[f"{kind[:-1]}_file_count"] += 1
            added = metadata.snapshot_by_id(e.snapshot_id) if e.snapshot_id is not None else None
            if added is not None and added.sequence_number > p["_seq"]:
                p["_seq"], p["last_updated_snapshot_id"] = added.sequence_number, added.snapshot_id
                p["last_updated_at"] = iso_ms(added.timestamp_ms)
    rows = sorted(out.values(), key=lambda p: (p["spec_id"], p["partition"] or ""))
    for p in rows:
        del p["_seq"]
    return rows


_FILE_COLUMNS = ("content", "file_path", "file_format", "spec_id", "partition", "record_count", "file_size_in_bytes",
                 "column_sizes", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds",
                 "upper_bounds", "sort_order_id")
COLUMNS = {
    "snapshots": ("committed_at", "snapshot_id", "parent_id", "sequence_number", "operation", "manifest_list",
                  "schema_id", "summary"),
    "history": ("made_current_at", "snapshot_id", "parent_id", "is_current_ancestor"),
    "refs": ("name", "type", "snapshot_id", "max_reference_age_in_ms", "min_snapshots_to_keep",
             "max_snapshot_age_in_ms"),
    "manifests": ("content", "path", "length", "partition_spec_id", "added_snapshot_id", "sequence_number",
                  "min_sequence_number", "added_files_count", "existing_files_count", "deleted_files_count",
                  "added_rows_count", "existing_rows_count", "deleted_rows_count"),
    "entries": ("status", "snapshot_id", "sequence_number", "file_sequence_number", "manifest_path", *_FILE_COLUMNS),
    "files": _FILE_COLUMNS,
    "partitions": ("partition", "spec_id", "record_count", "file_count", "position_delete_record_count",
                   "position_delete_file_count", "equality_delete_record_count", "equality_delete_file_count",
                   "last_updated_at", "last_updated_snapshot_id"),
}

ROWS = {"snapshots": snapshots_rows, "history": history_rows, "refs": refs_rows, "manifests": manifests_rows,
        "entries": entries_rows, "files": files_rows, "partitions": partitions_rows}


def metadata_table(store, metadata, kind: str, args):
    """(Arrow table, Arrow schema) of metadata table `kind`."""
    import pyarrow as pa

    from icefloe.impl.table.files import TreeReader
    rows = ROWS[kind](metadata, TreeReader(store), args)
    if not rows:            # no rows: still the columns, so csv has its header
        schema = pa.schema([(name, pa.null()) for name in COLUMNS[kind]])
        return None, schema
    table = pa.Table.from_pylist(rows)
    return table, table.schema


def cmd_inspect(args) -> int:
    from icefloe.impl.cli import output
    store, metadata = table_or_file(args)
    if args.kind in ("snapshots", "history", "refs") and (args.snapshot_id is not None or args.ref is not None):
        raise UsageError(f"inspect {args.kind} lists the whole table; --snapshot-id and --ref choose the snapshot "
                         "of manifests, entries, files and partitions")
    table, schema = metadata_table(store, metadata, args.kind, args)
    output.write([] if table is None else [table], schema, args.format)
    return EXIT_OK


def register(sub) -> None:
    p = add_command(sub, "inspect", "the table's metadata as rows: snapshots, history, refs, manifests, entries, "
                    "files, partitions", """
        Show one of Iceberg's metadata tables (Spark SQL's db.t.snapshots, pyiceberg's
        table.inspect): KIND is
          snapshots   every retained snapshot: time, id, parent, operation, summary (JSON)
          history     the snapshot log: when each snapshot became main's current one
          refs        branches and tags, with their retention settings
          manifests   the manifest list of a snapshot: content, counts, sequence numbers
          entries     every manifest entry (added, existing, deleted) with its data file
          files       the live data and delete files, with their column metrics (by field id)
          partitions  per partition: rows, files, delete files, the last snapshot that changed it
        manifests, entries, files and partitions read main's current snapshot, or the one
        --snapshot-id or --ref names. Output formats are scan's.""", """
        icefloe inspect db.events snapshots
        icefloe inspect db.events files --format json | jq '.[].file_path'
        icefloe inspect db.events partitions --ref audit
        icefloe inspect db.events entries --snapshot-id 4211829340412345 --format csv > entries.csv""")
    p.add_argument("table", help="namespace.table, or a metadata JSON path/URI (read-only)")
    p.add_argument("kind", choices=KINDS, help="which metadata table")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--snapshot-id", type=int, help="the snapshot to read (default: main's current one)")
    g.add_argument("--ref", metavar="REF", help="the head of this branch or tag")
    p.add_argument("--format", choices=OUTPUT_FORMATS, default="table", help="as scan's (default table)")
    p.set_defaults(fn=cmd_inspect, read_only=True)
