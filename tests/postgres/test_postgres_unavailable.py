"""PostgreSQL refusing a catalog's writes (a role with SELECT only; a read-only session) or
unreachable: CatalogUnavailable for create, load and list, and a commit that ends as a
definite failure caused by the catalog (Conflict cause `store`, the server's error named),
never a lost race "out of attempts" (issue 14 item 4)."""
from __future__ import annotations

import socket
import uuid
from contextlib import closing

import pyarrow as pa
import pytest

from icefloe.impl.catalog.base import CatalogUnavailable, TableIdentifier
from icefloe.impl.catalog.sql import SqlCatalog
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.outcomes import STORE, Conflict
from icefloe.impl.table.table import Table, create_table

ROWS = pa.table({"id": pa.array([1, 2], pa.int64())})


def a_table(postgres, catalog_name: str, store) -> None:
    writer = SqlCatalog(postgres.dsn, name=catalog_name)
    create_table(writer, "db.t", schema_from_arrow(ROWS.schema), None, f"memory://wh/{catalog_name}/db/t", io=store)
    writer.close()


@pytest.fixture
def reader_dsn(postgres):
    """A role that may read the catalog's tables and write nothing."""
    role = f"reader_{uuid.uuid4().hex[:8]}"
    SqlCatalog(postgres.dsn, name="ddl").close()  # the Iceberg JDBC tables exist
    with closing(postgres.connect()) as conn, conn.cursor() as cur:
        cur.execute(f"CREATE ROLE {role} LOGIN")
        cur.execute(f"GRANT SELECT ON iceberg_tables, iceberg_namespace_properties TO {role}")
    yield postgres.dsn.replace("postgres@", f"{role}@")
    with closing(postgres.connect()) as conn, conn.cursor() as cur:
        cur.execute(f"REVOKE ALL ON iceberg_tables, iceberg_namespace_properties FROM {role}")
        cur.execute(f"DROP ROLE {role}")


def test_a_role_without_write_permission_reads_and_fails_writes_as_unavailable(postgres, catalog_name, reader_dsn):
    """Goal: permission denied on the catalog's tables is CatalogUnavailable for create, and a
    commit's swap refused for permission fails the commit with cause store naming the
    server's error. Method: a SELECT-only role opens the catalog (its CREATE TABLE IF NOT
    EXISTS is a no-op on existing tables), loads, creates, appends."""
    store = MemoryStore()
    a_table(postgres, catalog_name, store)
    reader = SqlCatalog(reader_dsn, name=catalog_name, init_tables=False)
    assert reader.load(TableIdentifier.parse("db.t")).startswith("memory://wh/")
    with pytest.raises(CatalogUnavailable, match="permission denied"):
        reader.create(TableIdentifier.parse("db.u"), "memory://wh/u/metadata/x.metadata.json")
    outcome = Table(reader, "db.t", store).append(ROWS)
    assert isinstance(outcome, Conflict) and outcome.cause == STORE, outcome
    assert "permission denied" in outcome.reason and "out of attempts" not in outcome.reason


def test_a_read_only_session_fails_writes_as_unavailable(postgres, catalog_name):
    """Goal: SqlCatalog(read_only=True) on PostgreSQL (default_transaction_read_only) reads, and
    its writes fail as the catalog's, named. Method: load, then append through it."""
    store = MemoryStore()
    a_table(postgres, catalog_name, store)
    reader = SqlCatalog(postgres.dsn, name=catalog_name, read_only=True)
    assert reader.load(TableIdentifier.parse("db.t"))
    outcome = Table(reader, "db.t", store).append(ROWS)
    assert isinstance(outcome, Conflict) and outcome.cause == STORE, outcome
    assert "read-only transaction" in outcome.reason


def test_an_unreachable_server_is_unavailable():
    """Goal: a PostgreSQL catalog whose server is not there is CatalogUnavailable at once,
    naming the connection error. Method: a port bound but not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        with pytest.raises(CatalogUnavailable, match="cannot connect"):
            SqlCatalog(f"postgresql://postgres@127.0.0.1:{port}/postgres")
