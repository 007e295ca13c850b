"""The exhaustive explorer on the correct protocol: properties hold, coverage is not
vacuous, counterexamples are shortest and replayable, and the CLI keeps its contract."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from icefloe.model import variants
from icefloe.model.explore import explore, main
from icefloe.model.iceberg import ICEBERG_VARIANTS
from icefloe.model.state import FAULT_KINDS

FAULT_ACTIONS = {"write_fail": "WriteFails", "swap_fail": "SwapFails", "ack_lost": "AckLost",
                 "swap_delayed": "SwapDelayed", "crash": "Crash"}


@pytest.mark.parametrize("isolation", ["serializable", "snapshot"])
def test_correct_protocol_holds_on_small_bounds(isolation):
    """Goal: every property holds for 2 writers x 1 op, all kinds, every fault kind.
    Method: exhaustive BFS; the verdict must be 'holds' with tens of thousands of states."""
    res = explore(variants.get("correct").make(writers=2, ops=1, isolation=isolation))
    assert res.verdict == "holds", (res.property, res.message)
    assert res.states > 10_000 and res.final_states > 0


def test_correct_protocol_holds_with_orphan_removal_over_three_ops():
    """Goal: orphan removal (when quiet), expiry and rollback stay safe across a sequence
    of operations, with every fault kind. Method: exhaustive BFS, 1 writer x 3 ops."""
    res = explore(variants.get("correct").make(writers=1, ops=3, orphan_runs=1))
    assert res.verdict == "holds", (res.property, res.message)
    assert res.coverage["RemoveOrphans"] > 0 and res.coverage["Crash"] > 0


def test_vacuity_guard():
    """Goal: the search is not vacuous. Method: the reachable transitions include a retry
    after a conflict, every fault kind, a delayed swap landing, and unknown outcomes that
    turned out committed as well as ones that did not land."""
    res = explore(variants.get("correct").make(writers=2, ops=1))
    for fault in FAULT_KINDS:
        assert res.coverage[FAULT_ACTIONS[fault]] > 0, fault
    assert res.events["conflict"] > 0
    assert res.events["retry after conflict"] > 0
    assert res.events["unknown resolved: committed"] > 0
    assert res.events["unknown resolved: not landed"] > 0
    assert res.events["unknown resolved on retry: conflict"] > 0
    assert res.events["delayed swap landed"] > 0
    for action in ("Begin", "WriteData", "WriteManifests", "WriteManifestList", "WriteMetadata", "Swap",
                   "Retry", "Resolve", "Deliver", "Drop"):
        assert res.coverage[action] > 0, action


def test_counterexample_is_shortest_and_replayable():
    """Goal: a violation comes with the shortest trace, replayable step by step.
    Method: the rename-commit variant's trace must replay through spec.successors and be
    no longer than any other violating path (BFS finds it at the first violating depth)."""
    spec = variants.get("rename-commit").make()
    res = explore(spec)
    assert res.verdict == "violated" and res.property == "P1 LinearHistory"
    state = res.trace[0][1]
    for label, nxt in res.trace[1:]:
        assert (label, nxt) in list(spec.successors(state))
        state = nxt
    assert spec.check_safety(state)[0] == "P1 LinearHistory"
    # no shorter path violates: re-explore with a depth cut one short of the trace
    prefix_states = {s for _, s in res.trace[:-1]}
    assert all(spec.check_safety(s) is None for s in prefix_states)


def test_cli_exit_codes_and_output(capsys):
    """Goal: the CLI's contract: 0 when all hold (with state count and coverage), 1 naming
    the violated property, 2 on usage errors. Method: call main() in-process."""
    assert main(["--writers", "1", "--ops", "1", "--faults", "none"]) == 0
    out = capsys.readouterr().out
    assert "states:" in out and "coverage" in out and "all 13 properties hold" in out
    assert main(["--variant", "no-lineage-check"]) == 1
    out = capsys.readouterr().out
    assert "VIOLATION of P3 NoDuplicateCommit" in out and "shortest counterexample" in out
    assert main(["--variant", "no-such-variant"]) == 2
    assert main(["--kinds", "teleport"]) == 2
    assert main(["--writers", "2", "--max-states", "50"]) == 2


def test_cli_list_variants_and_help():
    """Goal: --list-variants prints names one per line; --help states the bounds.
    Method: run the module as a subprocess, as a user would."""
    out = subprocess.run([sys.executable, "-m", "icefloe.model.explore", "--list-variants"],
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[0] == "correct" and set(variants.VARIANTS) == set(out)
    help_text = subprocess.run([sys.executable, "-m", "icefloe.model.explore", "--help"],
                               capture_output=True, text=True, check=True).stdout
    for word in ("--writers", "--ops", "--kinds", "--faults", "--fault-budget", "Exit codes"):
        assert word in help_text


def test_cli_json_output():
    """Goal: --json gives a machine-readable verdict. Method: parse it."""
    proc = subprocess.run([sys.executable, "-m", "icefloe.model.explore", "--writers", "1",
                           "--json"], capture_output=True, text=True)
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert data["verdict"] == "holds" and data["states"] > 0 and data["coverage"]["Swap"] > 0


def test_partial_order_reduction_keeps_every_final_state_and_verdict():
    """Goal: the reduction (Bounds.por) is sound here: same final states, same verdicts.
    Method: explore with and without it, collecting states; compare the final states
    (no successors) and check each Iceberg-shaped variant is still caught with it."""
    full = explore(variants.get("correct").make(writers=2, ops=1, kinds=("append", "rewrite", "delete")),
                   collect=True)
    spec = variants.get("correct").make(writers=2, ops=1, kinds=("append", "rewrite", "delete"), por=True)
    reduced = explore(spec, collect=True)
    assert reduced.states < full.states
    finals = lambda res, sp: {s for s in res.reachable if not list(sp.successors(s))}  # noqa: E731
    full_spec = variants.get("correct").make(writers=2, ops=1, kinds=("append", "rewrite", "delete"))
    assert finals(reduced, spec) == finals(full, full_spec)
    for name, v in variants.VARIANTS.items():
        if v.breaks and name in ICEBERG_VARIANTS:
            res = explore(v.make(por=True))
            assert res.verdict == "violated" and res.property in v.breaks, name


class _Reads:
    """A state that records which of its fields a check reads."""

    def __init__(self, state, log):
        object.__setattr__(self, "_state", state)
        object.__setattr__(self, "_log", log)

    def __getattr__(self, name):
        self._log.add(name)
        return getattr(self._state, name)


def _small_spaces():
    for kw in (dict(writers=2, ops=1), dict(writers=1, ops=3, orphan_runs=1)):
        spec = variants.get("correct").make(**kw)
        yield spec, explore(spec, collect=True).reachable


def test_declared_check_reads_cover_what_every_check_reads():
    """Goal: the explorer may keep a parent's verdict only for checks whose fields did not
    change, so the declared read sets must cover every read. Method: run every safety
    check on every reachable state of two small spaces through a recording proxy and
    compare the fields read with IcebergSpec.CHECK_READS (metas aside: see the next test)."""
    from icefloe.model import checks
    from icefloe.model.spec import IcebergSpec
    for spec, states in _small_spaces():
        for s in states:
            for name, fn in checks.SAFETY_CHECKS.items():
                log = set()
                fn(spec.bounds, _Reads(s, log))
                declared = set(IcebergSpec.CHECK_READS[name]) | {"metas"}
                assert log <= declared, (name, log - declared)
                if name in checks.HISTORY_CHECKS:
                    assert log - {"metas"} <= set(IcebergSpec.HISTORY_READS), (name, log)


def test_a_transition_only_adds_metadata_versions():
    """Goal: the premise of the parent-verdict reuse: along any transition every metadata
    version keeps its record (metas only grows). Method: every transition of two small
    spaces, with and without faults."""
    from icefloe.model.state import mget
    for spec, states in _small_spaces():
        for s in states:
            for _, t in spec.successors(s):
                for mid, meta in s.metas:
                    assert mget(t.metas, mid) is meta


def test_parent_verdict_reuse_changes_no_verdict():
    """Goal: checking a successor with its parent's help gives the verdict a full check
    gives. Method: every transition from a passing state, in the correct model's small
    spaces and in every Iceberg-shaped flawed variant (where the verdicts are violations)."""
    specs = [spec for spec, _ in _small_spaces()]
    specs += [v.make() for name, v in variants.VARIANTS.items() if v.breaks and name in ICEBERG_VARIANTS]
    compared = 0
    for spec in specs:
        fresh = type(spec)(spec.bounds)          # an empty history-verdict cache each time
        for s in explore(spec, collect=True, max_states=20_000).reachable:
            if fresh.check_safety(s) is not None:
                continue
            for _, t in spec.successors(s):
                full = type(spec)(spec.bounds).check_safety(t)
                assert fresh.check_safety(t, s) == full, (t, full)
                compared += 1
    assert compared > 10_000


def test_parallel_search_is_the_same_search():
    """Goal: splitting the search between processes changes nothing it finds. Method:
    one process, two and three forked workers, and the exact (state-keyed) search explore
    one space; states, transitions, final states, depth, coverage and events are equal;
    each flawed variant is still caught, with a counterexample that replays."""
    spec = variants.get("correct").make(writers=2, ops=1)
    one = explore(spec)
    runs = [explore(spec, workers=2), explore(spec, workers=3), explore(spec, exact=True)]
    for r in runs:
        assert (r.verdict, r.states, r.transitions, r.final_states, r.depth) == \
            (one.verdict, one.states, one.transitions, one.final_states, one.depth)
        assert r.coverage == one.coverage and r.events == one.events
    assert runs[-1].exact and runs[-1].collision_bound == 0 and 0 < one.collision_bound < 1e-9
    for name, v in variants.VARIANTS.items():
        if not v.breaks:
            continue
        spec = v.make()
        res = explore(spec, workers=2)
        assert res.verdict == "violated" and res.property in v.breaks, name
        state = res.trace[0][1]
        for label, nxt in res.trace[1:]:
            assert (label, nxt) in list(spec.successors(state)), name
            state = nxt
        assert len(res.trace) - 1 == len(explore(spec).trace) - 1, name   # still a shortest one
