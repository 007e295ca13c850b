"""The directed phase's searched instances kept on disk (conformance.coverage.cache), a run's frozen heap, and the
vacuity guard of a random search (suite.vacuity over the search's own share of a run)."""
from __future__ import annotations

import os
from dataclasses import replace

from icefloe.conformance.engines import registry
from icefloe.conformance.coverage import families as C
from icefloe.conformance.coverage import cache as G
from icefloe.conformance.suite import run as suite
from icefloe.conformance.suite.profiles import PROFILES, Profile, model_bounds
from icefloe.conformance.suite.stats import Stats

ORPHANS = next(f for f in C.FAMILIES if f.name == "orphans")


def _bounds():
    return ORPHANS.bounds(model_bounds(registry.load_engine("icefloe"), PROFILES["ci"]))


def test_a_cached_instance_is_the_searched_one_and_a_bad_file_is_searched_again(tmp_path, monkeypatch):
    """Goal: the disk cache returns exactly what the search finds, and never a damaged or
    foreign file. Method: search the orphans family's instance with the cache on, read it
    back in a cleared process cache, then damage the file and read again."""
    monkeypatch.setenv(G.ENV, str(tmp_path))
    b = _bounds()
    C.explore.cache_clear()
    first = G.explore(ORPHANS, b, False)
    [path] = tmp_path.glob("orphans-*.pickle")
    C.explore.cache_clear()
    again = G.explore(ORPHANS, b, False)
    assert again.witnesses == first.witnesses and again.nodes == first.nodes
    assert G.cover(again, False) == C.cover(first, False)
    path.write_bytes(b"not a pickle")
    C.explore.cache_clear()
    assert G.explore(ORPHANS, b, False).witnesses == first.witnesses
    assert G.key(ORPHANS, b, False) != G.key(ORPHANS, replace(b, fault_budget=b.fault_budget + 1), False)


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    """Goal: ICEFLOE_COVERAGE_CACHE=off searches every time and writes nothing. Method: a
    search with it off leaves the home's cache directory absent."""
    monkeypatch.setenv(G.ENV, "off")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert G.directory() is None
    G.explore(ORPHANS, _bounds(), False)
    assert not list(tmp_path.rglob("*.pickle"))


def test_the_cache_keeps_the_most_recently_used_files_and_no_more(tmp_path, monkeypatch):
    """Goal: the cache directory is bounded: past ENTRIES_MAX the least recently used files
    go, a file just read counts as used, and a dead writer's old temporary file goes too.
    Method: five files of another code version with ageing times (the oldest read back just
    now), a bound of three, then one real search writes its file."""
    monkeypatch.setenv(G.ENV, str(tmp_path))
    monkeypatch.setattr(G, "ENTRIES_MAX", 3)
    b = _bounds()
    C.explore.cache_clear()
    G.explore(ORPHANS, b, False)
    [real] = tmp_path.glob("orphans-*.pickle")
    old = []
    for age in range(5):
        f = tmp_path / f"faults-{age:032d}.pickle"
        f.write_bytes(b"from an older version of the code")
        os.utime(f, (1_000_000 - age, 1_000_000 - age))
        old.append(f)
    os.utime(real, (1, 1))                       # the oldest of all, until it is read
    dead = tmp_path / "x.tmp"
    dead.write_bytes(b"half")
    os.utime(dead, (1, 1))
    C.explore.cache_clear()
    G.explore(ORPHANS, b, False)                 # a hit: touched, nothing written
    assert len(list(tmp_path.glob("*.pickle"))) == 6
    C.explore.cache_clear()
    G.explore(ORPHANS, replace(b, fault_budget=b.fault_budget + 1), False)   # a miss: written, then pruned
    left = sorted(f.name for f in tmp_path.iterdir())
    assert len(left) == 3 and real.name in left and old[0].name in left, left
    assert not dead.exists() and not any(f.exists() for f in old[1:])
    assert G.prune(tmp_path, 1) and len(list(tmp_path.iterdir())) == 1


