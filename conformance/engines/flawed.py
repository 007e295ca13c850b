"""The flawed engine variants: negative controls the conformance suite must catch
(`icefloe conform --variant NAME` exits 1 naming the property; `--list-variants`).

Each variant is icefloe's own stepping adapter (engines/icefloe_engine.py) with one
piece swapped for a flawed one from flawed_commit.py / flawed_rename.py, so it differs
from the reference in exactly the rule it breaks. Names follow the model's variants
(model/variants.py, docs/variants.md) where the flaw is the same; `sdk-retry-swap`,
`blind-put-commit` and `version-hint` have no model twin. docs/regressions.md maps each
to the rows of REGRESSIONS.md it reproduces.

`orphans-no-threshold` (orphan removal that ignores its age threshold) is caught only by
the orphans-in-flight family's directed programs: orphan removal by age while another writer
works, its threshold from the suite's clock (the random search never ages files). Before
issue 30 the suite removed orphans only when nothing was in flight, where a threshold
changes nothing, and the variant could not be told from the reference.

Capabilities are honest and focused: a variant declares the operations and faults of its
model twin's bounds (model/variants.py) and refuses any other operation, so the search
spends its examples where the flaw is; it declares only the faults and stores under which
its adapter behaves as described (the listing catalog's swap never reports an unknown
outcome, so its variants take no ack_lost / swap_delayed; it has no S3 form here).

`expire-deleted-entries` is caught only by a delete, a rollback past it and an expiry, in
that order (the suite has no refs besides main): the sequences family's directed program for
that class, at every seed. tests/conformance/test_flawed_variants.py replays its counterexample.

`VARIANTS: dict[str, Callable[[], Engine]]`; `DESCRIPTIONS` says what each breaks.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import flawed_commit as F
from icefloe.conformance.engines import flawed_rename as R
from icefloe.conformance.engines import icefloe_engine as I
from icefloe.impl.table import commit as C


class FlawedTable(I.IcefloeTable):
    """icefloe's TableHandle with hooks for one flaw (all default to the reference)."""

    commit_class = C.PendingCommit

    def __init__(self, engine: "FlawedEngine", ctx: A.TableContext):
        self.capabilities = engine.capabilities
        super().__init__(engine, ctx)

    def flawed_operation(self, operation, op: A.OpSpec):
        return operation

    def writer_catalog(self, catalog):
        return catalog

    def operation(self, op: A.OpSpec):
        return self.flawed_operation(super().operation(op), op)

    def new_pending(self, catalog, store, operation) -> C.PendingCommit:
        return self.commit_class(catalog, self.table.identifier, store, operation, self.env, self.retry)

    def begin(self, writer: int, op: A.OpSpec):
        if op.kind not in self.capabilities.operations:
            raise A.EngineSpecError(f"this control does not support {op.kind!r} (its capabilities)")
        store, catalog = self.parts(writer)
        operation = self.operation(op)
        if getattr(operation, "produces_snapshot", False):
            operation = I.Tagged(operation, op.op_id)
        return I.IcefloeCommit(self.new_pending(self.writer_catalog(catalog), store, operation))


class FlawedEngine(I.IcefloeEngine):
    table_class = FlawedTable

    def __init__(self, name: str, table_class: type, capabilities: A.Capabilities):
        self.name, self.table_class, self.capabilities = name, table_class, capabilities

    def create_table(self, ctx: A.TableContext):
        return self.table_class(self, ctx)


# -- the flaws --------------------------------------------------------------------------------


class NoRevalidateTable(FlawedTable):
    def flawed_operation(self, operation, op):
        return F.no_revalidate(operation)


class CleanupAfterUnknownTable(FlawedTable):
    commit_class = F.CleanupAfterUnknownCommit


class PointerStatusCheckTable(FlawedTable):
    commit_class = F.PointerStatusCheckCommit


class NoLineageCheckTable(FlawedTable):
    commit_class = F.NoLineageCheckCommit


class SdkRetrySwapTable(FlawedTable):
    def writer_catalog(self, catalog):
        return F.SdkRetryCatalog(catalog)   # above the faulted network, as an SDK is


class ExpireDeletedEntriesTable(FlawedTable):
    def flawed_operation(self, operation, op):
        if op.kind == A.EXPIRE:
            return F.ExpireDeletedEntries(older_than_ms=2 ** 62, retain_last=op.retain_last)
        return operation


class OrphansNoThresholdTable(FlawedTable):
    # Commits exactly as the reference, through each writer's own handle (its reads judged
    # as the reference's are); only orphan removal differs.
    begin = I.IcefloeTable.begin

    def remove_orphans(self, older_than_ms: int) -> list:
        # The flaw: every unreferenced file goes, however young (a commit in flight's too).
        return self.maintenance.remove_orphan_files(2 ** 62)


class ListingTable(FlawedTable):
    """The table on the listing catalog: LIST finds the version, a plain PUT commits."""
    listing_options: dict = {}

    def _forget_cached_version(self) -> None:
        # Version files are overwritten in place here, so a reader cannot cache them by
        # name as an Iceberg reader may: re-read on every read.
        self.table.metadata_location = None

    def read_current(self):
        self._forget_cached_version()
        return super().read_current()

    def read_at(self, snapshot_id):
        self._forget_cached_version()
        return super().read_at(snapshot_id)

    def read_incremental(self, since_snapshot_id):
        self._forget_cached_version()
        return super().read_incremental(since_snapshot_id)

    def new_pending(self, catalog, store, operation):
        return R.RenameCommit(self.shared_catalog, catalog, self.table.identifier, store, operation,
                              self.env, self.retry)


