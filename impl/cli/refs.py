"""Branches, tags and moving main: branch create|drop, tag create|drop, rollback,
set-current, cherry-pick (spec/PROTOCOL.md 7.3 "rollback / set-current", 8 "Refs").
Each is one commit that writes a metadata file only (no snapshot), except a
cherry-pick that is not a fast-forward."""
from __future__ import annotations

from icefloe.impl.cli.common import (
    MAIN_BRANCH, UsageError, add_command, duration_ms, open_table, positive_int, report,
)


def _run(table, operation):
    commit = table.begin(operation)
    commit.run()
    return table.adopt(commit)


def _target(table, snapshot_id: int | None) -> int:
    if snapshot_id is None:
        current = table.metadata.current_snapshot_id
        if current is None:
            raise UsageError("the table has no snapshot yet: append rows first, or name a snapshot with --snapshot-id")
        return current
    if table.metadata.snapshot_by_id(snapshot_id) is None:
        raise UsageError(f"snapshot {snapshot_id} is not retained (icefloe history lists those that are)")
    return snapshot_id


def cmd_branch(args) -> int:
    from icefloe.impl.table import refs as R
    table = open_table(args)
    if args.action == "create":
        target = _target(table, args.snapshot_id)
        op = R.CreateRef(args.name, target, "branch", min_snapshots_to_keep=args.min_snapshots_to_keep,
                         max_snapshot_age_ms=args.max_snapshot_age, max_ref_age_ms=args.max_ref_age)
        return report(_run(table, op), f"branch {args.name} -> snapshot {target}")
    if args.name == MAIN_BRANCH:
        raise UsageError("main cannot be dropped (it is the table's current state)")
    return report(_run(table, R.DropRef(args.name, "branch")), f"branch {args.name} dropped")


def cmd_tag(args) -> int:
    from icefloe.impl.table import refs as R
    table = open_table(args)
    if args.action == "create":
        target = _target(table, args.snapshot_id)
        op = R.CreateRef(args.name, target, "tag", max_ref_age_ms=args.max_ref_age)
        return report(_run(table, op), f"tag {args.name} -> snapshot {target}")
    return report(_run(table, R.DropRef(args.name, "tag")), f"tag {args.name} dropped")


def cmd_rollback(args) -> int:
    table = open_table(args)
    m = table.metadata
    if m.snapshot_by_id(args.snapshot_id) is None:
        raise UsageError(f"snapshot {args.snapshot_id} is not retained (icefloe history lists those that are)")
    if args.snapshot_id not in {s.snapshot_id for s in m.ancestors_of(m.current_snapshot_id)}:
        raise UsageError(f"snapshot {args.snapshot_id} is not an ancestor of main's current snapshot "
                         f"{m.current_snapshot_id}; to move main to it anyway (e.g. to undo a rollback): "
                         f"icefloe set-current {table.identifier} {args.snapshot_id}")
    return report(table.rollback_to(args.snapshot_id), f"main -> snapshot {args.snapshot_id} (rolled back)")


def cmd_set_current(args) -> int:
    table = open_table(args)
    _target(table, args.snapshot_id)
    return report(table.set_current_snapshot(args.snapshot_id), f"main -> snapshot {args.snapshot_id}")


def cmd_cherry_pick(args) -> int:
    from icefloe.impl.table import refs as R
    table = open_table(args)
    m = table.metadata
    _target(table, args.snapshot_id)
    ref = m.refs.get(args.branch)
    if ref is None or ref.type != "branch":
        raise UsageError(f"no branch {args.branch!r}")
    if R.fast_forward_target(m, args.snapshot_id, args.branch):
        from icefloe.impl.table.operations import SetRef
        op = SetRef(args.branch, args.snapshot_id, "branch")
        return report(_run(table, op), f"{args.branch} fast-forwarded to snapshot {args.snapshot_id}")
    return report(_run(table, R.CherryPick(args.snapshot_id, args.branch)),
                  f"the rows of snapshot {args.snapshot_id} appended to {args.branch}")


