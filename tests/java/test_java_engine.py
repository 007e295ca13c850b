"""The Java engine adapter through `icefloe serve`: Iceberg-Java 1.10.2 runs every operation
it declares (append; overwrite and delete, copy-on-write and merge-on-read; rewrite;
rollback; expire), reads (current, time travel, incremental), and records a history the
checker accepts, with each writer's identity on its commit requests."""
from __future__ import annotations

import json
from urllib.parse import urlparse

import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import java_engine as J
from icefloe.conformance.testing.rest_server import RestServer
from icefloe.model.checks import history as H


class WriterHeaders:
    """ASGI middleware recording (method, path, writer header) of every request."""

    def __init__(self, app):
        self.app, self.seen = app, []

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope.get("headers", [])}
            self.seen.append((scope["method"], scope["path"], headers.get(J.WRITER_HEADER.lower())))
        await self.app(scope, receive, send)


@pytest.fixture
def served(tmp_path, java_worker):
    recorder = {}

    def wrap(app):
        recorder["m"] = WriterHeaders(app)
        return recorder["m"]
    with RestServer(f"sqlite:///{tmp_path}/catalog.db", str(tmp_path / "warehouse"), wrap=wrap) as server:
        yield server, recorder["m"], tmp_path


def op(kind, op_id, **kw):
    return A.OpSpec(kind, op_id, **kw)


@pytest.mark.parametrize("mode", [J.COPY_ON_WRITE, J.MERGE_ON_READ])
def test_every_declared_operation_through_icefloe_serve(served, mode):
    """Goal: the adapter drives Java's real operations through REST in both row-level modes.
    Method: one writer's program of each operation; rows, heads and history after each."""
    server, headers, tmp = served
    ctx = A.TableContext(warehouse=f"file://{tmp}/warehouse", catalog_uri=server.url,
                         access_keys={w: f"w{w}" for w in range(4)}, commit_attempts_max=2)
    table = J.JavaEngine(mode).create_table(ctx)
    run = lambda w, spec: table.begin(w, spec).run()  # noqa: E731
    a = run(1, op(A.APPEND, "1.1", rows=("1.1",)))
    run(2, op(A.APPEND, "2.1", rows=("2.1",)))
    c = run(1, op(A.APPEND, "1.2", rows=("1.2",)))
    assert all(isinstance(o, A.Committed) and o.snapshot_id for o in (a, c))
    rewrite = run(3, op(A.REWRITE, "3.1"))
    assert len(table.read_current().files) == 1 and table.current_snapshot_id() == rewrite.snapshot_id
    deleted = run(2, op(A.DELETE, "2.2", where=frozenset({"2.1"})))
    after_delete = table.read_current()
    assert after_delete.rows == ("1.1", "1.2")
    # merge-on-read hides the row with a delete file: the compacted file lives on, as a new version
    assert any("#" in f for f in after_delete.files) == (mode == J.MERGE_ON_READ)
    assert run(2, op(A.DELETE, "2.3", where=frozenset())) == A.Committed(None, 0)    # no-op: no commit
    over = run(1, op(A.OVERWRITE, "1.3", rows=("1.3",), where=None))
    assert table.read_current() .rows == ("1.3",)
    assert table.read_at(c.snapshot_id).rows == ("1.1", "1.2", "2.1")               # time travel
    assert table.read_incremental(a.snapshot_id).rows == ("1.2", "2.1")            # appends since 1.1
    assert isinstance(run(3, op(A.ROLLBACK, "3.2", target_snapshot_id=deleted.snapshot_id)), A.Committed)
    assert table.read_current().snapshot_id == deleted.snapshot_id
    run(3, op(A.EXPIRE, "3.3", retain_last=1))
    history = table.history()
    assert history.versions[-1].main == deleted.snapshot_id and history.versions[-1].snapshot_ids == (deleted.snapshot_id,)
    assert {s.op_id for s in history.snapshots.values()} >= {"1.1", "2.1", "1.2", "3.1", "2.2", "1.3"}
    assert history.snapshots[over.snapshot_id].removed_files == after_delete.files
    assert H.check_history(H.History(history, (), (), {}, ()), A.SERIALIZABLE).anomalies == []
    commits = {w for method, path, w in headers.seen if method == "POST" and path.endswith("/tables/t")}
    assert commits == {"1", "2", "3"}                     # each writer's commits carry its identity


def read_metadata_json(location: str) -> dict:
    with open(urlparse(location).path, encoding="utf-8") as f:
        return json.load(f)


def _context(server, tmp, format_version=2):
    return A.TableContext(warehouse=f"file://{tmp}/warehouse", catalog_uri=server.url,
                          access_keys={w: f"w{w}" for w in range(4)}, commit_attempts_max=2,
                          format_version=format_version)


