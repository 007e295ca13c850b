"""Findings J1 and J2 of docs/verdicts.md reproduce as the ci run shrank them: Iceberg-Java
1.10.2 re-applies an operation to the new table state when its commit is refused (409)
where the model's operation, validated from where it started, conflicts. J1: a plain
`DELETE FROM t WHERE id IN (...)` on whole files is a metadata-only delete (the adapter's
row-level DELETE is validated and agrees with the model). J2: `rollback_to_snapshot`
retried after a concurrent append lands moves main back over that append."""
from __future__ import annotations

import pytest

from icefloe.conformance.backends import Backends
from icefloe.conformance.engines import java_engine as J
from icefloe.conformance.profiles import REST
from icefloe.conformance.runs import replay
from icefloe.conformance.violation import Violation
from icefloe.model.iceberg import Bounds

# As the ci run shrank them. J1: an overwrite lands while a delete of a file it removed is held.
J1_PROGRAM = [("Begin", 1, "overwrite"), ("Begin", 2, "delete"), ("Heal", 0), ("Swap", 1), ("Swap", 2)]
# J2: an append lands while a rollback (to main's head's parent) is held.
J2_PROGRAM = [("Begin", 1, "append"), ("Begin", 2, "rollback"), ("Heal", 0), ("Swap", 1), ("Swap", 2)]
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


def test_j2_rollback_is_reapplied_over_a_concurrent_append(java_worker, backends):
    """Goal: the known finding J2 reproduces, and the adapter's rollback avoids it. Method:
    replay the shrunk program with Java's rollback_to_snapshot (A0: it sends its rollback
    again after the 409, where the model's rollback conflicts) and with the adapter's."""
    with pytest.raises(Violation) as found:
        replay(J.engine_procedure_rollback(), J2_PROGRAM, bounds=J1_BOUNDS, store=REST, backends=backends, ctx_seed=0)
    assert found.value.prop.startswith("A0") and "another commit request" in str(found.value), found.value
    lock = replay(J.engine(), J2_PROGRAM, bounds=J1_BOUNDS, store=REST, backends=backends, ctx_seed=0)
    assert lock.stats.conflicts == 1 and lock.stats.commits >= 1, lock.stats   # the spec's rollback: refused


def test_j3_incremental_read_from_the_head_is_refused(java_worker, tmp_path):
    """Goal: the known observation J3 (why the adapter answers an incremental read from
    main's head itself) still holds. Method: read with start-snapshot-id = the head."""
    from icefloe.conformance.testing import java_env
    java_env.add_catalog(java_worker, "j3", "hadoop", warehouse=f"file://{tmp_path}")
    java_worker.sql("CREATE TABLE j3.db.t (id string NOT NULL) USING iceberg")
    java_worker.call("append", table="j3.db.t", values=["a"])
    head = java_worker.call("head", table="j3.db.t")[0][0]
    with pytest.raises(java_env.JavaError) as refused:
        java_worker.call("read", table="j3.db.t", options={"start-snapshot-id": str(head)})
    assert refused.value.caused_by("IllegalArgumentException") and "parent ancestor" in refused.value.message
