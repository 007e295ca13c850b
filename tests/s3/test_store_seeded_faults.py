"""S3Store's outcomes stay honest under seeded random faults (Hypothesis).

One writer, one key, a program of store calls through a proxy that rejects, resets
and loses responses at random from a seed. With a single writer and a proxy that
never delays a write past its answer, the truth after each call is known exactly
(read around the proxy), so each reported outcome can be checked against it:
- success: the object holds the bytes we wrote (or is gone, for delete);
- AlreadyExists / PreconditionFailed / NotFound / StoreUnavailable: nothing changed;
- StoreOutcomeUnknown: the object holds either what it held before or our bytes.
A failure prints the seed and the program, which replay exactly.
"""
from __future__ import annotations

import itertools

from botocore.exceptions import ClientError
import pytest
from hypothesis import event, given, settings, strategies as st

from icefloe.impl.io.base import (
    AlreadyExists, NotFound, PreconditionFailed, StoreOutcomeUnknown, StoreUnavailable)
from icefloe.conformance.testing.proxy import FaultProxy, LoseResponse, Match, Reject, Reset, Rule
from icefloe.impl.s3.store import S3Store

BUCKET = "icefloe"
FAULT_PROBABILITY = 0.06  # per rule; five rules: about one request in four is faulted
DEFINITE = (AlreadyExists, PreconditionFailed, NotFound, StoreUnavailable)

_examples = itertools.count()

# Swaps from the current etag weigh most: they are the commit path.
steps = st.lists(st.sampled_from(["put_if_absent", "swap", "swap", "swap", "swap_stale",
                                  "delete"]), min_size=1, max_size=8)


def current_etag(direct, key: str) -> str | None:
    try:
        return direct.head_object(Bucket=BUCKET, Key=key)["ETag"].strip('"')
    except ClientError:
        return None


def truth(direct, key: str) -> bytes | None:
    """The object as upstream holds it, read around the proxy."""
    try:
        return direct.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "NoSuchKey"
        return None


@pytest.fixture(scope="module")
def seeded(moto_s3):
    """One proxy and one store for every example; each example re-seeds the proxy."""
    with FaultProxy(moto_s3.endpoint_url) as proxy:
        yield (proxy, S3Store.from_config(proxy.endpoint_url, "seeded", "secret", "us-east-1",
                                          attempts_max=3), moto_s3.client())


def arm(proxy: FaultProxy, seed: int) -> None:
    proxy.clear(seed=seed)
    for fault in (Reject(503), Reject(500), Reset(), LoseResponse("reset"), LoseResponse("500")):
        proxy.add_rule(Rule(fault, Match(), probability=FAULT_PROBABILITY))


@settings(max_examples=60)
@given(seed=st.integers(0, 2**32 - 1), program=steps)
def test_outcomes_match_the_truth_under_random_faults(seeded, seed, program):
    """Goal: every outcome S3Store reports is consistent with what upstream holds, under random
    survivable faults. Method: seeded probabilistic faults on every request; after each step
    compare the outcome with the object read around the proxy."""
    proxy, store, direct = seeded
    arm(proxy, seed)
    key = f"t/seeded/{next(_examples)}"
    location = f"s3://{BUCKET}/{key}"
    direct.put_object(Bucket=BUCKET, Key=key, Body=b"initial")  # swaps have something to swap
    for number, step in enumerate(program):
        before = truth(direct, key)
        data = f"{seed}:{number}:{step}".encode()
        try:
            if step == "put_if_absent":
                store.put_if_absent(location, data)
            elif step == "delete":
                store.delete(location)
            else:  # a swap from the current etag (refreshed around the proxy), or a stale one
                fresh = current_etag(direct, key) if step == "swap" else None
                store.compare_and_swap(location, data, fresh or "0" * 32)
        except StoreOutcomeUnknown:
            event(f"{step}: unknown")
            after = truth(direct, key)
            assert after in (before, None if step == "delete" else data), (step, before, after)
            continue
        except DEFINITE as exc:
            event(f"{step}: {type(exc).__name__}")
            assert truth(direct, key) == before, (step, exc)
            continue
        event(f"{step}: success" + (" after a lost ack" if any(
            e.upstream_status == 200 and e.returned != 200 for e in proxy.history()[-4:]) else ""))
        after = truth(direct, key)
        assert after == (None if step == "delete" else data), (step, before, after)
