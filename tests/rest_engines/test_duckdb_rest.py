"""DuckDB 1.5.5's iceberg extension writing through `icefloe serve`: what works (the SQL it
runs through a REST catalog) and, under commit faults, the finding docs/verdicts.md
explains, reproduced: a 5xx after the server applied the commit is reported as a failed
commit and DuckDB deletes the files the landed snapshot needs (duckdb-iceberg #1120's bug)."""
from __future__ import annotations

import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import duckdb_engine as D
from icefloe.conformance.testing import rest_engine_probe as P, rest_faults as F


def test_what_duckdb_writes_through_a_rest_catalog(faulty_server):
    """Goal: the evidence of what DuckDB 1.5.5 can do through REST. Method: each statement on
    a REST-attached table, its rows, and the commit requests the server saw."""
    ctx = P.context(faulty_server.url, faulty_server.warehouse)
    table = D.engine().create_table(ctx)
    con = table.connection(1)
    before = len(faulty_server.faults.history())
    con.execute(f"INSERT INTO {table.table} VALUES ('a'), ('b'), ('c')")
    first = table.current_snapshot_id()
    con.execute(f"DELETE FROM {table.table} WHERE id = 'a'")
    con.execute(f"UPDATE {table.table} SET id = 'z' WHERE id = 'b'")
    con.execute(f"MERGE INTO {table.table} t USING (SELECT 'm' AS id) s ON t.id = s.id "
                "WHEN NOT MATCHED THEN INSERT VALUES (s.id)")
    assert table.read_current().rows == ("c", "m", "z")
    assert table.read_at(first).rows == ("a", "b", "c")                        # time travel
    commits = [x for x in faulty_server.faults.history()[before:] if F.is_commit(x.method, x.path)]
    assert [(x.writer, x.path, x.client_status) for x in commits] == [(1, "/v1/transactions/commit", 204)] * 4
    for missing in ("CALL system.rollback_to_snapshot('db.t', 1)", f"CALL iceberg_expire_snapshots('{table.table}')"):
        with pytest.raises(Exception):
            con.execute(missing)                                               # no rollback, no expiry
    table.close()


@pytest.mark.parametrize("kind", [A.APPEND, A.DELETE, A.OVERWRITE])
@pytest.mark.parametrize("status", [500, 502, 504])
def test_finding_a_5xx_after_apply_is_reported_failed_and_its_files_deleted(faulty_server, status, kind):
    """Goal: the known finding reproduces. Method: the server applies writer 1's commit and
    answers `status`; DuckDB claims failure, the commit is in the table, and the table's
    current snapshot names a data or delete file DuckDB deleted."""
    result = P.probe(D.engine(), P.context(faulty_server.url, faulty_server.warehouse), faulty_server.faults,
                     F.Fault(F.FAIL_AFTER, status), kind=kind)
    assert result.outcome == A.CONFLICT and result.applied == 1 and result.landed == 1, result.line()
    assert [f[:2] for f in result.findings] == ["P8", "P4"], result.line()
    assert "No such file or directory" in result.findings[0]
    # 500 and 504 are re-sent by DuckDB's HTTP client (the retry meets 409: the first landed)
    assert result.commit_requests == (1 if status == 502 else 2)


@pytest.mark.parametrize("fault,then", [(F.Fault(F.REJECT), None), (F.Fault(F.FAIL_BEFORE, 500), None),
                                        (F.Fault(F.FAIL_BEFORE, 503), None), (F.Fault(F.DELAY, 503), "deliver"),
                                        (F.Fault(F.DUPLICATE), None)],
                         ids=["reject", "fail_before-500", "fail_before-503", "delay-deliver", "duplicate"])
def test_faults_duckdb_survives(faulty_server, fault, then):
    """Goal: the rest of DuckDB's row. Method: a probe per fault: a 409 is a conflict (DuckDB
    does not retry it); a 5xx before applying and a delayed request are re-sent by its HTTP
    client and commit once (the server refuses the stale duplicate); nothing is lost."""
    result = P.probe(D.engine(), P.context(faulty_server.url, faulty_server.warehouse), faulty_server.faults,
                     fault, then=then)
    assert result.findings == (), result.line()
    want = (A.CONFLICT, 0) if fault.kind == F.REJECT else (A.COMMITTED, 1)
    assert (result.outcome, result.landed) == want, result.line()
