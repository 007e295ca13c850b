"""A transport fault on a SQL catalog's COMMIT, drawn for a swap whose base is already stale:
the conditional UPDATE matches no row and the transaction rolls back, so no COMMIT is sent and
the fault has nothing to hit. The seed gate's seed 7 (2026-11-28) shrank this to 12 steps and
reported icefloe as violating A0 ("no COMMIT in phase swap"): a false alarm of the harness that
any SQL-catalog engine would have met."""
from __future__ import annotations

import pytest

from icefloe.conformance.engines import registry
from icefloe.conformance.suite.runs import replay
from icefloe.conformance.suite.stats import Stats
from icefloe.model.iceberg import Bounds

BOUNDS = Bounds(writers=2, ops=3, kinds=("append", "overwrite", "delete", "rewrite", "rollback", "expire", "row_delete",
                                         "row_update", "upsert", "tag", "fast_forward"),
                faults=("write_fail", "swap_fail", "ack_lost", "swap_delayed", "crash"), fault_budget=3,
                attempts_max=3, isolation="serializable", orphan_runs=1, variant="correct", workload="any",
                por=False, partitions=2, refs=True)
RACE = [("Begin", 1, "append", 1, "b"), ("Begin", 2, "append", 1, "b"), ("WriteData", 1), ("WriteData", 2),
        ("WriteManifests", 1), ("WriteManifestList", 1), ("WriteManifests", 2), ("WriteManifestList", 2),
        ("WriteMetadata", 1), ("Swap", 1), ("WriteMetadata", 2)]
SQL_CTX_SEED = 2025          # the context seed of seed 7's program: a SQLite catalog on the memory store


@pytest.mark.parametrize("fault", ["ResponseLost", "RequestLost"])
def test_a_fault_on_a_stale_swaps_commit_finds_no_commit_and_counts_nothing(fault):
    """Goal: icefloe passes the seed gate's seed-7 program, and a fault that hit no request is
    neither counted nor covered. Method: replay it (writer 2 swaps on a stale base with the
    fault armed) and read the run's fault counts."""
    stats = Stats()
    lock = replay(registry.load_engine("icefloe"), RACE + [(fault, 2)], bounds=BOUNDS, store="memory",
                  ctx_seed=SQL_CTX_SEED, stats=stats)
    assert lock.ctx.catalog_uri, "the program must run on a SQL catalog to mean anything"
    assert stats.faults.get(f"transport {fault}", 0) == 0, stats.faults


def test_a_fault_on_a_fresh_swaps_commit_still_fires():
    """Goal: the exemption above is only for a refused swap. Method: the same fault on writer
    1's swap (its base is current): the COMMIT is hit and the fault is counted."""
    stats = Stats()
    program = RACE[:9] + [("ResponseLost", 1)]
    replay(registry.load_engine("icefloe"), program, bounds=BOUNDS, store="memory", ctx_seed=SQL_CTX_SEED,
           stats=stats)
    assert stats.faults.get("transport ResponseLost", 0) == 1, stats.faults
