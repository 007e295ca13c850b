"""`icefloe schema add-column|rename-column|drop-column|widen|make-optional|make-required` (Iceberg spec "Schema
Evolution"; impl/table/schema_evolution.py): each one metadata-only commit, read back by
field id by every reader (pyiceberg, Iceberg-Java, icefloe)."""
from __future__ import annotations

from icefloe.impl.cli.common import add_command, open_table, report


def _commit(args, change) -> int:
    table = open_table(args)
    commit = table.begin(change)
    commit.run()
    outcome = table.adopt(commit)
    schema = table.metadata.schema()
    return report(outcome, f"{change.description}; current schema {schema.schema_id}")


def cmd_schema(args) -> int:
    from icefloe.impl.table import schema_evolution as SE
    if args.action == "add-column":
        defaults = {k: _default(v) for k, v in (("initial_default", args.initial_default),
                                                  ("write_default", args.write_default)) if v is not None}
        return _commit(args, SE.add_column_change(args.column, args.type, args.doc, **defaults))
    if args.action == "rename-column":
        return _commit(args, SE.rename_column_change(args.column, args.new_name))
    if args.action == "drop-column":
        return _commit(args, SE.drop_column_change(args.column))
    if args.action in ("make-optional", "make-required"):
        from icefloe.impl.table.layout_evolution import NullabilityChange
        return _commit(args, NullabilityChange(args.column, args.action == "make-required"))
    return _commit(args, SE.widen_column_change(args.column, args.type))


def register(sub) -> None:
    p = add_command(sub, "schema", "evolve the schema: add-column, rename-column, drop-column, widen", """
        Change the table's schema in one metadata-only commit (no data is rewritten):
          add-column COLUMN TYPE    a new optional column; existing rows read it as null
                                    (format v3: as --initial-default). Its field id is new
                                    (last-column-id + 1), never a dropped column's.
                                    parent.child adds to a struct.
          rename-column COLUMN NEW  the name only: data files are read by field id.
          drop-column COLUMN        refused for an identifier field, a column a partition
                                    field (of any spec) or the sort order is derived from,
                                    and the only column. Old files keep the values, unread.
          widen COLUMN TYPE         int -> long, float -> double, decimal(P,S) -> decimal(P',S)
                                    with P' > P; nothing else (old files read as the wider type).
          make-optional COLUMN      allow nulls from now on (always safe).
          make-required COLUMN      refuse nulls from now on: refused while a live file of
                                    any branch or tag may hold a null in it (or has no null
                                    count for it); a concurrent commit makes it fail (exit 1).
        TYPE: boolean int long float double decimal(P,S) date time timestamp timestamptz
        string uuid binary fixed[N]. A concurrent schema change makes the commit fail
        (Conflict, exit 1); concurrent appends do not.""", """
        icefloe schema add-column db.events country string --doc "ISO 3166 code"
        icefloe schema add-column db.events region string --initial-default unknown   # a v3 table
        icefloe schema rename-column db.events country country_code
        icefloe schema widen db.events id long
        icefloe schema widen db.events price "decimal(12,2)"
        icefloe schema drop-column db.events country_code
        icefloe schema make-required db.events id""")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    a = actions.add_parser("add-column", help="add an optional column")
    a.add_argument("table", help="namespace.table")
    a.add_argument("column", help="its name (parent.child inside a struct)")
    a.add_argument("type", help="its type (see above)")
    a.add_argument("--doc", help="a description stored with the field")
    a.add_argument("--initial-default", metavar="VALUE",
                   help="format v3: what rows written before the column read (JSON single-value form, e.g. 0, "
                        "\"n/a\", \"2024-06-01\"; a bare word is a string)")
    a.add_argument("--write-default", metavar="VALUE",
                   help="format v3: what a write without the column stores (default: the initial default)")
    a = actions.add_parser("rename-column", help="rename a column")
    a.add_argument("table", help="namespace.table")
    a.add_argument("column")
    a.add_argument("new_name")
    a = actions.add_parser("drop-column", help="drop a column")
    a.add_argument("table", help="namespace.table")
    a.add_argument("column")
    a = actions.add_parser("widen", help="widen a column's type (int->long, float->double, decimal precision)")
    a.add_argument("table", help="namespace.table")
    a.add_argument("column")
    a.add_argument("type", help="the wider type")
    for action, text in (("make-optional", "allow nulls in a column"),
                         ("make-required", "refuse nulls in a column (checked against every live file)")):
        a = actions.add_parser(action, help=text)
        a.add_argument("table", help="namespace.table")
        a.add_argument("column")
    p.set_defaults(fn=cmd_schema)


def _default(text: str):
    """A default value from the command line in the spec's JSON single-value form ("Default
    values"): JSON when it parses (0, 1.5, true, "x"), else the text itself as a string."""
    import json
    try:
        return json.loads(text)
    except ValueError:
        return text
