"""Expiry's retention per ref (Iceberg spec "Snapshot Retention Policy" and "Snapshot
References"; spec/PROTOCOL.md 11.2.1): a ref other than main expires when its snapshot is
older than its max-ref-age-ms; a branch's own min-snapshots-to-keep / max-snapshot-age-ms win
over the call's retain_last / older_than, which replace the table's defaults. icefloe's
ExpireSnapshots is held to the model's pure function (icefloe.model.retention.expire)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from icefloe.impl.outcomes import Committed
from icefloe.model import retention as R

from table_helpers import memory_stack, rows

HOUR_MS = 3_600_000
START_MS = 1_700_000_000_000


class Clock:
    def __init__(self):
        self.now_ms = START_MS

    def __call__(self) -> int:
        return self.now_ms


def _table(clock, properties=None):
    stack = memory_stack()
    return stack.create(env=stack.env(wall_ms=clock), properties=properties)


def _model(m, now_ms, older_than_ms=None, retain_last=None) -> R.Retained:
    table = R.Table(tuple(R.Snapshot(s.snapshot_id, s.parent_snapshot_id, s.timestamp_ms) for s in m.snapshots),
                    {name: R.Ref(r.snapshot_id, r.type, r.min_snapshots_to_keep, r.max_snapshot_age_ms,
                                 r.max_ref_age_ms) for name, r in m.refs.items()},
                    dict(m.properties))
    return R.expire(table, now_ms, older_than_ms, retain_last)


def test_a_tag_older_than_its_max_ref_age_is_removed_and_main_never_is():
    """Goal: max-ref-age-ms removes a tag (and what only it kept); main, older still, stays.
    Method: a tag on the first append with a 1 h max age, main with a 1 h max ref age too;
    3 h later an expiry."""
    clock = Clock()
    table = _table(clock)
    first = table.append(rows([1])).snapshot_id
    table.create_tag("old", first, max_ref_age_ms=HOUR_MS)
    table.create_tag("young", first)
    clock.now_ms += 3 * HOUR_MS
    table.append(rows([2]))
    outcome, _ = table.expire_snapshots(older_than_ms=clock.now_ms + 1)
    assert isinstance(outcome, Committed)
    assert set(table.metadata.refs) == {"main", "young"}
    assert {s.snapshot_id for s in table.metadata.snapshots} == {first, table.metadata.current_snapshot_id}


def test_the_tables_max_ref_age_applies_to_refs_without_their_own():
    """Goal: history.expire.max-ref-age-ms is the default a ref's own setting overrides.
    Method: table default 1 h; one branch with its own 10 h; 3 h later an expiry removes
    the other branch only, and nothing else changed is a commit of the removal alone."""
    clock = Clock()
    table = _table(clock, {"history.expire.max-ref-age-ms": str(HOUR_MS)})
    first = table.append(rows([1])).snapshot_id
    table.create_branch("short", first)
    table.create_branch("long", first, max_ref_age_ms=10 * HOUR_MS)
    clock.now_ms += 3 * HOUR_MS
    outcome, deleted = table.expire_snapshots()
    assert isinstance(outcome, Committed) and deleted == []
    assert set(table.metadata.refs) == {"main", "long"}
    again = table.expire_snapshots()[0]
    assert isinstance(again, Committed) and again.attempts == 0     # a no-op: nothing left to remove


def test_a_branchs_own_min_snapshots_to_keep_wins_over_retain_last():
    """Goal: a ref-level setting overrides the call's (as Iceberg-Java's RemoveSnapshots).
    Method: a branch keeping 3 of its own, an expiry with retain_last=1 and every snapshot
    old: the branch keeps 3, main keeps 1."""
    clock = Clock()
    table = _table(clock)
    ids = [table.append(rows([i])).snapshot_id for i in range(4)]
    table.create_branch("b", ids[-1], min_snapshots_to_keep=3)
    table.append(rows([9]))
    clock.now_ms += 1000 * HOUR_MS
    table.expire_snapshots(older_than_ms=clock.now_ms, retain_last=1)
    kept = {s.snapshot_id for s in table.metadata.snapshots}
    assert kept == set(ids[1:]) | {table.metadata.current_snapshot_id}


AGES = st.one_of(st.none(), st.sampled_from([HOUR_MS // 2, HOUR_MS, 2 * HOUR_MS, 5 * HOUR_MS]))


@st.composite
def histories(draw):
    steps = draw(st.lists(st.tuples(st.sampled_from(["append", "append", "branch", "tag", "side"]),
                                    st.integers(0, 3 * HOUR_MS)), min_size=1, max_size=8))
    refs = draw(st.lists(st.tuples(st.sampled_from([None, 1, 2, 3]), AGES, AGES), min_size=8, max_size=8))
    props = draw(st.fixed_dictionaries({}, optional={
        "history.expire.max-ref-age-ms": st.sampled_from([str(HOUR_MS), str(4 * HOUR_MS)]),
        "history.expire.max-snapshot-age-ms": st.sampled_from([str(HOUR_MS), str(3 * HOUR_MS)]),
        "history.expire.min-snapshots-to-keep": st.sampled_from(["1", "2"])}))
    call = draw(st.tuples(st.one_of(st.none(), st.integers(0, 8 * HOUR_MS)), st.one_of(st.none(), st.integers(1, 3))))
    return steps, refs, props, call


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories())
def test_expiry_keeps_exactly_what_the_retention_model_keeps(history):
    """Goal: icefloe's expiry equals the model's retention function on any history of
    appends, branches (with their own retention) and tags (with their max age), table
    defaults and call options. Method: build it with a clock, expire, compare refs and
    snapshots with icefloe.model.retention.expire on the metadata before."""
    steps, refs, props, (older_by, retain_last) = history
    clock = Clock()
    table = _table(clock, props)
    n = 0
    for (kind, wait), (min_keep, max_age, ref_age) in zip(steps, refs):
        clock.now_ms += wait
        head = table.metadata.current_snapshot_id
        if kind == "append" or head is None:
            table.append(rows([n]))
        elif kind == "branch":
            table.create_branch(f"b{n}", head, min_snapshots_to_keep=min_keep, max_snapshot_age_ms=max_age,
                                max_ref_age_ms=ref_age)
        elif kind == "tag":
            table.create_tag(f"t{n}", head, max_ref_age_ms=ref_age)
        else:                                   # a commit on a side branch made before
            sides = sorted(r for r, ref in table.metadata.refs.items() if ref.type == "branch" and r != "main")
            if sides:
                table.append(rows([n]), branch=sides[0])
        n += 1
    clock.now_ms += HOUR_MS
    older_than = None if older_by is None else clock.now_ms - older_by
    want = _model(table.refresh().metadata, clock.now_ms, older_than, retain_last)
    table.expire_snapshots(older_than_ms=older_than, retain_last=retain_last)
    m = table.refresh().metadata
    assert set(m.refs) == set(want.refs)
    assert {s.snapshot_id for s in m.snapshots} == set(want.snapshots)
