"""Table and namespace commands: create, list, describe, append, delete, overwrite, drop,
namespace create|list|drop. Every write goes through the table's commit protocol
(impl/table/commit.py) and prints what it committed."""
from __future__ import annotations

import json
import sys

from icefloe.impl.cli.common import (
    EXIT_OK, FILTER_GRAMMAR, MAIN_BRANCH, PARTITION_GRAMMAR, UsageError, add_command, catalog, check_name_levels,
    ensure_namespace, identifier,
    is_metadata_path, iso_ms, open_table, read_only, report, table_location,
)


def cmd_create(args) -> int:
    from icefloe.impl.cli.files import read_rows
    from icefloe.impl.format.transforms import parse_partition_spec
    from icefloe.impl.format.types import schema_from_arrow
    from icefloe.impl.io.router import StoreRouter
    from icefloe.impl.table.table import create_table
    ident = identifier(args.table)
    rows = read_rows(args.schema_from)
    format_version = getattr(args, "format_version", None) or 2
    if args.timestamp_unit == "ns" and format_version < 3:
        raise UsageError(f"--timestamp-unit ns: nanosecond timestamps need format v3 (this table would be "
                         f"v{format_version}); without it, timestamps are stored in microseconds")
    # A file's timestamp[ns] (pyarrow's CSV reader infers it for any fraction of a second;
    # pandas writes it) is stored as microseconds unless ns is asked for (Iceberg v3 only).
    schema = schema_from_arrow(rows.schema, downcast_ns=args.timestamp_unit == "us")
    spec = parse_partition_spec(args.partition_by, schema) if args.partition_by else None
    location = args.location or table_location(args.warehouse, ident)
    properties = dict(_property(p) for p in args.property or ())
    cat = catalog(args)
    ensure_namespace(cat, ident.namespace)
    create_table(cat, ident, schema, spec, location=location, properties=properties, io=StoreRouter(),
                 format_version=format_version)
    print(f"created {ident} (format v{format_version}) at {location} (no snapshot yet: "
          f"icefloe append {ident} FILE adds rows)")
    return EXIT_OK


