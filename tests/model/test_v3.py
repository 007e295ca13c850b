"""The v3 model (model/v3.py) and its properties (model/checks/v3.py, spec/PROPERTIES.md
P11-P14 and the v3 readings of P6 and L3): hand-built counterexamples each check must
reject, directed schedules of the bugs the flawed variants reproduce, and exploration of
the correct protocol under both DV policies."""
from __future__ import annotations

import pytest

from icefloe.model import v3
from icefloe.model.checks import v3 as C
from icefloe.model.explore import explore


def run(spec, *labels):
    """Take the steps named by `labels` (each a prefix of an enabled action's label) from
    the initial state; return the states along the way."""
    s = spec.initial()[0]
    trail = [s]
    for want in labels:
        found = [t for lab, t in spec.successors(s) if lab[:len(want)] == want]
        assert len(found) == 1, (want, [lab for lab, _ in spec.successors(s)])
        s = found[0]
        trail.append(s)
    return trail


def commit(w, *begin):
    """The steps of one uncontended attempt of writer w (Begin with its pick)."""
    return [("Begin", w) + begin, ("WriteData", w), ("WriteMetadata", w), ("Swap", w)]


def outcome(s, w):
    return s.outcomes[w - 1].res


def with_version(s, change):
    """s with one more committed version: the current one changed by `change(meta)`."""
    m = v3.meta(s, s.cat)
    mid = (9, 1, len(s.hist))
    return s._replace(cat=mid, hist=s.hist + (mid,), metas=s.metas | {(mid, change(m)._replace(prev=s.cat))})


B = v3.make(roles=("row_delete", "row_delete", "rewrite", "append"))


def test_correct_state_passes_every_check():
    """Goal: the counterexamples below fail by their tampering alone. Method: a state the
    correct protocol reaches after a delete, a replacing delete and an append passes all."""
    s = run(B, *commit(1, (0, 1), 1), *commit(2, (0, 1), 2), *commit(4))[-1]
    assert [outcome(s, w) for w in (1, 2, 4)] == ["committed"] * 3
    assert all(f(B.bounds, s) is None for f in C.SAFETY_CHECKS.values())


def _base():
    return run(B, *commit(1, (0, 1), 1))[-1]


def test_check_one_live_dv_rejects_two_dvs_on_a_file():
    """Goal: P11 fails on two live DVs for one data file. Method: add a second DV."""
    s = with_version(_base(), lambda m: m._replace(dvs=m.dvs | {v3.DV((9, 1, 9), (0, 1), frozenset({2}))}))
    assert "2 live DVs" in C.check_one_live_dv(B.bounds, s)


def test_check_deleted_rows_stay_deleted_rejects_a_dv_that_drops_a_position():
    """Goal: P12 fails when a replacing DV lacks a position of the old one. Method: replace
    the DV {1} by {2}."""
    s = with_version(_base(), lambda m: m._replace(dvs=frozenset({v3.DV((9, 1, 9), (0, 1), frozenset({2}))})))
    assert "undeletes positions [1]" in C.check_deleted_rows_stay_deleted(B.bounds, s)


def test_check_deleted_rows_stay_deleted_rejects_a_row_back_through_another_file():
    """Goal: P12 fails when a deleted row is live again in another file (a compaction that
    copied a deleted row). Method: a version whose new file holds the deleted row."""
    s = _base()
    s = s._replace(content=s.content | {((9, 1), (v3.Row((0, 1, 1), 0),))})
    s = with_version(s, lambda m: m._replace(files=m.files + (((9, 1), 2),), next_row_id=3))
    assert "is live again" in C.check_deleted_rows_stay_deleted(B.bounds, s)


def test_check_row_ids_unique_rejects_a_reused_id_and_a_changed_id():
    """Goal: P13 fails when an id names two rows over the history, and when a row's id
    changes. Method: an added file whose first-row-id reuses 0; a materialised id 7."""
    s = _base()
    s1 = s._replace(content=s.content | {((9, 1), (v3.Row((9, 1, 1), v3.NO_ID),))})
    s1 = with_version(s1, lambda m: m._replace(files=m.files + (((9, 1), 0),), next_row_id=3))
    assert "names row" in C.check_row_ids_unique(B.bounds, s1)
    s2 = s._replace(content=s.content | {((9, 1), (v3.Row((0, 1, 2), 7),))})
    s2 = with_version(s2, lambda m: m._replace(files=(((9, 1), 2),), dvs=frozenset(), next_row_id=3))
    assert "has _row_id 1 and 7" in C.check_row_ids_unique(B.bounds, s2)


