"""The merge-on-read UPDATE/DELETE anomaly (docs/merge-on-read-anomaly.md, spec/PROTOCOL.md
14.10): reproduced in the model at snapshot isolation, rejected at serializable and by the
protocol's own validation, and icefloe's implementation driven through the same schedule.
Method: explore the flawed variant (Spark's validation of a merge-on-read DELETE) with P6
alone, replay its shortest trace on the correct protocol, and step two row deltas of the
implementation phase by phase in the trace's order on an in-memory table."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from icefloe.model import checks, iceberg, variants
from icefloe.model.explore import explore
from icefloe.model.spec import IcebergSpec
from icefloe.model.state import COMMITTED, CONFLICT, SERIALIZABLE, SNAPSHOT
from model_helpers import run

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "impl" / "table"))

VARIANT = "row-delete-ignores-concurrent-deletes"
P6 = "P6 Isolation"

# The model's shortest counterexample (17 steps), as docs/merge-on-read-anomaly.md shows it:
# w1 deletes row (0, 1) by position (a merge-on-read DELETE) and is ready to swap; w2
# updates the same row (a position delete and the row written again) and commits first;
# w1's swap is rejected, it retries on w2's snapshot and commits.
DELETE_UNTIL_SWAP = [("Begin", 1, "row_delete"), ("WriteData", 1), ("WriteManifests", 1),
                     ("WriteManifestList", 1), ("WriteMetadata", 1)]
UPDATE_COMMITS = [("Begin", 2, "row_update"), ("WriteData", 2), ("WriteManifests", 2),
                  ("WriteManifestList", 2), ("WriteMetadata", 2), ("Swap", 2)]
DELETE_RETRIES = [("Swap", 1), ("Retry", 1), ("WriteManifests", 1), ("WriteManifestList", 1),
                  ("WriteMetadata", 1), ("Swap", 1)]
TRACE = DELETE_UNTIL_SWAP + UPDATE_COMMITS + DELETE_RETRIES


def _variant(isolation: str) -> IcebergSpec:
    return IcebergSpec(variants.get(VARIANT).make(isolation=isolation).bounds, only=(P6,))


def test_anomaly_is_the_variants_shortest_p6_violation_under_snapshot_isolation():
    """Goal: the anomaly exists at snapshot isolation when a DELETE skips the conflicting
    delete files check. Method: breadth-first search for P6 alone; its shortest trace is
    the documented one and ends with the updated row alive after the DELETE."""
    spec = _variant(SNAPSHOT)
    res = explore(spec)
    assert res.verdict == "violated" and res.property == P6
    assert [label for label, _ in res.trace[1:]] == TRACE
    end = res.trace[-1][1]
    assert "row_delete" in res.message and "expected [(0, 2)]" in res.message
    assert checks.check_isolation(spec.bounds, end) == res.message


def test_serializable_rejects_the_same_schedule():
    """Goal: serializable isolation has no such anomaly even with Spark's DELETE validation.
    Method: the variant at serializable keeps P6 in every reachable state, and on the
    documented schedule the DELETE's retry ends in conflict (the UPDATE added data its
    filter reads)."""
    spec = _variant(SERIALIZABLE)
    assert explore(spec).verdict == "holds"
    end = run(spec, *(TRACE[:-4]))
    assert end.outcomes[0][0].res == CONFLICT and end.outcomes[1][0].res == COMMITTED


@pytest.mark.parametrize("isolation", [SNAPSHOT, SERIALIZABLE])
def test_the_protocol_rejects_the_delete_at_both_levels(isolation):
    """Goal: icefloe's protocol (a row delta checks for delete files added for the data
    file it names) refuses the DELETE at either level. Method: replay the schedule on the
    correct model up to the DELETE's retry; the retry ends in conflict, justified (L3)."""
    spec = IcebergSpec(iceberg.Bounds(writers=2, ops=1, kinds=("row_delete", "row_update"), faults=(),
                                      isolation=isolation))
    end = run(spec, *(TRACE[:-4]))
    assert end.outcomes[0][0].res == CONFLICT and not end.outcomes[0][0].spurious
    assert end.outcomes[1][0].res == COMMITTED
    assert all(fn(spec.bounds, end) is None for fn in checks.SAFETY_CHECKS.values())


