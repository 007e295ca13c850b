"""What an interop campaign (conformance.interop.run) leaves behind, made judgeable: icefloe's
Unknowns resolved by its own client, the store read as `campaign_judge.Evidence`
(campaign_evidence), and each black-box operation placed in the history.

A black-box engine (pyiceberg, Iceberg-Java) does not tell which snapshot it committed or
which version it built on. Its snapshots carry the op id in their summaries (`tags`), so:
- an operation landed iff a snapshot tagged with its id is on the lineage; it then is the
  version that introduced that snapshot (the head of what it introduced, when one commit
  made several, like pyiceberg's overwrite: a delete snapshot, then an append), built on
  the version before (its start: what its last, successful attempt read), with the data
  files that transition added and removed;
- a rollback makes no snapshot: it landed where the lineage moves main back to its target
  without a new snapshot, a transition no icefloe commit made (an acknowledged rollback at
  the version its engine named, if that is such a move; the rest in the order the
  operations started: committed ones first, then Unknown, then Conflict);
- an op id on two versions of the lineage is a duplicate commit (the checker sees
  snapshot ids, and a client that retried with a new snapshot id would evade it).
Black-box Unknowns are resolved from that placement; icefloe's by `resolve_unknown`, which
the judge checks against the lineage.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

from icefloe.conformance.campaign.evidence import gather_evidence
from icefloe.conformance.campaign.judge import (
    COMMITTED, CONFLICT, NOOP, OVERWRITE, REWRITE, ROLLBACK, UNKNOWN, Evidence,
)
from icefloe.conformance.interop.writers import ICEFLOE, OP_ID_PROPERTY
from icefloe.model.checks.history import Anomaly, lineage_of


def resolve_icefloe(ops, engine_of: dict, store, catalog, table: str) -> dict:
    """op_id -> (committed | conflict | unknown, location) for each icefloe Unknown (9.6)."""
    from icefloe.conformance.campaign.evidence import resolve_unknowns
    return resolve_unknowns([o for o in ops if engine_of[o.process] == ICEFLOE], store, catalog, table)


def gather(store, catalog, ops, resolutions, results, table: str) -> tuple[Evidence, dict]:
    """The Evidence, and snapshot id -> the op id its summary carries (every metadata file)."""
    evidence = gather_evidence(store, catalog, ops, resolutions,
                               tuple(x for r in results for x in r["reads"]),
                               tuple(x for r in results for x in r["observed"]), table)
    tags = {}
    for v in evidence.table.versions:
        doc = json.loads(store.get(v.location))
        for s in doc.get("snapshots", []):
            op_id = (s.get("summary") or {}).get(OP_ID_PROPERTY)
            if op_id is not None:
                tags.setdefault(s["snapshot-id"], op_id)
    return evidence, tags


def attribute(ev: Evidence, engine_of: dict, tags: dict) -> tuple[Evidence, list]:
    """The evidence with each black-box operation placed (module docstring), and the
    anomalies only this placement can see (duplicate commits of one op id)."""
    table, line = ev.table, lineage_of(ev.table)
    by_loc = {v.location: v for v in table.versions}
    introduced: dict = {}                                  # snapshot id -> lineage index
    for i in range(1, len(line)):
        old = set(by_loc[line[i - 1]].snapshot_ids)
        for sid in by_loc[line[i]].snapshot_ids:
            if sid not in old:
                introduced.setdefault(sid, i)
    by_op: dict = {}
    for sid, op_id in tags.items():
        by_op.setdefault(op_id, []).append(sid)
    extra, out = [], []

    def files(i: int) -> dict:
        pre, post = by_loc[line[i - 1]], by_loc[line[i]]
        before = table.snapshots[pre.main].files if pre.main in table.snapshots else frozenset()
        after = table.snapshots[post.main].files if post.main in table.snapshots else frozenset()
        return dict(added_files=after - before, removed_files=before - after)

    def placed(o, i: int, **kw):
        f = files(i)
        reads = f["removed_files"] if o.kind in (OVERWRITE, REWRITE, ROLLBACK) else frozenset()
        return replace(o, committed_location=line[i], base_location=line[i - 1],
                       start_snapshot_id=by_loc[line[i - 1]].main, read_files=reads, **f, **kw)

    claimed = {o.committed_location for o in ev.ops if engine_of[o.process] == ICEFLOE}
    claimed |= {r[1] for r in ev.resolutions.values() if r[1]}
    rollbacks = []
    for o in ev.ops:
        if engine_of[o.process] == ICEFLOE or o.outcome == NOOP:
            out.append(o)
            continue
        if o.kind == ROLLBACK:
            rollbacks.append(o)
            continue
        sids = by_op.get(o.op_id, [])
        at = sorted({introduced[s] for s in sids if s in introduced})
        if len(at) > 1:
            extra.append(Anomaly("duplicate commit", (o.op_id,),
                                 f"{o.op_id} ({engine_of[o.process]}) landed in {len(at)} versions of the lineage: "
                                 + ", ".join(line[i].rsplit('/', 1)[-1] for i in at)))
        if at:
            i = at[0]
            post = by_loc[line[i]]
            mine = [s for s in sids if introduced.get(s) == i]
            head = post.main if post.main in mine else mine[-1]
            out.append(placed(o, i, snapshot_id=head))
        else:
            out.append(replace(o, snapshot_id=sids[0] if sids else None))
    # Untagged snapshots on the lineage that no operation claims: a Java rewrite's (the
    # procedure cannot tag), placed like a rollback, by kind, in the order operations started.
    claimed_sids = {o.snapshot_id for o in out if o.snapshot_id is not None}
    loose = sorted((i, sid) for sid, i in introduced.items()
                   if sid not in claimed_sids and sid not in tags
                   and table.snapshots[sid].operation == "replace" and by_loc[line[i]].main == sid)
    untagged = [o for o in out if engine_of[o.process] != ICEFLOE and o.kind == REWRITE
                and o.snapshot_id is None and o.outcome != NOOP]
    for o in sorted(untagged, key=lambda o: ({COMMITTED: 0, UNKNOWN: 1}.get(o.outcome, 2), o.started_s)):
        if not loose or o.outcome not in (COMMITTED, UNKNOWN, CONFLICT):
            break
        i, sid = loose.pop(0)
        out[out.index(o)] = placed(o, i, snapshot_id=sid)
    moves = []                                              # lineage indexes of snapshot-less main moves
    for i in range(1, len(line)):
        pre, post = by_loc[line[i - 1]], by_loc[line[i]]
        if post.main != pre.main and not set(post.snapshot_ids) - set(pre.snapshot_ids) and line[i] not in claimed:
            moves.append(i)
    rank = {COMMITTED: 0, UNKNOWN: 1, CONFLICT: 2}
    for o in sorted(rollbacks, key=lambda o: (rank.get(o.outcome, 3), o.started_s)):
        to_target = [i for i in moves if by_loc[line[i]].main == o.rollback_to]
        # An acknowledged rollback names its version; an Unknown takes the first such move.
        own = [i for i in to_target if o.outcome == COMMITTED and line[i] == o.committed_location]
        match = (own or to_target or [None])[0]
        if match is not None and o.outcome in rank:
            moves.remove(match)
            out.append(placed(o, match))
        else:
            out.append(o)
    order = {o.op_id: n for n, o in enumerate(ev.ops)}
    return replace(ev, ops=tuple(sorted(out, key=lambda o: order[o.op_id]))), extra


def landed_ids(ev: Evidence) -> set:
    """op ids whose commit is on the lineage (by snapshot, or by location for a rollback)."""
    line = lineage_of(ev.table)
    pos = set(line)
    by_loc = {v.location: v for v in ev.table.versions}
    on_line = set()
    for loc in line:
        on_line |= set(by_loc[loc].snapshot_ids)
    introduced = set()
    for a, b in zip(line, line[1:]):
        introduced |= set(by_loc[b].snapshot_ids) - set(by_loc[a].snapshot_ids)
    out = set()
    for o in ev.ops:
        if o.outcome == NOOP:
            continue
        if o.snapshot_id is not None and o.snapshot_id in introduced:
            out.add(o.op_id)
        elif o.snapshot_id is None and o.committed_location in pos and o.outcome != CONFLICT:
            out.add(o.op_id)
        elif o.outcome == UNKNOWN and ev.resolutions.get(o.op_id, (None, None))[0] == COMMITTED \
                and ev.resolutions[o.op_id][1] in pos:
            out.add(o.op_id)
    return out


def figures(ev: Evidence, judgement, engine_of: dict, results, faults: dict, resolutions: dict) -> dict:
    """engine -> the campaign's figures for it."""
    landed = landed_ids(ev)
    out = {}
    client = Counter()
    for r in results:
        client.update(r.get("client") or {})
    for engine in dict.fromkeys(engine_of.values()):
        mine = [o for o in ev.ops if engine_of[o.process] == engine]
        unknown = [o for o in mine if o.outcome == UNKNOWN]
        if engine == ICEFLOE:
            states = Counter(resolutions.get(o.op_id, (UNKNOWN, None))[0] for o in unknown)
            committed, not_committed, unresolved = states[COMMITTED], states[CONFLICT], states[UNKNOWN]
        else:
            committed = sum(1 for o in unknown if o.op_id in landed)
            not_committed, unresolved = len(unknown) - committed, 0
        out[engine] = {"operations": len(mine), "landed": sum(1 for o in mine if o.op_id in landed),
                       "outcomes": dict(Counter(o.outcome for o in mine)), "kinds": dict(Counter(o.kind for o in mine)),
                       "retries": sum(max(0, o.attempts - 1) for o in mine),
                       "faults": dict(faults.get(engine, {})), "unknown_committed": committed,
                       "conflicts": dict(Counter(o.reason.split(":")[0][:60] for o in mine if o.outcome == CONFLICT)),
                       "unknown_not_committed": not_committed, "unknown_unresolved": unresolved,
                       "client": dict(client) if engine == ICEFLOE else {}}
    return out