class ListingEngine(FlawedEngine):
    def make_catalog(self, handle, ctx):
        assert ctx.warehouse.startswith("memory://"), "the listing variants run on the memory store"
        return R.ListingCatalog(handle.shared_store, **handle.listing_options)

    def writer_catalog(self, handle, writer, hooks):
        return handle.shared_catalog


def _listing(options: dict) -> type:
    return type("ListingTable", (ListingTable,), {"listing_options": dict(options)})


# -- the registry --------------------------------------------------------------------------------

_REFERENCE = I.CAPABILITIES
_MEMORY = {"stores": frozenset({"memory"})} if "stores" in A.Capabilities.__dataclass_fields__ else {}


# The v2 controls' flaws are in v2 commits: no v3 table (the v3 phase's are flawed_v3.py's).
_V2_ONLY = {"format_versions": frozenset({2}), "v3_operations": frozenset(), "dv_policy": None, "row_lineage": False,
            "v3_upgrade": False}


def _caps(operations, faults=(), **changes) -> A.Capabilities:
    """A control's capabilities: the operations and faults of its model twin's bounds
    (model/variants.py), so the suite's search spends its examples where the flaw is."""
    return replace(_REFERENCE, operations=frozenset({A.APPEND, *operations}), faults=frozenset(faults),
                   **{"partitions": 1, "refs": False, **_V2_ONLY, **changes})


_UNKNOWN = (A.ACK_LOST,)
_LISTING = dict(swap_over_s3=False, **_MEMORY)
_SPECS: dict[str, tuple[type, type, A.Capabilities, str]] = {
    "no-revalidate": (FlawedEngine, NoRevalidateTable, _caps((A.DELETE, A.REWRITE)),
                      "a retry re-applies its actions without re-checking its validations (iceberg #10312)"),
    "cleanup-after-unknown": (FlawedEngine, CleanupAfterUnknownTable, _caps((), _UNKNOWN),
                              "an unknown swap outcome is taken as failure and cleaned up (iceberg #2317, #4666)"),
    "pointer-status-check": (FlawedEngine, PointerStatusCheckTable, _caps((), (A.ACK_LOST, A.SWAP_DELAYED)),
                             "an unknown outcome is settled by comparing the pointer with our file (iceberg #3717)"),
    "no-lineage-check": (FlawedEngine, NoLineageCheckTable, _caps((), _UNKNOWN),
                         "an unknown outcome is retried without looking for the attempt in the chain (iceberg #2808)"),
    "sdk-retry-swap": (FlawedEngine, SdkRetrySwapTable, _caps((), _UNKNOWN),
                       "a client library re-sends a swap whose answer was lost; its refusal reads as failure "
                       "(iceberg #7151)"),
    # Reads: current only. The damage shows there, and the lockstep's readers turn a read of
    # a snapshot not yet committed into "P8" (a harness error, reported), which the shrinker
    # would otherwise keep as a one-step counterexample.
    "expire-deleted-entries": (FlawedEngine, ExpireDeletedEntriesTable,
                               _caps((A.DELETE, A.ROLLBACK, A.EXPIRE), reads=frozenset({A.READ_CURRENT})),
                               "expiry deletes what expired snapshots removed, ignoring other refs "
                               "(iceberg #17304, #13568)"),
    # Orphan removal by age is judged on memory storage (the suite's clock stamps its files).
    "orphans-no-threshold": (FlawedEngine, OrphansNoThresholdTable,
                             _caps((A.ORPHANS, A.REWRITE), (A.CRASH, A.ACK_LOST, A.SWAP_DELAYED), **_MEMORY),
                             "orphan removal ignores its age threshold and deletes the files of commits "
                             "still in flight (spec: remove orphan files, older_than)"),
    "rename-commit": (ListingEngine, _listing({"check": "list"}), _caps((), (), **_LISTING),
                      "file-system table: LIST for the next version, then a plain PUT over it "
                      "(iceberg #970, #1014)"),
    "blind-put-commit": (ListingEngine, _listing({"check": "none"}), _caps((), (), **_LISTING),
                         "the next log version written with no put-if-absent at all (delta #1410)"),
}

DESCRIPTIONS: dict[str, str] = {name: spec[3] for name, spec in _SPECS.items()}


def _factory(name: str) -> Callable[[], FlawedEngine]:
    engine_class, table_class, caps, _ = _SPECS[name]

    def make() -> FlawedEngine:
        return engine_class(f"flawed:{name}", table_class, caps)
    make.__name__ = f"engine_{name.replace('-', '_')}"
    return make


VARIANTS: dict[str, Callable[[], A.Engine]] = {name: _factory(name) for name in _SPECS}

# The format v3 variants (engines.flawed_v3: each the twin of a flawed variant of the v3 model)
# are variants like these: `--variant NAME`, `--list-variants`, the seed gate (mutants.seeds).
from icefloe.conformance.engines import flawed_v3 as _v3  # noqa: E402  (below the v2 table on purpose)

VARIANTS.update(_v3.VARIANTS)
DESCRIPTIONS.update(_v3.DESCRIPTIONS)