# -- icefloe's implementation on the same schedule -------------------------------------------

def _impl_schedule(isolation: str, spark_delete: bool):
    """Row 1 in its own data file (the model's (0, 1)), row 2 in another. A DELETE of row 1
    (a position delete) is stepped to its swap; a rival UPDATE of row 1 (a position delete
    and the row written again with a new value) commits; then the DELETE goes on.
    `spark_delete`: the DELETE is validated as Spark validates a merge-on-read DELETE
    (no check for delete files added meanwhile)."""
    import pyarrow as pa
    from delete_writers import position_delete_file
    from icefloe.impl.format.parquet import write_data_file
    from icefloe.impl.table import producer as P
    from icefloe.impl.table.commit import SWAP
    from icefloe.impl.table.validation import NoNewDeletesForFiles
    from table_helpers import ARROW_SCHEMA, memory_stack, rival, rows, step_to

    class SparkDelete(P.RowDelta):
        def plan(self, c):
            ok = super().plan(c)
            self.reqs = [r for r in self.reqs if not isinstance(r, NoNewDeletesForFiles)]
            return ok

    stack = memory_stack()
    table = stack.create()
    table.append(rows([1]))
    f1 = table.plan_files()[0].data_file.file_path
    table.append(rows([2]))
    delete_cls = SparkDelete if spark_delete else P.RowDelta
    delete = table.begin(delete_cls([position_delete_file(table, [(f1, 0)])], (), [f1],
                                    row_filter="id = 1", isolation=isolation))
    step_to(delete, SWAP)

    other = rival(stack)
    location = f"{other.location}/data/updated-{isolation}.parquet"
    updated = pa.table({"id": [1], "cat": ["a"], "v": [10.0]}, schema=ARROW_SCHEMA)
    raw, data_file = write_data_file(updated, other.metadata.schema(), location)
    other.io.put_if_absent(location, raw)
    update = P.RowDelta([position_delete_file(other, [(f1, 0)])], [data_file], [f1],
                        row_filter="id = 1", isolation=isolation)
    update_outcome = other._run(update)
    delete_outcome = delete.run()
    current = rival(stack).scan()
    return update_outcome, delete_outcome, sorted(zip(current.column("id").to_pylist(),
                                                      current.column("v").to_pylist()))


@pytest.mark.parametrize("isolation", [SNAPSHOT, SERIALIZABLE])
def test_icefloe_refuses_the_delete_on_the_same_schedule(isolation):
    """Goal: the implementation does what the protocol says: the UPDATE commits, the
    DELETE ends Conflict naming the delete file the UPDATE added, and the table holds the
    updated row. Method: step the implementation through the trace's schedule."""
    from icefloe.impl.outcomes import Committed, Conflict
    update, delete, current = _impl_schedule(isolation, spark_delete=False)
    assert isinstance(update, Committed)
    assert isinstance(delete, Conflict) and "NoNewDeletesForFiles" in delete.reason, delete
    assert current == [(1, 10.0), (2, 2.0)]


def test_spark_validation_on_icefloe_shows_the_anomaly_at_snapshot_isolation():
    """Goal: the anomaly is real in a real table, not an artefact of the model: validated
    as Spark validates a merge-on-read DELETE, at snapshot isolation, both commit and the
    updated row survives the DELETE. Method: the same schedule with that validation."""
    from icefloe.impl.outcomes import Committed
    update, delete, current = _impl_schedule(SNAPSHOT, spark_delete=True)
    assert isinstance(update, Committed) and isinstance(delete, Committed)
    assert current == [(1, 10.0), (2, 2.0)]     # DELETE WHERE id = 1 committed, row 1 is there


def test_spark_validation_is_safe_at_serializable():
    """Goal: serializable rejects the schedule even with Spark's DELETE validation.
    Method: the same schedule; the DELETE's data check sees the UPDATE's new file."""
    from icefloe.impl.outcomes import Committed, Conflict
    update, delete, current = _impl_schedule(SERIALIZABLE, spark_delete=True)
    assert isinstance(update, Committed)
    assert isinstance(delete, Conflict) and "NoConflictingData" in delete.reason, delete
    assert current == [(1, 10.0), (2, 2.0)]
