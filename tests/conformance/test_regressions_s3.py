"""REGRESSIONS.md rows 1 and 6 where they happened: on S3 (a moto server over real HTTP on
127.0.0.1, atomic conditional writes), through icefloe.impl.s3.

Goal: the S3 forms of two bugs. Row 1 (apache/iceberg #7151): an SDK-level retry of the
pointer's conditional PUT whose first attempt landed and whose response was lost; the
retry is refused (412). The reference `S3Store` reads the pointer back and reports
success; the flawed `SdkRetryS3Store` trusts the refusal, and the commit loop cleans up
the metadata file that is now current. Row 6 (apache/iceberg #970, #1014): a file-system
table whose next version is found by LIST and written by a plain PUT, against the
reference S3 catalog's If-Match swap. Method: the replay programs of
regression_programs.py on S3 stores; the lost response is the FaultProxy's `LoseResponse`.
"""
from __future__ import annotations

import uuid

import pytest

from icefloe.conformance.engines.flawed_commit import PlainPutS3Store, SdkRetryS3Store
from icefloe.impl.catalog.s3 import S3Catalog
from icefloe.impl.outcomes import Committed, Conflict
from icefloe.conformance.testing.moto_server import DEFAULT_REGION, MotoS3Server
from icefloe.conformance.testing.proxy import FaultProxy, LoseResponse, Match, Rule
from icefloe.impl.s3.store import S3Store
from regression_programs import Run, violations
from test_regressions import BOOT, PROGRAMS

BUCKET = "icefloe-regressions"


@pytest.fixture(scope="module")
def moto():
    with MotoS3Server(bucket=BUCKET, atomic=True) as server:
        yield server


@pytest.fixture(scope="module")
def proxy(moto):
    with FaultProxy(moto.endpoint_url, seed=0) as running:
        yield running


def warehouse() -> str:
    return f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"


def s3_run(variant, store, catalog=None, attempts_max=2):
    base = warehouse()
    if catalog is not None:
        catalog = catalog(store, base)
    return Run(variant, attempts_max=attempts_max, store=store, catalog=catalog, location=f"{base}/db.db/t")


@pytest.mark.parametrize("store_class,outcome,broken", [(S3Store, Committed, set()),
                                                        (SdkRetryS3Store, Conflict, {"P8 NoDanglingRefs"})])
def test_row1_sdk_retry_of_a_landed_pointer_put(moto, proxy, store_class, outcome, broken):
    """Goal: #7151 at the S3 request. Method: writer 1's pointer PUT is applied and its response
    reset; the store's own second attempt gets 412; one commit attempt, then judge."""
    client = f"w{uuid.uuid4().hex[:8]}"
    store = store_class.from_config(proxy.endpoint_url, client, "secret", DEFAULT_REGION, attempts_max=4)
    run = s3_run(None, store, S3Catalog, attempts_max=1)
    run.play(BOOT + (("append", 1, ("b",)), ("to", 1, "swap")))
    rule = proxy.add_rule(Rule(LoseResponse("reset"), Match(operation="ConditionalPutObject",
                                                            key="*pointer.json", client=client), nth=1))
    try:
        run.play((("finish", 1), ("read", "r")))
    finally:
        proxy.remove_rule(rule)
    assert rule.fired == 1
    assert isinstance(run.outcome(1), outcome), run.outcome(1)
    assert set(violations(run)) == broken, violations(run)


def test_row6_rename_race_on_s3(moto):
    """Goal: #970/#1014 on S3: LIST then plain PUT loses an acknowledged commit; the reference's
    If-Match swap does not. Method: the rename_race_970 program on both."""
    _, program, variant, attempts, breaks = PROGRAMS["rename_race_970"]
    flawed = s3_run(variant, PlainPutS3Store.from_config(moto.endpoint_url, "w", "secret", DEFAULT_REGION),
                    attempts_max=attempts).play(program)
    assert set(violations(flawed)) == breaks
    reference = s3_run(None, S3Store.from_config(moto.endpoint_url, "w", "secret", DEFAULT_REGION), S3Catalog,
                       attempts_max=attempts).play(program + (("read", "r"),))
    assert violations(reference) == {}
    assert reference.reads["r"][-1][1] == ("a", "b", "c")
