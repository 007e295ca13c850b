"""The pairs family: every pair of operation kinds racing once, across the families
(issue 30 item 4; spec/PROTOCOL.md 7 "Validation", 8 "Refs"; the model's Swap and
Retry with a rival's commit landed in between).

Each other family races kinds of its own instance only: the classic families the six
classic kinds on one partition, `partitions` four kinds, `deltas` the row-level ones
among themselves. So an overwrite never raced a row delete, a tag never raced an upsert,
a compaction never raced a fast-forward. Here one small instance holds every kind the run
has (row deltas, refs, maintenance), two writers, one operation each, no faults, and a
class is `(operation, rival's operation)`: the rival's commit lands while the operation
is past its plan, and the operation then ends (committed, after its retry validated
against the rival, or in conflict). The partitions stay one: where a rival lands in the
table is the `partitions` family's question.
"""
from __future__ import annotations

from dataclasses import replace

from icefloe.conformance.coverage.base import Rivals, _close
from icefloe.model import iceberg


class Pairs(Rivals):
    def bounds(self, base):
        return replace(base, writers=2, ops=1, faults=(), fault_budget=0, orphan_runs=0, partitions=1, por=True)

    def observe(self, b, tags, s, label, t):
        if t.cat != s.cat:
            landed = iceberg.mget(t.metas, t.cat).op.kind
            by = t.cat[0]
            for w, wr in enumerate(s.writers, start=1):
                if w != by and wr.kind and wr.phase not in ("plan", "done") and t.writers[w - 1].k == wr.k:
                    tags = tags | {(w, wr.k, wr.kind, landed)}
        return _close(tags, s, label, t, lambda h, res: (h[2], h[3]))


PAIRS = Pairs("pairs", "every pair of operation kinds racing once: a rival's commit lands while the operation "
              "is in flight, across the families' kinds")
