"""`icefloe update TABLE --set COLUMN=VALUE ... --filter FILTER` (impl/table/row_updates.py:
copy-on-write or, on format v3, merge-on-read; an updated row keeps its _row_id)."""
from __future__ import annotations

from icefloe.impl.cli.common import FILTER_GRAMMAR, MAIN_BRANCH, UsageError, add_command, open_table, report


def parse_assignment(text: str) -> tuple[str, object]:
    """`COLUMN=VALUE`, the value in the spec's JSON single-value form (Appendix D): JSON when
    it parses (0, 1.5, true, null, "x"), else the text itself as a string."""
    import json
    column, sep, value = text.partition("=")
    if not sep or not column.strip():
        raise UsageError(f"--set {text!r}: expected COLUMN=VALUE")
    try:
        return column.strip(), json.loads(value)
    except ValueError:
        return column.strip(), value


def cmd_update(args) -> int:
    from icefloe.impl.cli.tables import _check_branch, _on
    from icefloe.impl.format.expression_parser import parse as parse_filter
    assignments: dict[str, object] = {}
    for text in args.set:
        column, value = parse_assignment(text)
        if column in assignments:
            raise UsageError(f"--set {column} given twice")
        assignments[column] = value
    table = open_table(args)
    _check_branch(table, args.branch)
    outcome = table.update(assignments, parse_filter(args.filter), branch=args.branch, mode=args.mode)
    return report(outcome, _on(args.branch))


def register(sub) -> None:
    p = add_command(sub, "update", "set columns of the rows matching a filter", f"""
        Set columns of every row matching --filter, in one snapshot (operation overwrite).
        copy-on-write (the default, or the table's write.update.mode) rewrites the data
        files holding those rows; merge-on-read (format v3) writes a deletion vector for
        their old positions and the updated rows in new files. On format v3 an updated row
        keeps its _row_id and its _last_updated_sequence_number becomes the update's
        sequence number; the other rows of a rewritten file keep both (spec "Row Lineage").
        VALUE is a JSON single value (42, 1.5, true, null, "text"; a bare word is text;
        dates and timestamps as strings). Concurrent commits are validated (serializable).

        {FILTER_GRAMMAR}""", """
        icefloe update db.events --set status=closed --filter "id = 42"
        icefloe update db.events --set price=9.5 --set note=null --filter "cat = 'x'"
        icefloe update db.events --set status=closed --filter "id = 42" --mode merge-on-read   # format v3
        icefloe scan db.events --columns id,status,_row_id,_last_updated_sequence_number""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("--set", action="append", required=True, metavar="COLUMN=VALUE",
                   help="a top-level column and its new value (repeat for several)")
    p.add_argument("--filter", required=True, help="which rows to update (grammar below)")
    p.add_argument("--branch", default=MAIN_BRANCH, help="the branch to commit to (default main)")
    p.add_argument("--mode", choices=("copy-on-write", "merge-on-read"), default=None,
                   help="copy-on-write rewrites the files (the default, or the table's write.update.mode); "
                        "merge-on-read writes deletion vectors and the updated rows (format v3 tables only)")
    p.set_defaults(fn=cmd_update)
