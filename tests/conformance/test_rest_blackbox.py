"""A black-box engine whose swap is a REST commit, in lockstep with the model: each commit
fault of `icefloe serve`'s fault layer is mirrored on the model as the mapping says
(reject -> SwapFails; 5xx before applying -> SwapDelayed then Drop, or SwapFails if the
engine retries; applied then 5xx or a dropped answer -> AckLost; delay -> SwapDelayed, then
Deliver or Drop; duplicate -> Swap), each Unknown is resolved as its caller would, and
engines that mishandle an unknown outcome are caught. Engine: icefloe's own operations
through the REST catalog (conformance/engines/icefloe_rest.py), on one served catalog."""
from __future__ import annotations

import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.engines import icefloe_rest as R
from icefloe.conformance.suite.profiles import PROFILES, REST, bounds_for
from icefloe.conformance.suite.runs import new_lockstep, replay
from icefloe.conformance.suite.stats import Stats
from icefloe.conformance.suite.view import END_UNKNOWN, REST as REST_VIEW, steps, view_of, visible
from icefloe.conformance.violation import InvalidProgram, Violation
from icefloe.impl.catalog.rest import RestCatalog
from icefloe.impl.outcomes import SwapRejected, SwapUnknown, Unknown
from icefloe.impl.table import commit as C
from icefloe.model import iceberg

pytest.importorskip("starlette")

WRITES = [("WriteData", 1), ("WriteManifests", 1), ("WriteManifestList", 1), ("WriteMetadata", 1)]
BEGIN = [("Begin", 1, "append")]


@pytest.fixture(scope="module")
def backends():
    b = Backends()
    yield b
    b.close()


def run(backends, program, engine=None, finish=True, check=None):
    """Run `program` on the REST store (then, with `finish`, the liveness phase, the
    history checker, every retained snapshot); the model labels the program took, and the
    Lockstep. `check(lock)` runs before the liveness phase."""
    engine = engine or R.engine_unresolving()
    lock = new_lockstep(engine, backends, REST, bounds_for(engine, PROFILES["ci"]), 0, Stats())
    taken = []
    lock.observers.append(lambda s, label, t: taken.append(label))
    try:
        for label in program:
            lock.apply(label)
        mirrored = list(taken)
        if check is not None:
            check(lock)
        if finish:
            lock.finish()
    finally:
        lock.close()
    return mirrored, lock


# (program, the model's labels it takes, resolved committed, resolved not committed)
MIRRORS = {
    "swap": (BEGIN + [("Swap", 1)], BEGIN + WRITES + [("Swap", 1)], 0, 0),
    "model SwapFails (409)": (BEGIN + [("SwapFails", 1)],
                              BEGIN + WRITES + [("SwapFails", 1), ("Retry", 1), ("WriteManifestList", 1),
                                                ("WriteMetadata", 1)], 0, 0),
    "model AckLost (applied, 500)": (BEGIN + [("AckLost", 1)],
                                     BEGIN + WRITES + [("AckLost", 1), (END_UNKNOWN, 1)], 1, 0),
    "model SwapDelayed, delivered": (BEGIN + [("SwapDelayed", 1), ("Deliver", 1, 1, 1)],
                                     BEGIN + WRITES + [("SwapDelayed", 1), (END_UNKNOWN, 1), ("Deliver", 1, 1, 1)], 1, 0),
    "model SwapDelayed, dropped": (BEGIN + [("SwapDelayed", 1), ("Drop", 1, 1, 1)],
                                   BEGIN + WRITES + [("SwapDelayed", 1), (END_UNKNOWN, 1), ("Drop", 1, 1, 1)], 0, 1),
    "reject": (BEGIN + [("CommitFault", 1, "reject", None)],
               BEGIN + WRITES + [("SwapFails", 1), ("Retry", 1), ("WriteManifestList", 1), ("WriteMetadata", 1)], 0, 0),
    "fail_before 503": (BEGIN + [("CommitFault", 1, "fail_before", 503)],
                        BEGIN + WRITES + [("SwapDelayed", 1), ("Drop", 1, 1, 1), (END_UNKNOWN, 1)], 0, 1),
    "fail_after 502": (BEGIN + [("CommitFault", 1, "fail_after", 502)],
                       BEGIN + WRITES + [("AckLost", 1), (END_UNKNOWN, 1)], 1, 0),
    "fail_after 504": (BEGIN + [("CommitFault", 1, "fail_after", 504)],
                       BEGIN + WRITES + [("AckLost", 1), (END_UNKNOWN, 1)], 1, 0),
    "lost": (BEGIN + [("CommitFault", 1, "lost", None)], BEGIN + WRITES + [("AckLost", 1), (END_UNKNOWN, 1)], 1, 0),
    "delay, delivered": (BEGIN + [("CommitFault", 1, "delay", None), ("Deliver", 1, 1, 1)],
                         BEGIN + WRITES + [("SwapDelayed", 1), (END_UNKNOWN, 1), ("Deliver", 1, 1, 1)], 1, 0),
    "duplicate": (BEGIN + [("CommitFault", 1, "duplicate", None)], BEGIN + WRITES + [("Swap", 1)], 0, 0),
}


