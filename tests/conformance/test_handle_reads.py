"""Reads through a writer's own table handle after its outcome (conformance.readers.check_handle):
a handle shows a state the table had, never older than what its operation last built on."""
from __future__ import annotations

import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import registry
from icefloe.conformance.suite.runs import replay
from icefloe.conformance.violation import AGREEMENT, Violation
from icefloe.impl.outcomes import Committed
from icefloe.impl.table.table import Table

# Writer 2 commits while writer 1 is in flight; writer 1's swap is rejected, it retries on
# writer 2's commit, and its manifest list write fails: its operation ends failed, built
# last on writer 2's snapshot.
FAILED_AFTER_RETRY = [
    ("Begin", 1, "append"), ("Begin", 2, "append"),
    ("WriteData", 1), ("WriteManifests", 1), ("WriteManifestList", 1), ("WriteMetadata", 1),
    ("WriteData", 2), ("WriteManifests", 2), ("WriteManifestList", 2), ("WriteMetadata", 2), ("Swap", 2),
    ("Swap", 1), ("Retry", 1), ("WriteFails", 1),
]


def _stale_adopt(original):
    """Table.adopt as the handle-keeps-stale-after-failure bug writes it: no refresh after
    an outcome other than an acknowledged swap."""
    def adopt(self, commit):
        if isinstance(commit.outcome, Committed):
            return original(self, commit)
        return commit.outcome
    return adopt


def test_a_handle_that_is_current_after_a_failed_commit_passes():
    """Goal: the handle read after a failed retry accepts the reference handle, which shows
    the rival's commit. Method: FAILED_AFTER_RETRY replayed on icefloe, judged to the end."""
    lock = replay(registry.load_engine("icefloe"), FAILED_AFTER_RETRY)
    assert A.READ_HANDLE in lock.caps.reads
    assert type(lock.ops[(1, 1)].outcome).__name__ != "Committed"
    assert lock.handle_floor[1] is not None
    assert lock.last_history_verdict.valid is True


def test_a_handle_that_kept_stale_metadata_after_a_failed_commit_is_named(monkeypatch):
    """Goal: a handle that keeps the metadata its operation began on after a failed commit
    is caught although that state was main's head once (P4 alone cannot see it). Method:
    Table.adopt without its refresh after a failure, FAILED_AFTER_RETRY replayed."""
    monkeypatch.setattr(Table, "adopt", _stale_adopt(Table.adopt))
    with pytest.raises(Violation, match="went back in time") as found:
        replay(registry.load_engine("icefloe"), FAILED_AFTER_RETRY)
    assert found.value.prop == AGREEMENT
    assert found.value.program[-1] == ("WriteFails", 1)
