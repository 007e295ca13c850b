"""`icefloe partition add|remove|rename` and `icefloe sort-order set|unset`: partition spec
and sort order evolution (Iceberg spec "Partition Evolution", "Sorting";
impl/table/layout_evolution.py), each one metadata-only commit."""
from __future__ import annotations

from icefloe.impl.cli.common import PARTITION_GRAMMAR, add_command, open_table, report


def _commit(args, operation, what: str) -> int:
    table = open_table(args)
    commit = table.begin(operation)
    commit.run()
    outcome = table.adopt(commit)
    return report(outcome, what(table.metadata))


def _spec_line(m) -> str:
    spec = m.spec()
    schema = m.schema()
    fields = ", ".join(f"{f.name} = {f.transform}({schema.column_name(f.source_id)})" for f in spec.fields)
    return f"default partition spec {spec.spec_id}: {fields or 'unpartitioned'}"


def cmd_partition(args) -> int:
    from icefloe.impl.table import layout_evolution as L
    if args.action == "add":
        change = L.SpecChange(lambda m: L.add_partition_field(m, args.field, args.name), f"added {args.field}")
    elif args.action == "remove":
        change = L.SpecChange(lambda m: L.remove_partition_field(m, args.field), f"removed {args.field}")
    else:
        change = L.SpecChange(lambda m: L.rename_partition_field(m, args.field, args.new_name),
                              f"renamed {args.field} to {args.new_name}")
    return _commit(args, change, lambda m: f"{change.description}; {_spec_line(m)}")


def cmd_sort_order(args) -> int:
    from icefloe.impl.table import layout_evolution as L
    change = L.SortOrderChange(args.order if args.action == "set" else None)
    return _commit(args, change, lambda m: f"default sort order {m.default_sort_order_id}: {change.description}")


def register(sub) -> None:
    p = add_command(sub, "partition", "evolve the partition spec: add, remove or rename a partition field", f"""
        Change how new data is partitioned, in one metadata-only commit: a new partition
        spec becomes the default for writes; files already written keep the spec they were
        written with and every scan prunes each by its own spec (nothing is rewritten).
          add TABLE FIELD [--name N]   one field in the grammar below; its field id is new
          remove TABLE NAME            drop the field (format v1: it becomes void)
          rename TABLE NAME NEW        the field's name only
        A spec identical to an earlier one takes that spec's id back. A concurrent spec
        change makes the commit fail (Conflict, exit 1).

        {PARTITION_GRAMMAR}""", """
        icefloe partition add db.events "day(ts)"
        icefloe partition add db.events "bucket(16, id)" --name id_shard
        icefloe partition rename db.events ts_day day
        icefloe partition remove db.events id_shard
        icefloe describe db.events            # the default spec""")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    a = actions.add_parser("add", help="add a partition field")
    a.add_argument("table", help="namespace.table")
    a.add_argument("field", help="e.g. cat, day(ts), bucket(16, id)")
    a.add_argument("--name", help="the field's name (default: column, or column_day, column_bucket, ...)")
    a = actions.add_parser("remove", help="remove a partition field")
    a.add_argument("table", help="namespace.table")
    a.add_argument("field", help="the partition field's name (icefloe describe lists them)")
    a = actions.add_parser("rename", help="rename a partition field")
    a.add_argument("table", help="namespace.table")
    a.add_argument("field", help="its name")
    a.add_argument("new_name")
    p.set_defaults(fn=cmd_partition)

    p = add_command(sub, "sort-order", "set or unset the table's sort order (for writers that sort)", """
        Set the table's default sort order, one metadata-only commit: a comma-separated
        list of a column or a transform of one (the partition grammar), each asc (default)
        or desc, then nulls-first (default for asc) or nulls-last (default for desc).
        Engines that sort on write (Spark) follow it; icefloe's own writes do not sort and
        claim no sort order on their files. `unset` makes the table unsorted (order 0).""", """
        icefloe sort-order set db.events "ts desc, id"
        icefloe sort-order set db.events "day(ts), cat asc nulls-last"
        icefloe sort-order unset db.events""")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    a = actions.add_parser("set", help="set the sort order")
    a.add_argument("table", help="namespace.table")
    a.add_argument("order", help="e.g. \"ts desc, id\"")
    a = actions.add_parser("unset", help="make the table unsorted")
    a.add_argument("table", help="namespace.table")
    p.set_defaults(fn=cmd_sort_order)