@pytest.mark.parametrize("mode", [J.COPY_ON_WRITE, J.MERGE_ON_READ])
def test_v3_engines_commit_to_format_v3_tables(served, mode):
    """Goal: java-v3 / java-mor-v3 create format v3 tables and commit to them (merge-on-read
    deletes as deletion vectors), and declare it. Method: create, append twice, delete a row,
    overwrite; read the current metadata file and the delete files Java lists."""
    server, _, tmp = served
    engine = J.engine_mor_v3() if mode == J.MERGE_ON_READ else J.engine_v3()
    assert engine.capabilities.format_versions == frozenset({3})
    assert (A.ROW_DELETE in engine.capabilities.v3_operations) == (mode == J.MERGE_ON_READ)
    table = engine.create_table(_context(server, tmp, 3))
    run = lambda w, spec: table.begin(w, spec).run()  # noqa: E731
    first = run(1, op(A.APPEND, "1.1", rows=("1.1", "1.2")))
    run(2, op(A.APPEND, "2.1", rows=("2.1",)))
    run(1, op(A.DELETE, "1.3", where=frozenset({"1.1"})))
    assert table.read_current().rows == ("1.2", "2.1")
    metadata = read_metadata_json(table._head()[1])
    assert metadata["format-version"] == 3 and metadata["next-row-id"] >= 3
    deletes = J.worker().sql(f"SELECT file_path FROM {table.table_name(0)}.delete_files")
    assert [p.endswith(".puffin") for (p,) in deletes] == ([True] if mode == J.MERGE_ON_READ else [])
    run(2, op(A.OVERWRITE, "2.2", rows=("2.3",), where=frozenset({"1.2"})))
    assert table.read_current().rows == ("2.1", "2.3")
    assert table.read_incremental(first.snapshot_id).rows == ("2.1",)


def test_a_format_version_the_engine_does_not_declare_is_refused():
    """Goal: java (v2) never silently makes a v3 table, nor java-v3 a v2 one. Method: ask each
    for the other's version; a typed error naming both, before any Java is started."""
    ctx = A.TableContext(warehouse="file:///nowhere", catalog_uri="http://127.0.0.1:9", format_version=3)
    with pytest.raises(J.UnsupportedOperation, match="creates format v2 tables, not the v3"):
        J.engine().create_table(ctx)
    with pytest.raises(J.UnsupportedOperation, match="creates format v3 tables, not the v2"):
        J.engine_v3().create_table(A.TableContext(warehouse="file:///nowhere", catalog_uri="http://127.0.0.1:9"))


@pytest.mark.parametrize("format_version", [2, 3])
def test_table_api_reads_and_appends_equal_sparks(served, format_version):
    """Goal: the adapter's Table API path (java_tables: generic reads, AppendFiles appends)
    answers what Spark's path answers, so the faster verdict judges the same. Method: one
    merge-on-read table; appends by both paths, deletes, an overwrite; every snapshot read
    by IcebergGenerics and by Spark SQL VERSION AS OF (rows and their data files), and every
    incremental read since each snapshot by the incremental append scan and by Spark's
    start-snapshot-id read option."""
    server, _, tmp = served
    fast = J.JavaEngine(J.MERGE_ON_READ, format_version=format_version).create_table(_context(server, tmp, format_version))
    run = lambda w, spec: fast.begin(w, spec).run()  # noqa: E731
    run(1, op(A.APPEND, "1.1", rows=("1.1", "1.2", "1.3")))
    fast.table_api = False
    run(2, op(A.APPEND, "2.1", rows=("2.1", "2.2")))                 # DataFrameWriterV2
    fast.table_api = True
    run(1, op(A.DELETE, "1.4", where=frozenset({"1.2"})))
    run(2, op(A.DELETE, "2.3", where=frozenset({"1.3", "2.1"})))     # a DV replacing one (v3)
    run(1, op(A.APPEND, "1.5", rows=("1.5",)))
    run(2, op(A.OVERWRITE, "2.4", rows=("2.5",), where=frozenset({"1.1"})))
    snapshots = sorted(fast.history().snapshots)
    assert len(snapshots) == 6
    slow = J.JavaTable.__new__(J.JavaTable)
    slow.__dict__.update(fast.__dict__, table_api=False, _live={})
    for sid in snapshots:
        assert fast.read_at(sid) == slow.read_at(sid)
        assert fast.read_incremental(sid) == slow.read_incremental(sid)
    assert fast.read_current() == slow.read_current()
    assert fast.read_current().rows == ("1.5", "2.2", "2.5")
    assert any("#" in f for f in fast.read_current().files)         # a file part-deleted
