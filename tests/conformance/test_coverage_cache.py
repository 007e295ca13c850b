"""The directed phase's searched instances kept on disk (conformance.graph_cache), and the
vacuity guard of a random search (suite.vacuity over the search's own share of a run)."""
from __future__ import annotations

from dataclasses import replace

from icefloe.conformance import adapter as A, coverage as C, graph_cache as G, suite
from icefloe.conformance.profiles import PROFILES, Profile, model_bounds
from icefloe.conformance.stats import Stats

ORPHANS = next(f for f in C.FAMILIES if f.name == "orphans")


def _bounds():
    return ORPHANS.bounds(model_bounds(A.load_engine("icefloe"), PROFILES["ci"]))


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


def test_a_search_that_drew_too_little_is_vacuous_without_directed_programs():
    """Goal: a custom profile without directed programs keeps the vacuity guard. Method:
    two random programs of six steps cannot inject every fault kind and run every rule."""
    tiny = Profile("tiny", examples_memory=2, examples_s3=0, steps=6, directed=False)
    result = suite.run_suite(A.load_engine("icefloe"), "icefloe", tiny, seed=0, stores=("memory",))
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