# The same faults met by icefloe as it ships (its REST client replays a request whose answer
# was lost, with its Idempotency-Key, and the commit loop resolves what stays unknown): the
# replays are the same request sent again, released as they come.
RESOLVING = {
    "fail_before 503": (BEGIN + [("CommitFault", 1, "fail_before", 503)],
                        BEGIN + WRITES + [("AckLost", 1), ("Resolve", 1)], 1, 0),
    "fail_after 502": (BEGIN + [("CommitFault", 1, "fail_after", 502)],
                       BEGIN + WRITES + [("AckLost", 1), ("Resolve", 1)], 1, 0),
    "lost": (BEGIN + [("CommitFault", 1, "lost", None)], BEGIN + WRITES + [("AckLost", 1), ("Resolve", 1)], 1, 0),
    "delay": (BEGIN + [("CommitFault", 1, "delay", None)],
              BEGIN + WRITES + [("SwapDelayed", 1), ("Deliver", 1, 1, 1), ("Resolve", 1)], 1, 0),
    "reject": (BEGIN + [("CommitFault", 1, "reject", None)],
               BEGIN + WRITES + [("SwapFails", 1), ("Retry", 1), ("WriteManifestList", 1), ("WriteMetadata", 1)], 0, 0),
}


@pytest.mark.parametrize("engine, case", [("unresolving", c) for c in sorted(MIRRORS)] +
                         [("resolving", c) for c in sorted(RESOLVING)])
def test_each_commit_fault_is_mirrored_on_the_model(backends, engine, case):
    """Goal: each fault at the held commit, by the model's name or the layer's, takes the
    model actions of the mapping, and the Unknown it leaves is resolved the way the server
    applied it, by the engine or by its caller. Method: replay it on the icefloe REST engine
    that ends an unknown commit Unknown and on icefloe as it ships, record the model's
    labels, then the liveness phase, the history checker and every retained snapshot."""
    program, want, committed, not_committed = (MIRRORS if engine == "unresolving" else RESOLVING)[case]
    got, lock = run(backends, program, engine=R.engine_unresolving() if engine == "unresolving" else R.engine())
    assert got == want
    assert (lock.stats.unknown_resolved_committed, lock.stats.unknown_resolved_not_committed) == (committed,
                                                                                                  not_committed)
    for label in program:
        if label[0] == "CommitFault":
            assert lock.stats.faults[f"rest {label[2]}"] == 1


def test_an_unknown_commit_built_upon_resolves_as_not_landed(backends):
    """Goal: a 500 after the rival moved main is AckLost that did not apply (the server
    refused the stale requirement), the Unknown resolved as not committed. Method: writer 1
    held, writer 2 commits, writer 1's commit meets fail_after."""
    program = BEGIN + [("Begin", 2, "append"), ("Swap", 2), ("AckLost", 1)]
    got, lock = run(backends, program)
    assert got[-2:] == [("AckLost", 1), (END_UNKNOWN, 1)]
    assert (lock.stats.unknown_resolved_committed, lock.stats.unknown_resolved_not_committed) == (0, 1)


def test_a_rival_commit_makes_the_held_writer_retry(backends):
    """Goal: the server's 409 after a rival's commit is the model's failed Swap, and the
    engine's retry reaches the gate again. Method: two held appends, the second swaps first."""
    program = BEGIN + [("Begin", 2, "append"), ("Swap", 2), ("Swap", 1), ("Swap", 1)]
    commits = []
    got, _ = run(backends, program, check=lambda lock: commits.append(lock.stats.commits))
    assert got.count(("Retry", 1)) == 1 and commits == [2]


