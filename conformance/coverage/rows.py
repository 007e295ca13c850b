"""Coverage families for partitions, row-level deletes and refs (issue 12; the classic
families of conformance.coverage.base run on one partition, without delete files or refs,
so their instances keep their size): each has its own small instance of the model.

  partitions  (operation, rival's operation, same / other partition, phase, outcome): a
              rival's commit on the same or the other partition lands while an operation
              is in a phase (disjoint partitions must both commit: L3);
  deltas      (operation, commits in between, result): a retry of an append, compaction,
              row delta or upsert validates over up to two rival commits of those kinds
              (sequence numbers decide what an equality delete deletes; a compaction must
              not drop a position delete committed meanwhile);
  refs        (kind, kind, kind): three commits in a row with a branch and a tag (a
              commit to the branch, a tag, a fast-forward, an expiry that must keep what
              any ref reaches);
  delta-orphans (operation, outcome): orphan removal after a row delta or a compaction
              ended so (delete files and their manifests must count as reachable);
  delta-sequences (kind, kind, kind): three commits in a row among row deltas (cdc_update
              among them: a position delete of its own commit's data file), compactions
              and expiries (an expiry must keep the delete files still live).

coverage.py appends these families to its FAMILIES at its end: import that module (this
one, imported first, would meet it half-initialized).
"""
from __future__ import annotations

from dataclasses import replace

from icefloe.conformance.coverage.base import Orphans, Rivals, Sequences, Validations
from icefloe.model import iceberg
from icefloe.model.state import (
    APPEND, BRANCH, CDC_UPDATE, DELETE, EXPIRE, FAST_FORWARD, OVERWRITE, REWRITE, ROW_DELETE, ROW_UPDATE, TAG_OP, UPSERT,
)


def _kinds(base, allowed) -> tuple:
    return tuple(k for k in base.kinds if k in allowed) or (APPEND,)


class PartitionRivals(Rivals):
    KINDS = (APPEND, OVERWRITE, DELETE, REWRITE)

    def bounds(self, base):
        return replace(base, writers=2, ops=1, kinds=_kinds(base, self.KINDS), faults=(), fault_budget=0,
                       orphan_runs=0, refs=False)

    def observe(self, b, tags, s, label, t):
        if t.cat != s.cat:
            op = iceberg.mget(t.metas, t.cat).op
            by = t.cat[0]
            for w, wr in enumerate(s.writers, start=1):
                if w != by and wr.kind and wr.phase not in ("plan", "done") and t.writers[w - 1].k == wr.k:
                    where = "same partition" if op.part == wr.part else "other partition"
                    tags = tags | {(w, wr.k, wr.kind, op.kind, where, wr.phase)}
        done = []
        for w, k, _, res in _ended_ops(s, label, t):
            hits = {h for h in tags if h[0] == w and h[1] == k}
            done += [(h[2], h[3], h[4], h[5], res) for h in hits]
            tags = tags - hits
        return tags, tuple(done)


class DeltaValidations(Validations):
    KINDS = (APPEND, REWRITE, ROW_DELETE, ROW_UPDATE, UPSERT)

    def bounds(self, base):
        return replace(super().bounds(base), kinds=_kinds(base, self.KINDS), partitions=1, refs=False)


class RefSequences(Sequences):
    KINDS = (APPEND, DELETE, EXPIRE, TAG_OP, FAST_FORWARD)

    def bounds(self, base):
        return replace(base, writers=1, ops=3, kinds=_kinds(base, self.KINDS), faults=(), fault_budget=0,
                       orphan_runs=0, partitions=1)

    def observe(self, b, tags, s, label, t):
        if t.cat == s.cat or t.cat[0] == 0:
            return tags, ()
        op = iceberg.mget(t.metas, t.cat).op
        kind = f"{op.kind}@{BRANCH}" if op.ref == BRANCH else op.kind
        window = (tuple(tags) + (kind,))[-3:]
        return tuple(window), ((window,) if len(window) == 3 else ())


class DeltaOrphans(Orphans):
    """Orphan removal after a row delta or a compaction ended so: the table then holds
    delete files and their manifests (and, on icefloe's table, merged manifests), which
    reachability must count as the data files are counted."""
    KINDS = (ROW_DELETE, ROW_UPDATE, UPSERT, REWRITE)

    def bounds(self, base):
        return replace(base, writers=1, ops=1, kinds=_kinds(base, self.KINDS),
                       fault_budget=min(base.fault_budget, 1) if base.faults else 0, partitions=1, refs=False)


class DeltaSequences(Sequences):
    """Three commits in a row among row deltas, compactions and expiries: an expiry then
    deletes what only expired snapshots reached while delete files stay live. With
    cdc_update, a position delete of a data file of its own commit (its sequence number
    equal to the file's, so it applies) is read, compacted and expired."""
    KINDS = (ROW_DELETE, UPSERT, REWRITE, EXPIRE, CDC_UPDATE)

    def bounds(self, base):
        return replace(base, writers=1, ops=3, kinds=_kinds(base, self.KINDS), faults=(), fault_budget=0,
                       orphan_runs=0, partitions=1, refs=False)


def _ended_ops(s, label, t):
    from icefloe.conformance.coverage.base import _ended
    return _ended(s, label, t)


ROW_FAMILIES = (
    PartitionRivals("partitions", "a rival's commit on the same or the other partition lands while an operation is "
                    "in a phase"),
    DeltaValidations("deltas", "a retry of an append, compaction, row delta or upsert validates over the commits "
                     "that landed since its start"),
    RefSequences("refs", "three commits in a row with a branch and a tag", ()),
    DeltaOrphans("delta-orphans", "orphan removal after a row delta or a compaction ended so"),
    DeltaSequences("delta-sequences", "three commits in a row among row deltas, compactions and expiries", ()),
)