def register(sub) -> None:
    p = add_command(sub, "branch", "create or drop a branch (a movable ref that commits can go to)", """
        A branch is a named line of snapshots next to main: commits with --branch NAME go
        to it and leave main as it is (write-audit-publish: append to a branch, check it,
        then cherry-pick onto main). `create` starts it at main's current snapshot or at
        --snapshot-id; it refuses a name already taken. Retention per branch: expiry keeps
        at least --min-snapshots-to-keep of its snapshots, and those younger than
        --max-snapshot-age; --max-ref-age drops the branch itself once older.""", """
        icefloe branch create db.events audit
        icefloe append db.events staged.parquet --branch audit
        icefloe scan db.events --ref audit
        icefloe branch drop db.events audit""")
    p.add_argument("action", choices=("create", "drop"))
    p.add_argument("table", help="namespace.table")
    p.add_argument("name", help="the branch's name")
    p.add_argument("--snapshot-id", type=int, help="where the branch starts (default: main's current snapshot)")
    p.add_argument("--min-snapshots-to-keep", type=positive_int, metavar="N")
    p.add_argument("--max-snapshot-age", type=duration_ms, metavar="DURATION", help="e.g. 7d, 12h")
    p.add_argument("--max-ref-age", type=duration_ms, metavar="DURATION", help="e.g. 30d")
    p.set_defaults(fn=cmd_branch)

    p = add_command(sub, "tag", "create or drop a tag (a fixed name for one snapshot)", """
        A tag names one snapshot for good (a release, an audit point): `scan --tag NAME`
        reads it, and expiry keeps it as long as the tag exists. `create` tags main's
        current snapshot or --snapshot-id, and refuses a name already taken.""", """
        icefloe tag create db.events v1
        icefloe tag create db.events before-fix --snapshot-id 4211829340412345
        icefloe scan db.events --tag v1
        icefloe tag drop db.events v1""")
    p.add_argument("action", choices=("create", "drop"))
    p.add_argument("table", help="namespace.table")
    p.add_argument("name", help="the tag's name")
    p.add_argument("--snapshot-id", type=int, help="the snapshot to tag (default: main's current snapshot)")
    p.add_argument("--max-ref-age", type=duration_ms, metavar="DURATION", help="expire the tag itself once older, e.g. 90d")
    p.set_defaults(fn=cmd_tag)

    p = add_command(sub, "rollback", "move main back to an ancestor of its current snapshot", """
        Make an earlier snapshot of main's own history current again (no data is
        deleted; the newer snapshots stay until expired, so set-current can undo this).""", """
        icefloe history db.events
        icefloe rollback db.events 4211829340412345
        icefloe set-current db.events 8873464123011111     # undo: back to the newer one""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("snapshot_id", type=int)
    p.set_defaults(fn=cmd_rollback)

    p = add_command(sub, "set-current", "make any retained snapshot main's current one (undoes a rollback)", """
        Point main at any retained snapshot, an ancestor or not: this is how a rollback
        is undone, or a snapshot of a branch published as main (for an append made on a
        branch, cherry-pick keeps main's newer commits instead).""", """
        icefloe set-current db.events 8873464123011111""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("snapshot_id", type=int)
    p.set_defaults(fn=cmd_set_current)

    p = add_command(sub, "cherry-pick", "apply an append snapshot (from a branch, say) to a branch, main by default", """
        Add the rows an append snapshot added, as a new snapshot on --branch (default
        main), with summary source-snapshot-id; if the snapshot's parent is the branch's
        head, the branch simply moves to it (fast-forward). Only appends can be picked:
        replaying an overwrite or delete on another base needs that operation's own
        conflict checks. A snapshot already on the branch (or picked onto it) is refused.""", """
        icefloe branch create db.events audit
        icefloe append db.events staged.parquet --branch audit
        icefloe history db.events                  # the audit branch's new snapshot id
        icefloe cherry-pick db.events 5512093847712345""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("snapshot_id", type=int)
    p.add_argument("--branch", default=MAIN_BRANCH, help="the branch to apply it to (default main)")
    p.set_defaults(fn=cmd_cherry_pick)
