"""Maintenance: compact, expire, remove-orphans (spec/PROTOCOL.md 11 "Expiry", 12
"Orphan removal"). Expiry explains itself: every snapshot it keeps is printed with the
rule that kept it (a ref, retain-last, or age), so `--retain-last 5` keeping everything
younger than five days is visible, not a surprise."""
from __future__ import annotations

import sys
from collections import Counter

from icefloe.impl.cli.common import (
    EXIT_OK, TIME_HELP, add_command, human_ms, iso_ms, open_table, positive_int, report, time_ms,
)

KEPT_LINES_MAX = 20   # newest first; the rest are counted by rule
# The defaults the help shows, as the table layer defines them (icefloe.impl.table.operations
# and .maintenance; test_cli_help checks they agree), so that --help imports no table module.
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 86_400_000
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
ORPHAN_AGE_MS_DEFAULT = 3 * 86_400_000


def _cleanup_report(cleanup, what: str) -> None:
    print(cleanup.summary())
    if not cleanup.complete:
        print(f"icefloe: warning: {what}; cleanup incomplete (orphan removal can finish it later): "
              f"{cleanup.summary()}", file=sys.stderr)


def cmd_compact(args) -> int:
    return report(open_table(args).rewrite_files(), "small files rewritten, one per partition")


def cmd_expire(args) -> int:
    from icefloe.impl.table import operations as ops
    table = open_table(args)
    before = {s.snapshot_id: s for s in table.metadata.snapshots}
    operation = ops.ExpireSnapshots(args.older_than, args.retain_last)
    commit = table.begin(operation)
    commit.run()
    outcome = table.adopt(commit)
    expired = sorted(set(before) - {s.snapshot_id for s in table.metadata.snapshots})
    code = report(outcome, f"{len(expired)} snapshot(s) expired" if expired else "")
    if code != EXIT_OK:
        return code
    for sid in expired:
        print(f"  expired {sid}  ({iso_ms(before[sid].timestamp_ms)}, {before[sid].operation})")
    kept = sorted(operation.kept.items(), key=lambda kv: -before[kv[0]].sequence_number if kv[0] in before else 0)
    for sid, reasons in kept[:KEPT_LINES_MAX]:
        why = "; ".join(f"{rule}: {detail}" for rule, detail in reasons)
        when = iso_ms(before[sid].timestamp_ms) if sid in before else "-"
        print(f"  kept    {sid}  ({when})  {why}")
    if len(kept) > KEPT_LINES_MAX:
        rules = Counter(rule for _, reasons in kept[KEPT_LINES_MAX:] for rule in {r for r, _ in reasons})
        print(f"  kept    {len(kept) - KEPT_LINES_MAX} older snapshot(s) more, by rule: "
              + ", ".join(f"{rule} {n}" for rule, n in sorted(rules.items())))
    if not expired and operation.kept:
        print("nothing was old enough: a snapshot goes only when no rule keeps it "
              "(try --older-than now to drop the age rule; refs are kept until their max-ref-age)")
    if expired:
        _cleanup_report(operation.deleted_files, "committed")
    return code


def cmd_remove_orphans(args) -> int:
    args.read_only = args.dry_run  # a dry run writes nothing, the catalog included (issue 14)
    cleanup = open_table(args).remove_orphan_files(args.older_than, dry_run=args.dry_run)
    for location in cleanup:
        print(f"{'would delete' if args.dry_run else 'deleted'} {location}")
    for location in cleanup.refused:
        print(f"refused (outside the table) {location}")
    if args.dry_run:           # the table layer's summary counts what a real run deleted (bug15)
        refused = f"; {len(cleanup.refused)} outside the table would be refused" if cleanup.refused else ""
        print(f"dry run: would delete {len(cleanup)} file(s){refused}; nothing was deleted")
        return EXIT_OK
    _cleanup_report(cleanup, "orphan removal ran")
    return EXIT_OK


def register(sub) -> None:
    age = human_ms(MAX_SNAPSHOT_AGE_MS_DEFAULT)
    p = add_command(sub, "compact", "rewrite small data files into one per partition", """
        Rewrite the live data files of each partition that has two or more into one file
        (operation replace). Rows are unchanged; concurrent deletes of those files make
        it fail (validated), concurrent appends do not.""", """
        icefloe compact db.events""")
    p.add_argument("table", help="namespace.table")
    p.set_defaults(fn=cmd_compact)

    p = add_command(sub, "expire", "expire old snapshots and delete the files only they reached", f"""
        Remove snapshots no retention rule keeps, then delete the files only they
        reached (inside the table's location only). A snapshot is KEPT if any rule keeps it:
          ref          it is the head of a branch or tag that does not expire (main never
                       does; another ref expires, and is removed, when its snapshot is older
                       than its max-ref-age, else the table property
                       history.expire.max-ref-age-ms, default: never)
          retain-last  it is one of the last N snapshots of a branch (N: the branch's own
                       min-snapshots-to-keep, else --retain-last, else the table property
                       history.expire.min-snapshots-to-keep, default
                       {MIN_SNAPSHOTS_TO_KEEP_DEFAULT})
          age          it is not older than the branch's own max-snapshot-age, else
                       --older-than, else the table property
                       history.expire.max-snapshot-age-ms (default {age})
        A branch's own settings win over the options, as the spec's ref-level properties
        override the table's.
        So `--retain-last 5` alone expires nothing younger than {age}: add --older-than
        (e.g. --older-than now) to expire by count. Each kept snapshot is printed with
        the rule that kept it.""", """
        icefloe expire db.events                                  # older than {age}, keep the last {MIN_SNAPSHOTS_TO_KEEP_DEFAULT}
        icefloe expire db.events --older-than now --retain-last 5  # keep exactly the last 5 (and refs)
        icefloe expire db.events --older-than 2024-06-01T00:00:00Z""".format(age=age, MIN_SNAPSHOTS_TO_KEEP_DEFAULT=MIN_SNAPSHOTS_TO_KEEP_DEFAULT))
    p.add_argument("table", help="namespace.table")
    p.add_argument("--older-than", type=time_ms, metavar="TIME",
                   help=f"expire snapshots older than TIME: {TIME_HELP} (default: {age} ago)")
    p.add_argument("--retain-last", type=positive_int, metavar="N",
                   help=f"keep at least the last N snapshots of each branch (default {MIN_SNAPSHOTS_TO_KEEP_DEFAULT})")
    p.set_defaults(fn=cmd_expire)

    p = add_command(sub, "remove-orphans", "delete files no snapshot reaches (and dead writers' temporary files)", f"""
        List the table's location and delete the data files, manifests and manifest lists
        no retained snapshot reaches, last modified before --older-than (default
        {human_ms(ORPHAN_AGE_MS_DEFAULT)} ago: a younger file may belong to a commit in flight).
        Metadata files are never deleted here. --dry-run lists what would go.""", """
        icefloe remove-orphans db.events --dry-run
        icefloe remove-orphans db.events""")
    p.add_argument("table", help="namespace.table")
    p.add_argument("--older-than", type=time_ms, metavar="TIME",
                   help=f"only files last modified before TIME: {TIME_HELP} "
                        f"(default: {human_ms(ORPHAN_AGE_MS_DEFAULT)} ago)")
    p.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    p.set_defaults(fn=cmd_remove_orphans)