def test_check_next_row_id_exact_rejects_a_wrong_growth_and_a_range_outside():
    """Goal: P14 fails when next-row-id grows by other than the rows added, or an added
    file's range lies outside. Method: grow by 2 for one row; a first-row-id below the base's."""
    s = _base()
    s = s._replace(content=s.content | {((9, 1), (v3.Row((9, 1, 1), v3.NO_ID),))})
    bad_growth = with_version(s, lambda m: m._replace(files=m.files + (((9, 1), 2),), next_row_id=4))
    assert "plus the rows added is 3" in C.check_next_row_id_exact(B.bounds, bad_growth)
    bad_range = with_version(s, lambda m: m._replace(files=m.files + (((9, 1), 1),), next_row_id=3))
    assert "outside the ids" in C.check_next_row_id_exact(B.bounds, bad_range)


def test_check_isolation_rejects_a_delete_whose_row_lives_on():
    """Goal: P6 (v3) fails when a row_delete's row is still live after it. Method: a
    version recording a row_delete of position 2 that changed nothing."""
    s = with_version(_base(), lambda m: m._replace(op=v3.OpInfo("row_delete", m.prev, (0, 1), 2, v3.NO_FILE)))
    assert "row_delete of (0, 1), position 2" in C.check_isolation(B.bounds, s)


def test_check_no_spurious_conflict_rejects_an_unjustified_conflict():
    """Goal: L3 (v3) fails on an outcome marked spurious. Method: mark one."""
    s = _base()
    s = s._replace(outcomes=s.outcomes[:2] + (v3.OpResult("conflict", True),) + s.outcomes[3:])
    assert "writer 3's rewrite" in C.check_no_spurious_conflict(B.bounds, s)


def test_conflict_policy_refuses_a_second_dv_and_merge_policy_merges_it():
    """Goal: the two DV policies an engine may declare: under `conflict` the second of two
    concurrent deletes on one file fails its validation; under `merge` it merges the first
    one's DV and both rows are gone. Method: the same schedule under both policies."""
    steps = [("Begin", 1, (0, 1), 1), ("Begin", 2, (0, 1), 2), *commit(1)[1:], *commit(2)[1:], ("Retry", 2)]
    conflict = run(v3.make(roles=("row_delete", "row_delete")), *steps)[-1]
    assert outcome(conflict, 2) == "conflict" and not conflict.outcomes[1].spurious
    spec = v3.make(roles=("row_delete", "row_delete"), dv_policy="merge")
    merged = run(spec, *steps, ("WriteData", 2), ("WriteMetadata", 2), ("Swap", 2))[-1]
    assert outcome(merged, 2) == "committed"
    m = v3.meta(merged, merged.cat)
    assert m.dvs == {v3.DV((2, 1, 2), (0, 1), frozenset({1, 2}))} and v3.live_keys(merged, m) == ()


def test_merge_policy_never_merges_an_overwrites_dv():
    """Goal: under `merge`, a delete over a concurrent update of its row (an overwrite's DV)
    still conflicts: its row lives on in the update's new data file. Method: the schedule."""
    spec = v3.make(roles=("row_delete", "row_update"), dv_policy="merge")
    s = run(spec, ("Begin", 1, (0, 1), 1), *commit(2, (0, 1), 1), *commit(1)[1:], ("Retry", 1))[-1]
    assert outcome(s, 1) == "conflict"
    flawed = v3.make(roles=("row_delete", "row_update"), dv_policy="merge", variant="merge-over-overwrite-dv")
    t = run(flawed, ("Begin", 1, (0, 1), 1), *commit(2, (0, 1), 1), *commit(1)[1:], ("Retry", 1),
            ("WriteData", 1), ("WriteMetadata", 1), ("Swap", 1))[-1]
    assert outcome(t, 1) == "committed" and "leaves rows" in C.check_isolation(flawed.bounds, t)


