"""Flawed commit paths built from icefloe.impl's own pieces (negative controls; spec/PROTOCOL.md
14 "Flawed variants", docs/variants.md for the model's versions of the same flaws,
docs/regressions.md for the bugs each one reproduces).

Each flaw is one override of the reference implementation, never a copy of it, so that a
control differs from the reference in exactly the rule it breaks:

- `no-revalidate` (apache/iceberg #10312): a retry re-applies its actions without
  re-running its validations; a file a concurrent commit already removed is silently
  skipped, as a blind "remove by path" would;
- `cleanup-after-unknown` (apache/iceberg #2317, #4666): a swap whose outcome is unknown is
  taken as failed, and everything the operation wrote is deleted;
- `pointer-status-check` (apache/iceberg #3717): an unknown outcome is settled by one look
  at the pointer: not our metadata file, so failed (and cleaned up), although the commit
  may have landed and been built upon;
- `no-lineage-check` (apache/iceberg #2808): after an unknown outcome the operation is
  retried without looking for its attempt in the metadata chain, so it lands twice;
- `sdk-retry-swap` (apache/iceberg #7151): a client library re-sends a swap whose response
  was lost; the retry is refused (the first one landed) and the refusal is reported as a
  definite failure;
- `expire-deleted-entries` (apache/iceberg #17304, #13568): expiry deletes the files that
  the expired snapshots removed, without asking whether a retained snapshot of any ref
  (a tag, a branch, main after a rollback) still reaches them;
- `orphans-no-threshold`: orphan removal with no age threshold, while writers work.
"""
from __future__ import annotations

from icefloe.impl.io.base import StoreError, StoreOutcomeUnknown, StoreUnavailable
from icefloe.impl.io.locations import canonical_location
from icefloe.impl.outcomes import ATTEMPTS, Committed, SwapUnknown
from icefloe.impl.s3.store import S3Store, _Refusal
from icefloe.impl.table import maintenance, operations as ops
from icefloe.impl.table.commit import DONE, RETRY, RESOLVE, PendingCommit

# -- no-revalidate ---------------------------------------------------------------------------


class _NoRevalidate:
    """Mixed in front of an operation class: no validation is ever checked (the starting
    snapshot satisfies them anyway), and a retry removes only those named files that are
    still live, so the loss shows as rows, not as an assertion of the reference."""

    def validations(self, c):
        return []

    def write_manifests(self, c):
        removed = getattr(self, "removed", None)
        if removed:
            live = {canonical_location(p) for p in c.tree.live_data_paths(c.head())}
            self.removed = {p: f for p, f in removed.items() if canonical_location(p) in live}
        return super().write_manifests(c)


_NO_REVALIDATE_CLASSES: dict[type, type] = {}


def no_revalidate(operation):
    """The same operation, retried without validation (apache/iceberg #10312)."""
    cls = type(operation)
    flawed = _NO_REVALIDATE_CLASSES.get(cls)
    if flawed is None:
        flawed = type(f"NoRevalidate{cls.__name__}", (_NoRevalidate, cls), {})
        _NO_REVALIDATE_CLASSES[cls] = flawed
    operation.__class__ = flawed
    return operation


# -- outcomes after an unknown swap --------------------------------------------------------------


class CleanupAfterUnknownCommit(PendingCommit):
    """apache/iceberg #2317 / #4666: "we do not know" is merged into "it failed"."""

    def reconcile(self):
        if self.phase != RESOLVE:
            return super().reconcile()
        self.unknown_bases.clear()  # forget that an attempt may have landed
        self._finish_failed(self._read_pointer(), "flawed: an unknown swap outcome taken as failure", ATTEMPTS)


class PointerStatusCheckCommit(PendingCommit):
    """apache/iceberg #3717: the status check compares the pointer with our metadata file
    only; a commit that landed and was already built upon is declared failed."""

    def reconcile(self):
        if self.phase != RESOLVE:
            return super().reconcile()
        pointer = self._read_pointer()
        if pointer is not None and canonical_location(pointer[0]) == canonical_location(self.new_metadata_location):
            self.outcome = Committed(self.snapshot_id, self.attempt, pointer[0])
            self.phase = DONE
            return
        self.unknown_bases.clear()
        self._finish_failed(pointer, "flawed status check: the pointer does not name our metadata file", ATTEMPTS)


class NoLineageCheckCommit(PendingCommit):
    """apache/iceberg #2808: an unknown outcome is retried like a rejection, without
    looking for the attempt in the chain; a landed snapshot is applied again."""

    def reconcile(self):
        if self.phase == RESOLVE:
            self.unknown_bases.clear()
            self.phase = RETRY
        return super().reconcile()


