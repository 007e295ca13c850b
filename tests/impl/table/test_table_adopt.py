"""A table handle after its commit's outcome (impl/table/table.py `Table.adopt`; spec/PROTOCOL.md
9 "Commit outcomes"): the outcome is decided before the handle refreshes, so a refresh that
fails cannot replace it, and the handle still shows a state the table had, never older than
what its commit read and never an attempt that did not land."""
from __future__ import annotations

import pytest

from icefloe.impl.catalog.base import CatalogUnavailable
from icefloe.impl.outcomes import ATTEMPTS, Conflict, Unknown
from icefloe.impl.table import producer as P
from icefloe.impl.table.commit import SWAP
from icefloe.impl.table.table import Table

from table_helpers import ids_of, rival, rows, step_to

SINGLE_ATTEMPT = {"commit.retry.num-retries": "0"}
TWO_ATTEMPTS = {"commit.retry.num-retries": "1"}


class UnreadableCatalog:
    """The stack's catalog, whose loads fail while `down` (the catalog unreachable after the
    swap was answered): CatalogUnavailable, as a real catalog raises it."""

    def __init__(self, inner):
        self.inner, self.down = inner, False

    def load(self, identifier):
        if self.down:
            raise CatalogUnavailable(f"load {identifier}: the catalog cannot be reached")
        return self.inner.load(identifier)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _handle(mem) -> tuple[Table, UnreadableCatalog]:
    catalog = UnreadableCatalog(mem.catalog)
    return Table(catalog, "db.t", mem.io, mem.env()), catalog


def test_a_conflict_survives_a_refresh_that_fails(mem):
    """Goal: after a definite Conflict, a handle whose refresh fails returns the Conflict (not
    CatalogUnavailable) and shows the newest state its commit built on, a rival's commit, never
    its own attempt. Method: two attempts allowed; a rival appends before each of the handle's
    swaps (both rejected: Conflict, out of attempts); the catalog becomes unreachable; adopt."""
    mem.create(properties=TWO_ATTEMPTS).append(rows([1]))
    handle, catalog = _handle(mem)
    before = handle.metadata_location
    commit = handle.begin(P.FastAppend(rows([2])))
    other = rival(mem)
    for row in (3, 4):
        step_to(commit, SWAP)
        other.append(rows([row]))
        commit.step()
    commit.run()
    assert isinstance(commit.outcome, Conflict) and commit.outcome.cause == ATTEMPTS
    catalog.down = True
    outcome = handle.adopt(commit)
    assert outcome is commit.outcome
    assert handle.metadata_location == commit.base_location != before
    assert handle.metadata_location not in commit.attempted
    assert ids_of(handle.scan()) == [1, 3]
    with pytest.raises(CatalogUnavailable):
        handle.refresh()                    # a plain refresh still says the catalog is down
    catalog.down = False
    assert ids_of(handle.refresh().scan()) == [1, 3, 4]


def test_an_unknown_outcome_survives_a_refresh_that_fails():
    """Goal: an Unknown outcome stays Unknown when the refresh after it fails, and the handle
    never shows the attempt whose fate is unknown. Method: every swap of a single-attempt
    commit is delayed (SwapDelayed: Unknown), the catalog becomes unreachable, adopt; then the
    parked swap lands and a refresh shows it."""
    from table_helpers import memory_stack
    mem = memory_stack()
    mem.create(properties=SINGLE_ATTEMPT).append(rows([1]))
    handle, catalog = _handle(mem)
    before = handle.metadata_location
    commit = handle.begin(P.FastAppend(rows([2])))
    step_to(commit, SWAP)
    mem.catalog.delay_swaps(1)
    commit.run()
    assert isinstance(commit.outcome, Unknown)
    catalog.down = True
    assert handle.adopt(commit) is commit.outcome
    assert handle.metadata_location == before and ids_of(handle.scan()) == [1]
    [parked] = mem.catalog.pending
    mem.catalog.deliver(parked)
    catalog.down = False
    assert ids_of(handle.refresh().scan()) == [1, 2]