def test_retried_append_takes_first_row_id_from_the_base_it_commits_on():
    """Goal: row lineage on retry (apache/iceberg-go #1021): after a concurrent append, the
    retry's file gets the next free ids; the flawed variant reuses the stale ones. Method:
    the same schedule on the protocol and on stale-first-row-id-on-retry."""
    steps = [("Begin", 1), ("WriteData", 1), *commit(2), ("WriteMetadata", 1), ("Swap", 1), ("Retry", 1),
             ("WriteMetadata", 1), ("Swap", 1)]
    ok = run(v3.make(roles=("append", "append")), *steps)[-1]
    m = v3.meta(ok, ok.cat)
    assert dict(m.files)[(1, 1)] == 3 and dict(m.files)[(2, 1)] == 2 and m.next_row_id == 4
    flawed = v3.make(roles=("append", "append"), variant="stale-first-row-id-on-retry")
    bad = run(flawed, *steps)[-1]
    assert dict(v3.meta(bad, bad.cat).files)[(1, 1)] == 2
    assert "names row" in C.check_row_ids_unique(flawed.bounds, bad)


def test_compaction_keeps_row_ids_and_is_not_stalled_by_dvs_replacing_each_other_elsewhere():
    """Goal: apache/iceberg #17764's window: a compaction of file (0, 2) begins, then two
    deletes on (0, 1) commit one after the other (the second DV replaces the first); the
    protocol's compaction commits, its rows keep their ids; validation over the whole
    window conflicts spuriously. Method: the schedule on both."""
    steps = [("Begin", 3, (0, 2)), ("WriteData", 3), *commit(1, (0, 1), 1), *commit(2, (0, 1), 2),
             ("WriteMetadata", 3), ("Swap", 3), ("Retry", 3)]
    spec = v3.make(roles=("row_delete", "row_delete", "rewrite"), data_files=2)
    s = run(spec, *steps, ("WriteMetadata", 3), ("Swap", 3))[-1]
    assert [outcome(s, w) for w in (1, 2, 3)] == ["committed"] * 3
    assert v3.rows_of(s, (3, 1)) == (v3.Row((0, 2, 1), 2),)
    assert all(f(spec.bounds, s) is None for f in C.SAFETY_CHECKS.values())
    flawed = v3.make(roles=("row_delete", "row_delete", "rewrite"), data_files=2,
                     variant="dv-validation-over-window")
    t = run(flawed, *steps)[-1]
    assert outcome(t, 3) == "conflict" and t.outcomes[2].spurious


def test_replacement_dv_must_remove_the_old_one():
    """Goal: apache/iceberg-go #1868: a second delete on a file leaves one live DV holding
    both positions; the flawed variant leaves two. Method: two deletes one after the other."""
    steps = [*commit(1, (0, 1), 1), *commit(2, (0, 1), 2)]
    s = run(v3.make(roles=("row_delete", "row_delete")), *steps)[-1]
    assert v3.meta(s, s.cat).dvs == {v3.DV((2, 1, 1), (0, 1), frozenset({1, 2}))}
    flawed = v3.make(roles=("row_delete", "row_delete"), variant="replacement-dv-keeps-old")
    t = run(flawed, *steps)[-1]
    assert "2 live DVs" in C.check_one_live_dv(flawed.bounds, t)


@pytest.mark.parametrize("policy", ["conflict", "merge"])
def test_correct_protocol_holds_on_the_v3_instances(policy):
    """Goal: every v3 property holds with copy-on-write, an update and an append, and on
    #17764's two-file instance, under both policies. Method: explore (the four-writer
    instance is explored by tests/tla/test_v3_agreement.py)."""
    for roles, files in ((("cow_delete", "row_update", "append"), 1),
                         (("row_delete", "row_delete", "rewrite"), 2)):
        res = explore(v3.make(roles=roles, dv_policy=policy, data_files=files))
        assert res.verdict == "holds", (roles, res.property, res.message)
        assert res.events["retry: next attempt"] and res.events["retry: conflict"]


@pytest.mark.parametrize("name", sorted(v3.V3_VARIANT_CASES))
def test_v3_variant_is_caught_and_the_protocol_holds_on_its_instance(name):
    """Goal: each flawed v3 variant is caught by a property it declares, and the correct
    protocol keeps every property on the same instance. Method: explore both."""
    kw, breaks = v3.V3_VARIANT_CASES[name]
    res = explore(v3.make(**kw, variant=name))
    assert res.verdict == "violated" and res.property in breaks, (res.property, res.message)
    assert explore(v3.make(**kw)).verdict == "holds"