class SdkRetryCatalog:
    """apache/iceberg #7151, at the catalog call: a client library below the commit loop
    re-sends a swap whose answer it lost, and passes the retry's answer up. If the first
    request landed, the retry is refused ("the pointer is not `expected`") and the commit
    loop hears a definite rejection of a commit that is in fact current."""

    RESENDS_MAX = 1

    def __init__(self, inner):
        self.inner = inner
        self.name = getattr(inner, "name", "sdk-retry")

    def load(self, identifier):
        return self.inner.load(identifier)

    def create(self, identifier, metadata_location):
        return self.inner.create(identifier, metadata_location)

    def swap(self, identifier, expected_location, new_location):
        result = self.inner.swap(identifier, expected_location, new_location)
        for _ in range(self.RESENDS_MAX):
            if not isinstance(result, SwapUnknown):
                break
            result = self.inner.swap(identifier, expected_location, new_location)
        return result  # a refusal of the resend reads as a definite rejection: the flaw

    def __getattr__(self, name):
        return getattr(self.inner, name)


class SdkRetryS3Store(S3Store):
    """apache/iceberg #7151, where it happened: an SDK-level retry of a conditional PUT.
    The reference store reads the object back after a refusal that follows an ambiguous
    attempt; this one trusts the refusal."""

    def _read_back(self, kind, location, data, ambiguous, last):
        if isinstance(last, _Refusal):
            raise self._refusal_error(kind, location, last)
        return super()._read_back(kind, location, data, ambiguous, last)


# -- maintenance ---------------------------------------------------------------------------


class ExpireDeletedEntries(ops.ExpireSnapshots):
    """apache/iceberg #17304 / #13568: after an acknowledged expiry, delete every data file an
    expired snapshot removed (its DELETED entries), trusting that nothing retained reaches
    a removed file. A tag, another branch, a rollback or a re-added file all break that."""

    def after_acknowledged(self, c, pre, post):
        retained = {s.snapshot_id for s in post.snapshots}
        gone: set[str] = set()
        for s in pre.snapshots:
            if s.snapshot_id not in retained:
                gone |= {e.data_file.file_path for e in c.tree.changes(s).removed_data}
        for location in sorted(gone):
            c.io.delete(location)
        self.deleted_files = sorted(gone)


def remove_orphans_no_threshold(io, metadata_location, older_than_ms, tree=None):
    """Orphan removal that ignores its age threshold: everything unreferenced goes, including
    the files of commits still in flight."""
    from icefloe.impl.table.commit import read_metadata
    from icefloe.impl.table.confinement import Confinement
    return maintenance.remove_orphan_files(io, read_metadata(io, metadata_location), 2 ** 62, tree,
                                           confinement=Confinement.for_metadata(metadata_location, io))


# -- unconditional writes --------------------------------------------------------------------


class PlainPutS3Store(S3Store):
    """An S3 store that also has a plain, unconditional PUT (what a file-system table on S3
    uses for a rename: copy over whatever is there)."""

    def put(self, location: str, data: bytes):
        from icefloe.impl.s3.store import _Failure, split_location
        bucket, key = split_location(location)
        try:
            self._send("put", "put_object", Bucket=bucket, Key=key, Body=data)
        except _Failure as failure:
            if failure.applied is None:
                raise StoreOutcomeUnknown(location, f"plain put: {failure}") from None
            raise StoreUnavailable(location, f"plain put: {failure}") from None
        except _Refusal as refusal:
            raise StoreError(location, f"plain put: {refusal}") from None


def blind_put(store, location: str, data: bytes) -> None:
    """Write `data` at `location` whatever is there: a plain PUT where the store has one,
    otherwise create-or-replace by its etag (equivalent when nothing runs in between,
    which is how the stepping suite calls it)."""
    put = getattr(store, "put", None)
    if put is not None:
        put(location, data)
        return
    from icefloe.impl.io.base import AlreadyExists
    try:
        store.put_if_absent(location, data)
    except AlreadyExists:
        store.compare_and_swap(location, data, store.stat(location).etag)


__all__ = ["no_revalidate", "CleanupAfterUnknownCommit", "PointerStatusCheckCommit",
           "NoLineageCheckCommit", "SdkRetryCatalog", "SdkRetryS3Store", "ExpireDeletedEntries",
           "remove_orphans_no_threshold", "PlainPutS3Store", "blind_put"]
