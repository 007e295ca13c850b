"""The S3 catalog when S3 refuses (403 AccessDenied) or fails (every request 503, connections
reset): CatalogUnavailable for load and create, and a commit that ends as a definite failure
caused by the store (Conflict cause `store`, S3's error named), never NoSuchTable and never a
lost race (issue 14 item 4)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from icefloe.conformance.testing.proxy import Match, Reject, Reset, Rule
from icefloe.impl.catalog.base import CatalogUnavailable, TableIdentifier
from icefloe.impl.catalog.s3 import S3Catalog
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.outcomes import STORE, Conflict
from icefloe.impl.table.table import Table, create_table

from conftest import BUCKET

ROWS = pa.table({"id": pa.array([1, 2], pa.int64())})


@pytest.mark.parametrize("fault", [Reject(403), Reject(503), Reset()], ids=["403", "503", "reset"])
def test_a_refusing_or_failing_s3_is_unavailable_never_no_such_table(moto_s3, proxy, store_for, prefix, fault):
    """Goal: load and create through an S3 that refuses or fails every request are
    CatalogUnavailable naming what S3 said. Method: a fault proxy rule on every request."""
    catalog = S3Catalog(store_for(proxy.endpoint_url), f"s3://{BUCKET}/{prefix}")
    proxy.add_rule(Rule(fault))
    ident = TableIdentifier(("db",), "t")
    with pytest.raises(CatalogUnavailable) as caught:
        catalog.load(ident)
    if isinstance(fault, Reject):
        assert str(fault.status) in str(caught.value)
    with pytest.raises(CatalogUnavailable):
        catalog.create(ident, f"s3://{BUCKET}/{prefix}/db.db/t/metadata/x.metadata.json")


def test_a_swap_refused_with_access_denied_fails_the_commit_as_unavailable(moto_s3, proxy, store_for, prefix):
    """Goal: a commit whose pointer write S3 refuses (403) ends Conflict with cause store and
    S3's AccessDenied named, not "out of attempts" after retrying a lost race. Method: create
    the table directly, then refuse every conditional PUT at the proxy and append."""
    store = store_for(proxy.endpoint_url)
    catalog = S3Catalog(store, f"s3://{BUCKET}/{prefix}")
    create_table(catalog, "db.t", schema_from_arrow(ROWS.schema), None, f"s3://{BUCKET}/{prefix}/db.db/t",
                 io=store)
    proxy.add_rule(Rule(Reject(403), Match(operation="ConditionalPutObject", key="*pointer.json")))
    outcome = Table(catalog, "db.t", store).append(ROWS)
    assert isinstance(outcome, Conflict) and outcome.cause == STORE, outcome
    assert "AccessDenied" in outcome.reason and "out of attempts" not in outcome.reason
