"""Findings J1-J5 of docs/verdicts.md reproduce as the ci run shrank them (J5: as built
by hand). J1 and J2: Iceberg-Java 1.10.2 re-applies an operation to the new table state
when its commit is refused (409) where the model's operation, validated from where it
started, conflicts. J1: a plain `DELETE FROM t WHERE id IN (...)` on whole files is a
metadata-only delete (the adapter's row-level DELETE is validated and agrees with the
model). J2: `rollback_to_snapshot` retried after a concurrent append lands moves main back
over that append. J3: an incremental read from main's head is refused. J4 and J5:
`Table.expireSnapshots()` sends its first plan with no requirement but the table's uuid
(J4: the server applies it over a concurrent append), and when a concurrent rollback made
a planned snapshot main's head again its retry refuses itself, while Iceberg-Java's own
server handler would apply the plan and drop main (J5). The adapter's expiry (each
attempt planned afresh, its request asserting every ref) agrees with the model in both.
J6: a merge-on-read DELETE does not check concurrent deletes of its rows (the adapter's
merge-on-read delete, a MERGE, does)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.engines import java_engine as J
from icefloe.conformance.suite.profiles import REST
from icefloe.conformance.suite.runs import replay
from icefloe.conformance.violation import Violation
from icefloe.model.iceberg import Bounds

# As the ci run shrank them. J1: an overwrite lands while a delete of a file it removed is held.
J1_PROGRAM = [("Begin", 1, "overwrite"), ("Begin", 2, "delete"), ("Heal", 0), ("Swap", 1), ("Swap", 2)]
# J2: an append lands while a rollback (to main's head's parent) is held.
J2_PROGRAM = [("Begin", 1, "append"), ("Begin", 2, "rollback"), ("Heal", 0), ("Swap", 1), ("Swap", 2)]
# J4: an append lands while an expiry (keep main's head) is held.
J4_PROGRAM = [("Begin", 1, "append"), ("Begin", 2, "expire"), ("Heal", 0), ("Swap", 1), ("Swap", 2)]
# J6 (merge-on-read): J1's schedule, an overwrite hides the rows of a file a held delete deletes.
J6_PROGRAM = J1_PROGRAM
# J5: a rollback (main back to its head's parent) lands while an expiry that planned to
# remove that parent is held.
J5_PROGRAM = [("Begin", 2, "expire"), ("Begin", 1, "rollback"), ("Heal", 0), ("Swap", 1), ("Swap", 2)]
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


def test_j4_expiry_commits_its_first_plan(java_worker, backends):
    """Goal: the known observation J4 reproduces, and the adapter's expiry avoids it. Method:
    replay the shrunk program with Java's own Table.expireSnapshots() (A0: the table keeps
    the old head, which the model's expiry, re-planned on the new base, removed) and with
    the adapter's (its first request refused, 409, the second re-planned: two attempts)."""
    with pytest.raises(Violation) as found:
        replay(J.engine_plain_expire(), J4_PROGRAM, bounds=J1_BOUNDS, store=REST, backends=backends, ctx_seed=0)
    assert found.value.prop.startswith("A0") and "the model's expiry removed" in str(found.value), found.value
    lock = replay(J.engine(), J4_PROGRAM, bounds=J1_BOUNDS, store=REST, backends=backends, ctx_seed=0)
    assert lock.stats.retries == 1 and lock.stats.conflicts == 0, lock.stats


def test_j5_expiry_retried_after_a_rollback_refuses_itself(java_worker, backends):
    """Goal: finding J5 through icefloe serve: the expiry's retry (after the server's 409 for
    removing main's head) keeps its first plan and fails; the adapter's re-plans and lands.
    Method: replay the schedule with Java's own expiry (A0: IllegalArgumentException "Still
    referenced by refs: [main]") and with the adapter's (two attempts, agrees)."""
    with pytest.raises(Violation) as found:
        replay(J.engine_plain_expire(), J5_PROGRAM, bounds=J1_BOUNDS, store=REST, backends=backends, ctx_seed=0)
    message = str(found.value)
    assert found.value.prop.startswith("A0") and "IllegalArgumentException" in message, message
    assert "Still referenced by refs: [main]" in message, message
    lock = replay(J.engine(), J5_PROGRAM, bounds=J1_BOUNDS, store=REST, backends=backends, ctx_seed=0)
    assert lock.stats.retries == 1 and lock.stats.conflicts == 0, lock.stats


def test_j5_java_request_and_java_server_handler():
    """Goal: finding J5 in Iceberg-Java's own classes: the request its REST client builds for
    an expiry asserts only the table's uuid; Iceberg-Java's server handler applies it after
    a rollback made the planned snapshot main's head and drops main (the table reads
    empty); RemoveSnapshots planning again raises, or, with a retention window, removes
    a snapshot a fresh plan keeps. Method: java_expiry_internals.py in one JVM over
    Iceberg's InMemoryCatalog."""
    from icefloe.conformance.testing import java_env
    done = java_env.run_script(Path(__file__).with_name("java_expiry_internals.py"), str(java_env.runtime_jar()))
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    s1, s2 = out["s1"], out["s2"]
    assert out["planned_removal"] == [s1]
    assert [r["type"] for r in out["request"]["requirements"]] == ["assert-table-uuid"], out["request"]
    assert out["request"]["updates"] == [{"action": "remove-snapshots", "snapshot-ids": [s1]}], out["request"]
    assert out["server"] == {"refs": {}, "current_snapshot_id": None, "snapshots": [s2],
                             "reloaded_current_snapshot_id": None}, out["server"]
    assert out["first_plan"] == [out["t1"]]
    assert out["second_plan"]["error"] == "java.lang.IllegalArgumentException", out["second_plan"]
    assert f"Cannot expire {out['t1']}. Still referenced by refs: [main]" == out["second_plan"]["message"]
    window = out["window"]                       # retainLast(2): the retry removes the union of both plans
    assert window["first_plan"] == [window["u1"]] and window["fresh_plan"] == [window["u3"]], window
    assert window["second_plan"] == sorted([window["u1"], window["u3"]]), window


def test_j6_merge_on_read_delete_ignores_a_concurrent_delete_of_its_rows(java_worker, backends):
    """Goal: observation J6 reproduces, and the adapter's merge-on-read delete avoids it.
    Method: J1's schedule on merge-on-read tables: Spark's DELETE retries after the 409 and
    commits over the overwrite that hid its rows (A0); the adapter's MERGE ... WHEN MATCHED
    THEN DELETE ends Conflict, as the model's delete."""
    with pytest.raises(Violation) as found:
        replay(J.engine_mor_plain_delete(), J6_PROGRAM, bounds=J1_BOUNDS, store=REST, backends=backends, ctx_seed=0)
    assert found.value.prop.startswith("A0") and "another commit request" in str(found.value), found.value
    lock = replay(J.engine_mor(), J6_PROGRAM, bounds=J1_BOUNDS, store=REST, backends=backends, ctx_seed=0)
    assert lock.stats.conflicts == 1 and lock.stats.commits >= 1, lock.stats
