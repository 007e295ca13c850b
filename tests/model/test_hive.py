"""The Hive directory-listing table (model/hive.py): each anomaly found by the explorer
with a short trace, and a control in which the model has nothing to find."""
from __future__ import annotations

from dataclasses import replace

from icefloe.model import hive, variants
from icefloe.model.explore import explore


def shortest(prop: str, **bounds):
    spec = variants.get("hive-listing").make(**bounds)
    res = explore(replace(spec, only=(prop,)))
    assert res.verdict == "violated" and res.property == prop, (prop, res.verdict, res.message)
    return res, [lab for lab, _ in res.trace[1:]]


def test_variant_caught_by_listing_reader_in_two_steps():
    """Goal: hive-listing is caught with P4 at once; method: BFS on the registered bounds."""
    res = explore(variants.get("hive-listing").make())
    assert res.property == "P4 ReadersSeeCommitted"
    assert [lab for lab, _ in res.trace[1:]] == [("Begin", 1, "append"), ("WriteFile", 1)]


def test_overwrite_shows_an_empty_table():
    """Goal: a reader between an overwrite's delete and write sees nothing; method: P4 with overwrites only."""
    res, labels = shortest("P4 ReadersSeeCommitted", kinds=("overwrite",))
    assert labels == [("Begin", 1, "overwrite"), ("DeleteOld", 1)]
    assert res.trace[-1][1].dir == ()


def test_overwrite_concurrent_with_append_loses_rows():
    """Goal: an overwrite racing an append loses the append's rows; method: shortest P2 trace."""
    res, labels = shortest("P2 NoLostCommit")
    assert {lab[1] for lab in labels} == {1, 2}
    begins = [lab[2] for lab in labels if lab[0] == "Begin"]
    assert sorted(begins) == ["append", "overwrite"]
    final = res.trace[-1][1]
    lost = final.acked_rows - set(hive.rows_of(final.dir))
    assert lost and all(r[0] != 0 for r in lost)
    assert len(labels) <= 7


def test_overwrite_replaces_a_value_it_never_read():
    """Goal: nothing validates an overwrite's read set; method: shortest P5 trace (it read half an append)."""
    res, labels = shortest("P5 ValidationSound")
    assert labels == [("Begin", 1, "append"), ("WriteFile", 1), ("Begin", 2, "overwrite"),
                      ("DeleteOld", 2), ("WriteFile", 2)]
    assert "(1, 1, 1)" in res.message.split("but replaced")[0]


def test_completion_commits_another_append_half_written():
    """Goal: a completion folds in another writer's partial files (P6); method: shortest P6 trace."""
    res, labels = shortest("P6 Isolation", kinds=("append",))
    assert [lab[0] for lab in labels].count("Begin") == 2
    final = res.trace[-1][1]
    assert final.writers[1].phase == hive.WRITE and (2, 1, 1) in hive.rows_of(final.hist[-1].listing)


def test_file_name_rebound_across_committed_values():
    """Goal: time travel by file name is not immutable (P7); method: shortest P7 trace, one writer suffices."""
    res, labels = shortest("P7 TimeTravelImmutable", writers=1, kinds=("overwrite",), reads=0)
    assert labels == [("Begin", 1, "overwrite"), ("DeleteOld", 1), ("WriteFile", 1)]
    assert "(1, 0)" in res.message


def test_reader_finds_listed_files_gone():
    """Goal: a list-then-open reader hits deleted files (P8); method: shortest P8 trace."""
    res, labels = shortest("P8 NoDanglingRefs", kinds=("overwrite",))
    assert labels.index(("ReadList", 0)) < labels.index(("DeleteOld", 1))


def test_broken_properties_are_exactly_the_declared_ones():
    """Goal: the registry's breaks for hive-listing are what the whole graph shows; method: full search."""
    spec = variants.get("hive-listing").make()
    from icefloe.model.hudi import properties_broken
    assert set(properties_broken(spec)) == set(variants.get("hive-listing").breaks)


def test_lone_single_file_appends_hold_everything():
    """Goal: the model is not broken by construction; method: one writer, one-file appends, no reader: all hold."""
    res = explore(variants.get("hive-listing").make(writers=1, ops=2, kinds=("append",),
                                                    append_files=1, reads=0))
    assert res.verdict == "holds", res.message
    assert res.final_states >= 1


def test_not_applicable_properties_are_named():
    """Goal: P1 and P10 are declared n/a, not silently skipped; method: compare the check tables."""
    checked = set(hive.SAFETY_CHECKS) | set(hive.NOT_APPLICABLE)
    assert len(checked) == 11 and not set(hive.SAFETY_CHECKS) & set(hive.NOT_APPLICABLE)
