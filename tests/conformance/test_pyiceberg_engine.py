"""pyiceberg 0.12 as a black-box engine: its adapter interleaves deterministically at the proxy,
and a bounded conformance run writes a verdict for it (whatever that verdict is)."""
from __future__ import annotations

import json
import threading

import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import registry
from icefloe.conformance import conform
from icefloe.conformance.suite.profiles import PROFILES, Profile
from icefloe.conformance.engines.pyiceberg_engine import CAPABILITIES, UnsupportedOperation, engine


@pytest.fixture(scope="module")
def s3():
    from icefloe.conformance.testing.moto_server import MotoS3Server
    from icefloe.conformance.testing.proxy import FaultProxy
    with MotoS3Server() as moto, FaultProxy(moto.endpoint_url) as proxy:
        yield moto, proxy


@pytest.fixture
def table(s3, tmp_path, request):
    moto, proxy = s3
    proxy.clear()
    ctx = A.TableContext(warehouse=f"s3://{moto.bucket}/pyi/{request.node.name}",
                         catalog_uri=f"sqlite:///{tmp_path}/catalog.db", s3_endpoint=proxy.endpoint_url,
                         access_keys={w: f"pyi-w{w}" for w in range(3)}, commit_attempts_max=2)
    handle = engine().create_table(ctx)
    yield handle, proxy, ctx
    handle.close()


def test_capabilities_are_honest():
    """Goal: the adapter claims only what pyiceberg 0.12 does. Method: read its capabilities."""
    assert CAPABILITIES.mode == A.BLACK_BOX and not CAPABILITIES.swap_over_s3
    assert A.REWRITE not in CAPABILITIES.operations and A.ORPHANS not in CAPABILITIES.operations
    assert A.READ_INCREMENTAL not in CAPABILITIES.reads
    assert "coarser" in CAPABILITIES.interleaving
    assert registry.load_engine("pyiceberg").name == "pyiceberg"


def test_held_writer_retries_on_the_base_a_rival_committed(table):
    """Goal: the proxy decides the interleaving. Method: hold writer 1 at its metadata-JSON
    PutObject, let writer 2 commit, release: writer 1's SQL swap fails once and its retry
    lands on writer 2's commit; both rows are read once."""
    from icefloe.conformance.testing.proxy import Match
    handle, proxy, ctx = table
    gate = proxy.add_gate(Match(operation="PutObject", key="*.metadata.json", client=ctx.access_key(1)))
    box = {}
    worker = threading.Thread(target=lambda: box.setdefault(
        "outcome", handle.begin(1, A.OpSpec(A.APPEND, "1.0", rows=("1.0",))).run()))
    worker.start()
    assert gate.wait_arrived(30)
    second = handle.begin(2, A.OpSpec(A.APPEND, "2.0", rows=("2.0",))).run()
    assert isinstance(second, A.Committed) and second.attempts == 1
    gate.release()
    worker.join(60)
    first = box["outcome"]
    assert isinstance(first, A.Committed) and first.attempts == 2, first
    current = handle.read_current()
    assert current.rows == ("1.0", "2.0") and current.snapshot_id == first.snapshot_id
    history = handle.history()
    assert history.snapshots[first.snapshot_id].parent_id == second.snapshot_id
    assert [history.snapshots[s].op_id for s in (second.snapshot_id, first.snapshot_id)] == ["2.0", "1.0"]


def test_overwrite_is_two_snapshots_in_one_swap_and_rollback_restores(table):
    """Goal: record what pyiceberg does for an overwrite (a delete and an append snapshot in
    one commit) and that rollback and time travel read the old state. Method: through the adapter."""
    handle, _, _ = table
    first = handle.begin(1, A.OpSpec(A.APPEND, "1.0", rows=("1.0", "1.1"))).run()
    over = handle.begin(2, A.OpSpec(A.OVERWRITE, "2.0", rows=("2.0",), where=frozenset({"1.0"}))).run()
    assert isinstance(over, A.Committed) and over.attempts == 1
    h = handle.history()
    assert h.versions[-1].main == over.snapshot_id
    tagged = [s for s in h.snapshots.values() if s.op_id == "2.0"]
    assert sorted(s.operation for s in tagged) == ["append", "overwrite"]
    assert handle.read_current().rows == ("1.1", "2.0")
    assert handle.begin(1, A.OpSpec(A.DELETE, "1.1", where=frozenset({"9.9"}))).run() == A.Committed(None, 0, None)
    back = handle.begin(1, A.OpSpec(A.ROLLBACK, "1.2", target_snapshot_id=first.snapshot_id)).run()
    assert isinstance(back, A.Committed) and back.snapshot_id is None
    assert handle.read_current().rows == ("1.0", "1.1") == handle.read_at(first.snapshot_id).rows
    with pytest.raises(UnsupportedOperation):
        handle.read_incremental(first.snapshot_id)


def test_bounded_conformance_run_writes_a_verdict(tmp_path, monkeypatch, capsys):
    """Goal: `icefloe conform --engine pyiceberg-sql` produces a verdict.json with a verdict per
    property, holds or not. Method: the ci profile bounded to one S3 example of 12 steps (a
    run this small may be judged vacuous: then the exit code is 1 and says so)."""
    monkeypatch.setitem(PROFILES, "ci", Profile("ci", examples_memory=0, examples_s3=1, steps=12, directed=False))
    report = tmp_path / "report"
    code = conform.main(["--engine", "pyiceberg-sql", "--profile", "ci", "--seed", "0", "--report", str(report),
                         "--no-progress"])
    out = capsys.readouterr().out
    verdict = json.loads((report / "verdict.json").read_text())
    assert verdict["engine"] == "pyiceberg" and verdict["profile"] == "ci"
    assert "coarser" in verdict["interleaving"]
    states = verdict["properties"]
    assert states and set(states.values()) <= {"holds", "violated", "unknown"}
    assert states["P10 IncrementalComplete"] == "unknown"  # pyiceberg 0.12 has no incremental scan
    violated = [p for p, v in states.items() if v == "violated"]
    assert code == (1 if violated or verdict["vacuity"] else 0), out
    for prop in violated:
        assert prop in out