def test_commit_faults_are_offered_only_at_a_held_commit(backends):
    """Goal: a CommitFault step is refused unless the writer's commit is held at the server
    and faults are on. Method: name one before Begin and one after Heal."""
    with pytest.raises(InvalidProgram):
        run(backends, [("CommitFault", 1, "reject", None)], finish=False)
    with pytest.raises(InvalidProgram):
        run(backends, [("Heal", 0)] + BEGIN + [("CommitFault", 1, "lost", None)], finish=False)


# -- engines that mishandle an unknown outcome ---------------------------------------------

class DeleteButReportUnknown(R.UnresolvingCommit):
    """Deletes its files after a 5xx yet reports Unknown (duckdb-iceberg #1120's shape)."""

    def unknown(self, p):
        for location in p.written:
            p.io.delete(location)
        return super().unknown(p)


class RetryingCatalog(RestCatalog):
    """Takes a 5xx for a rejection and retries (iceberg-go #1603, apache/iceberg #12818)."""

    def swap(self, identifier, expected_location, new_location):
        result = super().swap(identifier, expected_location, new_location)
        if isinstance(result, SwapUnknown):
            return SwapRejected(expected_location, None, result.reason)
        return result


class KeylessRetryCatalog(RestCatalog):
    """Sends the commit again after a 5xx, as an HTTP layer retries, without an
    Idempotency-Key: the copy meets 409 although the first landed, and the commit loop,
    told "rejected", builds its next attempt (apache/iceberg #12818, #13867)."""

    def _request(self, method, path, body=None, key=None):
        return super()._request(method, path, body, None)


def flawed(commit_class=R.UnresolvingCommit, catalog=None, replays_max=0):
    def catalog_for(self, writer, store):
        return (catalog or RestCatalog)(self.ctx.catalog_uri, store, headers={A.WRITER_HEADER: str(writer)},
                                        replays_max=replays_max)
    table = type("Table", (R.UnresolvingTable,), {"commit_class": commit_class, "catalog_for": catalog_for})
    return type("Flawed", (R.IcefloeRestEngine,), {"name": "flawed", "table_class": table})()


@pytest.mark.parametrize("engine, fault, prop", [
    (R.engine_cleanup_after_unknown(), ("AckLost", 1), "P4 ReadersSeeCommitted"),
    (R.engine_cleanup_after_unknown(), ("CommitFault", 1, "lost", None), "P4 ReadersSeeCommitted"),
    (flawed(DeleteButReportUnknown), ("CommitFault", 1, "fail_after", 502), "P8 NoDanglingRefs"),
    (flawed(catalog=RetryingCatalog), ("CommitFault", 1, "fail_after", 500), "P3 NoDuplicateCommit"),
    (flawed(catalog=KeylessRetryCatalog, replays_max=1), ("CommitFault", 1, "fail_after", 502),
     "P3 NoDuplicateCommit"),
], ids=["cleanup-after-unknown, 500", "cleanup-after-unknown, lost", "delete-but-report-unknown",
        "retry-after-unknown", "keyless-http-retry"])
def test_engines_that_mishandle_an_unknown_commit_are_caught(backends, engine, fault, prop):
    """Goal: the bug classes of duckdb-iceberg #1120, apache/iceberg #12818 and iceberg-go
    #1603 are named by the property they break. Method: each flawed engine meets the fault
    that applies its commit and loses the answer."""
    with pytest.raises(Violation) as caught:
        run(backends, BEGIN + [fault], engine=engine)
    assert caught.value.prop == prop, caught.value


def test_the_unresolving_engine_reports_unknown_and_keeps_its_files(backends):
    """Goal: the unresolving REST engine stops at an unknown outcome with an Unknown naming
    its snapshot, as Iceberg-Java and pyiceberg do. Method: a lost answer, then the outcome."""
    def check(lock):
        out = lock.ops[(1, 1)].outcome
        assert isinstance(out, Unknown) and out.snapshot_id == lock.snapshot_id[(1, 1)]
    run(backends, BEGIN + [("CommitFault", 1, "lost", None)], check=check)


class _NoRetryTable(R.UnresolvingTable):
    """Makes one attempt per commit (as pyiceberg 0.12 does for a rollback)."""

    def __init__(self, engine, ctx):
        super().__init__(engine, ctx)
        self.retry = C.RetryPolicy(num_retries=0, retry_wait_ms_min=0, retry_wait_ms_max=0)


def no_retry():
    return type("NoRetry", (R.IcefloeRestEngine,), {"name": "no-retry", "table_class": _NoRetryTable})()