def test_the_cache_is_bounded_in_bytes_too(tmp_path):
    """Goal: past BYTES_MAX the least recently used files go, whatever their count, and the
    newest stays even if it alone is larger. Method: four files of 1,000 bytes with ageing
    times, pruned at 2,500 bytes, then at 10 bytes."""
    files = []
    for age in range(4):
        f = tmp_path / f"faults-{age:032d}.pickle"
        f.write_bytes(b"x" * 1000)
        os.utime(f, (1_000_000 - age, 1_000_000 - age))
        files.append(f)
    gone = G.prune(tmp_path, entries_max=100, bytes_max=2500)
    assert sorted(gone) == sorted(files[2:]) and all(f.exists() for f in files[:2])
    assert G.prune(tmp_path, entries_max=100, bytes_max=10) == [files[1]] and files[0].exists()


def test_a_search_that_drew_too_little_is_vacuous_without_directed_programs():
    """Goal: a custom profile without directed programs keeps the vacuity guard. Method:
    two random programs of six steps cannot inject every fault kind and run every rule."""
    tiny = Profile("tiny", examples_memory=2, examples_s3=0, steps=6, directed=False)
    result = suite.run_suite(registry.load_engine("icefloe"), "icefloe", tiny, seed=0, stores=("memory",))
    assert result.failure is None
    assert any("fault injected" in why or "never ran" in why for why in result.vacuity), result.vacuity


def test_the_search_share_of_a_run_is_what_it_did_after_the_directed_phase():
    """Goal: the deep profile's guard judges its random search alone, not the directed
    programs before it. Method: Stats.since of a copy taken in between."""
    stats = Stats()
    stats.rules["Deliver"] += 3
    stats.faults["ack_lost"] += 2
    stats.retries = 4
    before = stats.copy()
    stats.rules["Begin"] += 1
    stats.faults["ack_lost"] += 1
    search = stats.since(before)
    assert search.rules == {"Begin": 1} and search.faults == {"ack_lost": 1} and search.retries == 0
    assert PROFILES["deep"].search_guard and not PROFILES["ci"].search_guard


def test_a_cached_instance_stores_the_bounds_fields_and_not_the_models_memos(tmp_path, monkeypatch):
    """Goal: a file of the cache holds each Bounds' fields alone, not what the model memoized
    on the object while searching (megabytes: a warm plan spent seconds unpickling it). Method:
    search the orphans family's instance, unpickle its file and its programs' file, and look
    at every Bounds' attributes; the programs are equal to those searched."""
    import pickle
    from dataclasses import fields
    from icefloe.model import iceberg
    monkeypatch.setenv(G.ENV, str(tmp_path))
    C.explore.cache_clear()
    graph = G.explore(ORPHANS, _bounds(), False)
    programs = G.cover(graph, False)
    names = {f.name for f in fields(iceberg.Bounds)}
    stored_graph = pickle.loads(next(tmp_path.glob("orphans-*[0-9a-f].pickle")).read_bytes())
    stored_programs = pickle.loads(next(tmp_path.glob("orphans-*-cover.pickle")).read_bytes())
    for b in [stored_graph.bounds] + [p.bounds for p in stored_graph.witnesses.values()] + \
            [p.bounds for p in stored_programs]:
        assert set(vars(b)) == names, sorted(set(vars(b)) - names)
    assert stored_graph.witnesses == graph.witnesses and stored_programs == programs


def test_a_run_thaws_the_heap_it_froze_even_when_it_raises():
    """Goal: the objects a run keeps out of the GC's full collections are handed back after
    it, and the GC's thresholds restored, however it ends. Method: suite.frozen_heap around
    a block that raises; gc's frozen count and thresholds inside, then after."""
    import gc
    import pytest
    before = gc.get_threshold()
    with pytest.raises(RuntimeError):
        with suite.frozen_heap():
            assert gc.get_freeze_count() > 0 and gc.get_threshold()[2] >= suite.FULL_COLLECTION_EVERY
            raise RuntimeError("the run failed")
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
