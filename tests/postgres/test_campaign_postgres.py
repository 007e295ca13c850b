"""Outcomes left unresolved on the PostgreSQL catalog (issue 14 item 8): each COMMIT fault of
faulty_sql.UnresolvedCommits (lost before or after the server ran it, sent late from the
abandoned connection), followed by a refused connection, leaves the writer Unknown, and
resolving after healing (spec/PROTOCOL.md 9.6) says landed or not as the server decided; a
bounded deep campaign on PostgreSQL is judged valid. The full one: `make campaign-deep`."""
from __future__ import annotations

import psycopg2
import pyarrow as pa
import pytest

from icefloe.conformance.campaign.run import run_campaign
from icefloe.conformance.campaign.judge import UNKNOWN
from icefloe.conformance.testing.faulty_sql import AFTER, BEFORE, STALL, UnresolvedCommits
from icefloe.impl.catalog.base import TableIdentifier
from icefloe.impl.catalog.sql import SqlCatalog, connection_factory
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.outcomes import Committed, Conflict, Unknown
from icefloe.impl.table.commit import resolve_unknown
from icefloe.impl.table.table import Table, create_table

ROWS = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
IDENT = TableIdentifier(("db",), "t")
STALL_JOIN_S = 30.0


def setup(postgres, catalog_name, faults: UnresolvedCommits):
    """A table (created without faults) and a writer whose catalog goes through `faults`."""
    store = MemoryStore()
    direct = SqlCatalog(postgres.dsn, name=catalog_name)
    create_table(direct, "db.t", schema_from_arrow(ROWS.schema), None, f"memory://wh/{catalog_name}/db/t", io=store)
    dialect, connect = connection_factory(postgres.dsn)
    wrapped = faults.wrap(connect, psycopg2.OperationalError)
    writer = SqlCatalog(name=catalog_name, dialect=dialect, connect=wrapped, init_tables=False)
    return Table(writer, "db.t", store), direct, store, wrapped


def only(kind: str, **options) -> UnresolvedCommits:
    return UnresolvedCommits(seed=0, probability=1.0, weights={kind: 1.0}, **options)


@pytest.mark.parametrize("kind, landed", [(AFTER, True), (BEFORE, False)])
def test_a_lost_commit_with_a_refused_reconnect_is_unknown_and_resolves_as_the_server_decided(
        postgres, catalog_name, kind, landed):
    """Goal: a COMMIT whose answer is lost (after the server ran it, or before it got there),
    with the writer's next connection refused, leaves the writer Unknown; resolution after
    healing says landed exactly when the server committed (a not-landed one stays unknown
    while the pointer is its base, and resolves once another commit moved it). Method: the
    schedule at probability 1 on one append; resolve; another commit; resolve again."""
    faults = only(kind)
    table, direct, store, _ = setup(postgres, catalog_name, faults)
    outcome = table.append(ROWS)
    assert isinstance(outcome, Unknown), outcome
    assert faults.injected[kind] == 1 and faults.injected["blackout"] == 1
    first = resolve_unknown(direct, IDENT, store, outcome)
    if landed:
        assert isinstance(first, Committed) and direct.load(IDENT) == outcome.attempted_locations[-1]
        return
    assert isinstance(first, Unknown)
    assert isinstance(Table(direct, "db.t", store).append(ROWS), Committed)
    assert isinstance(resolve_unknown(direct, IDENT, store, outcome), Conflict)


@pytest.mark.parametrize("commit", [True, False], ids=["commit-sent-late", "rollback"])
def test_a_commit_in_flight_past_the_writers_timeout(postgres, catalog_name, commit):
    """Goal: a COMMIT still on its way when the writer gave up (Unknown) keeps its row lock,
    then lands (resolves landed) or the connection dies first (rolled back: resolves not
    landed once the pointer moves). Method: a stall of 0.3 s sending COMMIT or ROLLBACK;
    wait for it; resolve (after another commit when rolled back)."""
    faults = only(STALL, stall_s=(0.3, 0.3), stall_commit_share=1.0 if commit else 0.0)
    table, direct, store, wrapped = setup(postgres, catalog_name, faults)
    outcome = table.append(ROWS)
    assert isinstance(outcome, Unknown), outcome
    assert wrapped.stalls.join(STALL_JOIN_S) and not wrapped.stalls.errors
    if commit:
        assert isinstance(resolve_unknown(direct, IDENT, store, outcome), Committed)
        return
    assert isinstance(Table(direct, "db.t", store).append(ROWS), Committed)
    assert isinstance(resolve_unknown(direct, IDENT, store, outcome), Conflict)


def test_without_the_refused_reconnect_the_writer_settles_a_lost_commit_itself(postgres, catalog_name):
    """Goal (a control): the refused connection is what keeps the outcome unknown; without it
    the commit loop's pointer read finds its attempt and the append is Committed. Method:
    AFTER with no blackout."""
    table, _, _, _ = setup(postgres, catalog_name, only(AFTER, blackout_connects=0))
    assert isinstance(table.append(ROWS), Committed)


def test_a_bounded_deep_campaign_on_postgresql_is_judged_valid(postgres):
    """Goal: the deep plan on the PostgreSQL catalog (files on moto through the fault proxy,
    COMMITs lost, sent late or rolled back) keeps every guarantee: 0 lost, 0 duplicated,
    0 dangling, 0 dirty, each Unknown resolved consistently. Method: 3 processes x 5
    operations against the suite's server, judged."""
    r = run_campaign(processes=3, commits=5, seed=22, plan="deep", catalog="postgresql", postgres_dsn=postgres.dsn)
    assert r.valid is True, r.summary()
    assert r.judgement.tally() == {"lost": 0, "duplicated": 0, "dangling": 0, "dirty": 0, "other": 0}
    sql = sum(v for k, v in r.faults.items() if k.startswith("sql:") and k != "sql:blackout")
    assert r.faults.get("sql:blackout", 0) == sql
    assert r.outcomes.get(UNKNOWN, 0) >= sql
    assert sum(r.unknown_resolved.values()) == r.outcomes.get(UNKNOWN, 0)