def _property(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise UsageError(f"--property {text!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def cmd_append(args) -> int:
    from icefloe.impl.cli.files import rows_for
    from icefloe.impl.table.append_schema import SchemaMismatch
    table = open_table(args)
    _check_branch(table, args.branch)
    rows = rows_for(table, args.file)
    try:                      # the table conforms the rows to its schema (once: issue 28 item 6)
        outcome = table.append(rows, branch=args.branch, widen=args.cast)
    except SchemaMismatch as e:
        raise UsageError(f"{args.file}: {e}") from None
    return report(outcome, _on(args.branch))


def _on(branch: str) -> str:
    return "" if branch == MAIN_BRANCH else f"on branch {branch}"


def _check_branch(table, branch: str) -> None:
    ref = table.metadata.refs.get(branch)
    if ref is not None and ref.type != "branch":
        raise UsageError(f"{branch!r} is a tag; commits go to branches (icefloe branch create NAME)")
    if ref is None and branch != MAIN_BRANCH:
        raise UsageError(f"no branch {branch!r} (create it first: icefloe branch create {table.identifier} {branch})")


def cmd_delete(args) -> int:
    from icefloe.impl.format.expression_parser import parse as parse_filter
    table = open_table(args)
    _check_branch(table, args.branch)
    row_filter = parse_filter(args.filter)
    return report(table.delete(row_filter, branch=args.branch, mode=args.mode), _on(args.branch))


def cmd_upgrade(args) -> int:
    table = open_table(args)
    before = table.metadata.format_version
    outcome = table.upgrade_format_version(args.format_version)
    return report(outcome, f"format v{before} -> v{args.format_version}")


def cmd_overwrite(args) -> int:
    from icefloe.impl.cli.files import rows_for
    from icefloe.impl.format.expression_parser import parse as parse_filter
    from icefloe.impl.cli.overwrite_check import check_rows_match
    from icefloe.impl.table.append_schema import SchemaMismatch
    table = open_table(args)
    _check_branch(table, args.branch)
    row_filter = parse_filter(args.filter) if args.filter else "true"
    rows = rows_for(table, args.file)
    try:
        if args.filter and not args.allow_rows_outside_filter:
            check_rows_match(rows, row_filter, table.metadata.schema(), args.file, args.filter)
        outcome = table.overwrite(rows, row_filter, branch=args.branch)
    except SchemaMismatch as e:
        raise UsageError(f"{args.file}: {e}") from None
    return report(outcome, _on(args.branch))


def cmd_list(args) -> int:
    cat = catalog(args)
    if args.namespace:
        namespaces = [tuple(args.namespace.split("."))]
        check_name_levels(args.namespace, namespaces[0], "namespace")
    else:
        namespaces = cat.list_namespaces()
    shown = 0
    for ns in namespaces:
        tables = cat.list_tables(ns)
        for ident in tables:
            print(ident)
        shown += len(tables)
        if not tables and not args.namespace:
            print(f"{'.'.join(ns)}.  (empty namespace)")
    if args.namespace and not shown:
        print(f"no tables in namespace {args.namespace}")
    elif not namespaces:
        print("no tables yet (icefloe create NAMESPACE.TABLE --schema-from FILE)")
    return EXIT_OK


def describe(metadata, metadata_location: str | None) -> dict:
    schema, spec = metadata.schema(), metadata.spec()
    current = metadata.current_snapshot()
    return {
        "location": metadata.location, "metadata_location": metadata_location, "table_uuid": metadata.table_uuid,
        "format_version": metadata.format_version, "last_updated": iso_ms(metadata.last_updated_ms),
        "schema": {"schema_id": schema.schema_id, "schemas": len(metadata.schemas),
                   "last_column_id": metadata.last_column_id,
                   "identifier_field_ids": list(schema.identifier_field_ids),
                   "fields": [{"id": f.field_id, "name": name, "type": str(f.type), "required": f.required,
                               **({"doc": f.doc} if f.doc else {})}
                              for f, name in schema._walk()]},
        "partition_spec": {"spec_id": spec.spec_id, "fields": [
            {"name": f.name, "transform": str(f.transform), "source": schema.column_name(f.source_id),
             "source_id": f.source_id, "field_id": f.field_id} for f in spec.fields]},
        "sort_order": _sort_order(metadata.sort_order(), schema),
        "properties": dict(metadata.properties),
        "refs": {name: {"type": r.type, "snapshot_id": r.snapshot_id,
                        **{k: v for k, v in (("min_snapshots_to_keep", r.min_snapshots_to_keep),
                                             ("max_snapshot_age_ms", r.max_snapshot_age_ms),
                                             ("max_ref_age_ms", r.max_ref_age_ms)) if v is not None}}
                 for name, r in sorted(metadata.refs.items())},
        "current_snapshot": None if current is None else {
            "snapshot_id": current.snapshot_id, "parent_snapshot_id": current.parent_snapshot_id,
            "sequence_number": current.sequence_number, "timestamp": iso_ms(current.timestamp_ms),
            "operation": current.operation, "summary": dict(current.summary)},
        "snapshots": len(metadata.snapshots),
    }


def _sort_order(order, schema) -> str:
    if not order.fields:
        return "unsorted"
    return ", ".join(f"{f.transform}({schema.column_name(f.source_id)}) {f.direction} {f.null_order}"
                     for f in order.fields)


def print_description(name: str, d: dict) -> None:
    print(f"table      {name}")
    print(f"location   {d['location']}")
    if d["metadata_location"]:
        print(f"metadata   {d['metadata_location']}")
    print(f"format     v{d['format_version']}, uuid {d['table_uuid']}, last updated {d['last_updated']}")
    s = d["schema"]
    print(f"\nschema {s['schema_id']} ({s['schemas']} schema(s) in all, last column id {s['last_column_id']})")
    width = max((len(f["name"]) for f in s["fields"]), default=4)
    for f in s["fields"]:
        flags = ["required" if f["required"] else "optional"]
        if f["id"] in s["identifier_field_ids"]:
            flags.append("identifier")
        doc = f"  -- {f['doc']}" if f.get("doc") else ""
        print(f"  {f['id']:>4}  {f['name']:<{width}}  {f['type']:<16} {' '.join(flags)}{doc}")
    spec = d["partition_spec"]
    fields = ", ".join(f"{f['name']} = {f['transform']}({f['source']})" for f in spec["fields"])
    print(f"\npartition spec {spec['spec_id']}: {fields or 'unpartitioned'}")
    print(f"sort order: {d['sort_order']}")
    print("\nproperties" + ("" if d["properties"] else ": none"))
    for k, v in sorted(d["properties"].items()):
        print(f"  {k} = {v}")
    print("\nrefs" + ("" if d["refs"] else ": none (no snapshot yet)"))
    for name, r in d["refs"].items():
        extra = "".join(f", {k.replace('_', '-')} {v}" for k, v in r.items() if k not in ("type", "snapshot_id"))
        print(f"  {name:<16} {r['type']:<6} -> {r['snapshot_id']}{extra}")
    c = d["current_snapshot"]
    if c is None:
        print("\ncurrent snapshot: none")
        return
    print(f"\ncurrent snapshot {c['snapshot_id']} ({c['operation']}, {c['timestamp']}, sequence number "
          f"{c['sequence_number']}, parent {c['parent_snapshot_id']}; {d['snapshots']} snapshot(s) retained)")
    for k, v in sorted(c["summary"].items()):
        print(f"  {k} = {v}")


def cmd_describe(args) -> int:
    if is_metadata_path(args.table):
        _, metadata = read_only(args.table)
        location = None
    else:
        table = open_table(args)
        metadata, location = table.metadata, table.metadata_location
    d = describe(metadata, location)
    if args.json:
        print(json.dumps(d, indent=2))
    else:
        print_description(args.table, d)
    return EXIT_OK


def cmd_drop(args) -> int:
    from icefloe.impl.io.router import StoreRouter
    from icefloe.impl.table.drop import drop_table, remove_empty_directories
    ident = identifier(args.table)
    io = StoreRouter()
    cat = catalog(args)
    root = None
    if args.purge:
        from icefloe.impl.table.confinement import table_root_of
        root = table_root_of(cat.load(ident))
    cleanup = drop_table(cat, ident, io, purge=args.purge)
    if not args.purge:
        print(f"dropped {ident} from the catalog; its files are kept (--purge deletes them)")
        return EXIT_OK
    dirs = remove_empty_directories(root) if root else 0
    print(f"dropped {ident} and purged its files: {cleanup.summary()}"
          + (f", {dirs} empty director{'y' if dirs == 1 else 'ies'} removed" if dirs else ""))
    if not cleanup.complete:
        print(f"icefloe: warning: dropped; purge incomplete: {cleanup.summary()}", file=sys.stderr)
    return EXIT_OK


def cmd_namespace(args) -> int:
    args.read_only = args.action == "list"  # a listing creates no database (issue 14)
    cat = catalog(args)
    if args.action == "list":
        for ns in cat.list_namespaces():
            print(".".join(ns))
        return EXIT_OK
    if not args.namespace:
        raise UsageError(f"namespace {args.action} needs a NAMESPACE")
    ns = tuple(args.namespace.split("."))
    check_name_levels(args.namespace, ns, "namespace")
    if any(not level.strip() for level in ns):
        raise UsageError(f"{args.namespace!r} is not a namespace (levels separated by '.', none empty)")
    if args.action == "create":
        cat.create_namespace(ns)
        print(f"created namespace {args.namespace}")
    else:
        cat.drop_namespace(ns)
        print(f"dropped namespace {args.namespace}")
    return EXIT_OK


def register(sub) -> None:
    p = add_command(sub, "create", "create an empty table with the schema of a Parquet/CSV file", f"""
        Create a table (format v2, or --format-version) whose schema is the column names and types of a
        Parquet or CSV file; no rows are added (icefloe append does that). The table lives
        under --warehouse as NAMESPACE/TABLE unless --location says otherwise. A CSV's
        types are those pyarrow's reader infers (a timestamp with a fraction of a second
        is read as nanoseconds, stored as microseconds unless --timestamp-unit ns).

        {PARTITION_GRAMMAR}""", """
        icefloe create db.events --schema-from events.parquet
        icefloe create db.events --schema-from events.parquet --partition-by "day(ts), bucket(16, id)"
        icefloe --warehouse s3://bucket/wh create db.events --schema-from events.csv
        icefloe create db.events --schema-from events.parquet --property commit.retry.num-retries=8
        icefloe create db.events --schema-from events.parquet --format-version 3""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("--schema-from", required=True, metavar="FILE", help="a Parquet or CSV file whose columns are the schema")
    p.add_argument("--partition-by", metavar="FIELDS", help="partition fields (grammar below)")
    p.add_argument("--location", help="where the table's files live (default: WAREHOUSE/NAMESPACE/TABLE)")
    p.add_argument("--property", action="append", metavar="KEY=VALUE", help="a table property (repeatable)")
    p.add_argument("--timestamp-unit", choices=("us", "ns"), default="us",
                   help="how a file's nanosecond timestamps are stored: us (default: microseconds, every "
                        "format version) or ns (timestamp_ns, format v3 only)")
    p.add_argument("--format-version", type=int, choices=(1, 2, 3), default=2,
                   help="the table's Iceberg format version (default 2; 3: deletion vectors, row lineage, "
                        "default values, nanosecond timestamps)")
    p.set_defaults(fn=cmd_create)

    p = add_command(sub, "upgrade", "upgrade a table's format version by one (v1 -> v2, v2 -> v3)", """
        Upgrade the table's Iceberg format version, one version at a time and never down
        (a skip or a downgrade is refused, exit 2). Only the metadata changes: files
        already written stay valid. Upgrading to v3 starts row lineage (next-row-id 0);
        rows written before get their row ids in the next commit.""", """
        icefloe upgrade db.events --format-version 2
        icefloe upgrade db.events --format-version 3""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("--format-version", type=int, required=True, help="the version to upgrade to (the next one)")
    p.set_defaults(fn=cmd_upgrade)

    p = add_command(sub, "list", "list the tables (of one namespace, or of all)", """
        List the catalog's tables as namespace.table, one a line; without NAMESPACE,
        every namespace's (an empty namespace shows as `ns.  (empty namespace)`).""", """
        icefloe list
        icefloe list db""")
    p.add_argument("namespace", nargs="?", help="only this namespace (levels separated by '.')")
    p.set_defaults(fn=cmd_list, read_only=True)

    p = add_command(sub, "describe", "schema, partition spec, properties, refs and current snapshot of a table", """
        Show what a table is: its location and metadata file, the current schema (field
        ids, types, required/optional), the partition spec, sort order, properties, every
        branch and tag, and the current snapshot with its summary.""", """
        icefloe describe db.events
        icefloe describe db.events --json | jq .schema""")
    p.add_argument("table", help="namespace.table, or a metadata JSON path/URI (read-only)")
    p.add_argument("--json", action="store_true", help="as one JSON object")
    p.set_defaults(fn=cmd_describe, read_only=True)

    p = add_command(sub, "append", "append the rows of a Parquet or CSV file", """
        Add the rows of a file as a new snapshot (operation append). The file's columns
        must fit the table's schema as they are; --cast allows the spec's safe widenings.""", """
        icefloe append db.events day1.parquet
        icefloe append db.events more.csv --cast
        icefloe append db.events audit.parquet --branch audit     # main is untouched""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("file", help="a Parquet or CSV file")
    p.add_argument("--branch", default=MAIN_BRANCH, help="the branch to commit to (default main)")
    p.add_argument("--cast", action="store_true",
                   help="also apply the safe widenings (int to long, float to double, a wider decimal); "
                        "without it the file's column types must be the table's. Never: dropping a column, "
                        "moving a zoned timestamp to UTC wall time, strings into numbers, narrowing")
    p.set_defaults(fn=cmd_append)

    p = add_command(sub, "delete", "delete the rows matching a filter", f"""
        Delete every row matching --filter (operation delete or overwrite): data files
        whose rows all match are dropped, files that partly match are rewritten without
        those rows (copy-on-write). Concurrent commits are validated (serializable).

        {FILTER_GRAMMAR}""", """
        icefloe delete db.events --filter "id = 42"
        icefloe delete db.events --filter "ts < '2024-01-01' or cat is null"
        icefloe delete db.events --filter "cat = 'test'" --branch audit
        icefloe delete db.events --filter "id = 42" --mode merge-on-read    # format v3: a deletion vector""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("--filter", required=True, help="which rows to delete (grammar below)")
    p.add_argument("--branch", default=MAIN_BRANCH, help="the branch to commit to (default main)")
    p.add_argument("--mode", choices=("copy-on-write", "merge-on-read"), default=None,
                   help="copy-on-write rewrites the files (the default, or the table's write.delete.mode); "
                        "merge-on-read writes deletion vectors (format v3 tables only)")
    p.set_defaults(fn=cmd_delete)

    p = add_command(sub, "overwrite", "replace the rows matching a filter (default: all) with a file's rows", f"""
        Replace the rows matching --filter with the rows of FILE, in one snapshot
        (operation overwrite): readers see the old rows or the new ones, never both or
        neither. Without --filter, the whole table is replaced. Every row of FILE must
        match --filter (else exit 2, nothing written): a row outside it would stay beside
        the rows the next run of the same overwrite replaces. --allow-rows-outside-filter
        writes such rows anyway.

        {FILTER_GRAMMAR}""", """
        icefloe overwrite db.events fixed-day.parquet --filter "ts >= '2024-01-02' and ts < '2024-01-03'"
        icefloe overwrite db.events everything.parquet
        icefloe overwrite db.events late.parquet --filter "day = '2024-01-02'" --allow-rows-outside-filter""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("file", help="a Parquet or CSV file with the new rows")
    p.add_argument("--filter", help="which rows to replace (default: every row)")
    p.add_argument("--allow-rows-outside-filter", action="store_true",
                   help="also write rows of FILE that --filter does not match (refused by default: a rerun "
                        "of the same overwrite would not replace them)")
    p.add_argument("--branch", default=MAIN_BRANCH, help="the branch to commit to (default main)")
    p.set_defaults(fn=cmd_overwrite)

    p = add_command(sub, "drop", "remove a table from the catalog (--purge: and delete its files)", """
        Remove the table from the catalog. Its files stay unless --purge: then every file
        its metadata reaches (data, delete files, manifests, manifest lists, metadata
        files) is deleted, only inside the table's own location (anything elsewhere is
        refused and named). A table whose files cannot be read is not purged (nor
        dropped); drop it without --purge.""", """
        icefloe drop db.scratch
        icefloe drop db.scratch --purge""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("--purge", action="store_true", help="also delete the table's files (inside its location only)")
    p.set_defaults(fn=cmd_drop)

    p = add_command(sub, "namespace", "create, list or drop namespaces", """
        Namespaces group tables (db in db.events). `create` makes an empty one (a table's
        namespace is also created with it), `drop` removes one that holds no tables.""", """
        icefloe namespace create db
        icefloe namespace list
        icefloe namespace drop db""")
    p.add_argument("action", choices=("create", "list", "drop"))
    p.add_argument("namespace", nargs="?", help="levels separated by '.'")
    p.set_defaults(fn=cmd_namespace)
