"""Observation J1 of docs/verdicts.md reproduces: Iceberg-Java 1.10.2's plain `DELETE FROM t
WHERE id IN (...)` on whole files is a metadata-only delete that a retry re-applies to the
new table state instead of validating from its start (the model's delete conflicts there);
the adapter's row-level DELETE is validated and agrees with the model."""
from __future__ import annotations

import pytest

from icefloe.conformance.backends import Backends
from icefloe.conformance.engines import java_engine as J
from icefloe.conformance.profiles import REST
from icefloe.conformance.runs import replay
from icefloe.conformance.violation import Violation
from icefloe.model.iceberg import Bounds

# As the ci run shrank it: an overwrite lands while a delete of one of its removed files is held.
J1_PROGRAM = [("Begin", 1, "overwrite"), ("Begin", 2, "delete"), ("Heal", 0), ("Swap", 1), ("Swap", 2)]
J1_BOUNDS = Bounds(writers=2, ops=1, kinds=("append", "overwrite", "delete", "rewrite", "rollback", "expire"),
                   faults=("swap_fail", "ack_lost", "swap_delayed"), fault_budget=1, attempts_max=3,
                   isolation="serializable", orphan_runs=0)


@pytest.fixture(scope="module")
def backends():
    b = Backends()
    yield b
    b.close()


def test_j1_metadata_only_delete_is_reapplied_not_validated(java_worker, backends):
    """Goal: the known observation J1 reproduces, and the adapter's DELETE avoids it. Method:
    replay the shrunk program with the plain DELETE (A0: Java commits again where the model's
    delete conflicts) and with the adapter's row-level DELETE (agrees: Java reports Conflict)."""
    with pytest.raises(Violation) as found:
        replay(J.engine_metadata_delete(), J1_PROGRAM, bounds=J1_BOUNDS, store=REST, backends=backends, ctx_seed=0)
    assert found.value.prop.startswith("A0") and "another commit request" in str(found.value), found.value
    lock = replay(J.engine(), J1_PROGRAM, bounds=J1_BOUNDS, store=REST, backends=backends, ctx_seed=0)
    assert lock.stats.conflicts == 1 and lock.stats.commits >= 1, lock.stats