def test_an_engine_that_stops_retrying_ends_in_conflict_as_the_model_would(backends):
    """Goal: a Conflict after a rejection while the model has attempts left is mirrored as
    the model's Retry at the attempts made (a loop stopped early, spec/PROTOCOL.md 6.3) and
    counted; a directed program that expected the retry ends there, saying so. Method: a
    one-attempt engine meets a 409; then the same program with the retry's Swap named."""
    got, lock = run(backends, BEGIN + [("SwapFails", 1)], engine=no_retry())
    assert got[-2:] == [("SwapFails", 1), ("Retry", 1)] and lock.stats.gave_up == 1
    assert lock.ops[(1, 1)].result == "conflict"
    program = BEGIN + [("SwapFails", 1), ("Swap", 1)]
    with pytest.raises(InvalidProgram):
        replay(no_retry(), program, store=REST, backends=backends)
    lock = replay(no_retry(), program, store=REST, backends=backends, lenient=True)
    assert lock.left == "the engine left its directed program before Swap"


# -- the view a REST engine is driven by ------------------------------------------------------

def test_the_rest_view_names_the_held_commit_and_its_faults():
    """Goal: for a REST engine the program names Begin, Swap and the swap faults, never a
    write, Retry or Resolve, and an unknown swap ends the operation Unknown. Method: the
    view's steps from a writer held at its swap."""
    assert view_of(R.CAPABILITIES) == REST_VIEW
    b = bounds_for(R.engine(), PROFILES["ci"])
    assert set(b.faults) == {A.SWAP_FAIL, A.ACK_LOST, A.SWAP_DELAYED}
    s = iceberg.initial_state(b)
    (label, t, path), = [x for x in steps(b, s, REST_VIEW) if x[0] == ("Begin", 1, "append")]
    assert [lab for _, lab, _ in path] == BEGIN + WRITES and t.writers[0].phase == "swap"
    names = {lab[0] for lab, _, _ in steps(b, t, REST_VIEW) if lab[1] == 1}
    assert names == {"Swap", "SwapFails", "AckLost", "SwapDelayed"}
    for lab, u, path in steps(b, t, REST_VIEW):
        if lab[0] in ("AckLost", "SwapDelayed") and lab[1] == 1:
            assert path[-1][1] == (END_UNKNOWN, 1) and u.outcomes[0][0].res == "unknown"
    assert not visible(("Resolve", 1), REST_VIEW) and not visible(("WriteFails", 1), REST_VIEW)


def test_capabilities_tie_rest_transport_to_the_rest_store():
    """Goal: a REST transport is a black-box engine's, on the rest store. Method: the
    mismatched declarations are refused with a typed error."""
    with pytest.raises(A.EngineSpecError):
        A.Capabilities(operations=frozenset({A.APPEND}), mode=A.BLACK_BOX, stores=frozenset({"s3"}),
                       transport=frozenset({A.TRANSPORT_REST}))
    with pytest.raises(A.EngineSpecError):
        A.Capabilities(operations=frozenset({A.APPEND}), mode=A.STEPPING, stores=frozenset({"rest"}),
                       transport=frozenset({A.TRANSPORT_REST}))


def test_the_directed_plan_gives_a_rest_engine_what_it_can_reach_and_says_why_not():
    """Goal: coverage by construction for a REST engine: every commit fault kind and status
    in the rest family, the swap faults in the faults and unknowns families where the model
    has the class, and a reason for each class out of reach. Method: the plan for the icefloe REST engine at ci."""
    from icefloe.conformance.coverage import directed
    the_plan = directed.plan(R.engine(), PROFILES["ci"])
    families = {f.family.name: f for f in the_plan.families}
    rest = families["rest"]
    assert rest.reachable == rest.total and len(rest.programs) == len(rest.total) == 10
    assert {c[0] for c in rest.total} == {"reject", "fail_before", "fail_after", "lost", "delay", "duplicate"}
    faults = families["faults"]
    assert {c[2] for c in faults.reachable} == {A.SWAP_FAIL}      # an unknown one ends Unknown: no model class
    # a lost answer of an applied commit resolves committed in the model, never Unknown: its
    # classes are the rest family's (fail_after, lost); a delayed one lands or not after the end
    assert {c[1] for c in families["unknowns"].reachable} == {A.SWAP_DELAYED}
    reasons = set(faults.why_not.values()) | set(families["unknowns"].why_not.values())
    assert "fault crash not injectable at a REST commit" in reasons
    assert any("without resolving it" in why for why in reasons)
    assert set(families["orphans"].why_not.values()) == {"operation orphans not supported"}
    assert not families["transport"].reachable