def test_cli_explores_the_v3_model_with_its_own_bounds(capsys):
    """Goal: `python -m icefloe.model.explore` runs the v3 model: its roles, DV policy and
    data files as options; a flawed variant exits 1 naming its property; a v2-only bound is
    refused (exit 2). Method: call main()."""
    from icefloe.model import explore as cli
    assert cli.main(["--variant", "v3-correct", "--roles", "cow_delete,row_update,append",
                     "--dv-policy", "merge", "--workers", "1"]) == 0
    assert "states: 2228" in capsys.readouterr().out
    assert cli.main(["--variant", "dv-validation-over-window", "--workers", "1"]) == 1
    assert "VIOLATION of L3 NoSpuriousConflict" in capsys.readouterr().out
    assert cli.main(["--variant", "v3-correct", "--roles", "append,unknown"]) == 2
    assert cli.main(["--variant", "v3-correct", "--writers", "3"]) == 2
    assert cli.main(["--variant", "v3-correct", "--roles", "row_delete,row_update,rewrite",
                     "--position-deletes", "2", "--workers", "1"]) == 0
    assert "states: 1563" in capsys.readouterr().out
    assert cli.main(["--position-deletes", "2", "--writers", "2"]) == 2       # a v3 bound to the v2 model


UP = v3.make(roles=("row_delete", "row_delete"), position_deletes=2)


def test_upgraded_bootstrap_reads_position_deletes_and_has_no_row_ids():
    """Goal: the upgraded table starts as spec/PROTOCOL.md 19.8 says. Method: read its initial
    version: four rows, two deleted by position delete files, no first-row-id, next-row-id 0."""
    s = UP.initial()[0]
    m = v3.meta(s, s.cat)
    assert m.files == (((0, 1), v3.NO_ID),) and m.next_row_id == 0 and not m.dvs
    assert {(d.file, d.positions) for d in m.pos_deletes} == {((0, 1), frozenset({1})), ((0, 1), frozenset({2}))}
    assert v3.live(s, m) == [((0, 1), 3), ((0, 1), 4)]
    assert v3.row_id(s, m, (0, 1), 3) == v3.NO_ID


def test_dv_merges_the_position_deletes_and_removes_them_in_one_snapshot():
    """Goal: a DV for a file with position delete files holds their positions and replaces
    them (19.8), and the first v3 commit assigns the upgraded file's ids. Method: one delete."""
    s = run(UP, *commit(1, (0, 1), 3))[-1]
    m = v3.meta(s, s.cat)
    assert m.dvs == {v3.DV((1, 1, 1), (0, 1), frozenset({1, 2, 3}))} and m.pos_deletes == frozenset()
    assert m.files == (((0, 1), 0),) and m.next_row_id == 4
    assert v3.live_keys(s, m) == ((0, 1, 4),)
    assert all(f(UP.bounds, s) is None for f in C.SAFETY_CHECKS.values())


def test_dv_ignoring_position_deletes_brings_their_rows_back():
    """Goal: P12 rejects a DV that drops the position deletes it supersedes (variant
    dv-ignores-position-deletes). Method: the same delete under the variant; the checks."""
    flawed = v3.make(roles=("row_delete", "row_delete"), position_deletes=2, variant="dv-ignores-position-deletes")
    s = run(flawed, *commit(1, (0, 1), 3))[-1]
    assert v3.meta(s, s.cat).dvs == {v3.DV((1, 1, 1), (0, 1), frozenset({3}))}
    assert "undeletes positions [1, 2]" in C.check_deleted_rows_stay_deleted(flawed.bounds, s)


@pytest.mark.parametrize("policy", ["conflict", "merge"])
def test_upgraded_instances_hold_every_property(policy):
    """Goal: the correct protocol keeps P11-P14, P6 and L3 on the upgraded table. Method:
    explore a delete, an update and a compaction (and two merging deletes) exhaustively."""
    for roles in (("row_delete", "row_update", "rewrite"), ("row_delete", "row_delete")):
        res = explore(v3.make(roles=roles, position_deletes=2, dv_policy=policy))
        assert res.verdict == "holds", (roles, res.property, res.message)


def test_an_update_retried_after_the_upgraded_ids_were_assigned_gets_a_new_row_id():
    """Goal: record the open edge of 19.8 (a row update that read a null _row_id and retries
    after another file's commit assigned ids changes the row's id). Method: explore it."""
    res = explore(v3.make(roles=("row_delete", "row_update", "append"), position_deletes=1))
    assert res.verdict == "violated" and res.property == "P13 RowIdsUnique", (res.property, res.message)
    labels = [lab for lab, _ in res.trace[1:]]
    assert ("Retry", 2) in labels and labels[-1] == ("Swap", 2), labels
