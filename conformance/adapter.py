"""The engine adapter protocol: the small interface an Iceberg engine implements so the
conformance suite (`icefloe conform`, the pytest plugin) can test its commit path.

This docstring is the contract, and this module holds only what an engine author implements
or calls; docs/conformance.md explains it. It imports nothing of the suite's harness: the
fault switchboard is conformance.suite.hooks, engine loading conformance.engines.registry.

Addressing. An engine is named `module:factory`; `factory()` returns an `Engine`.
Built-in shortcuts (engines.registry.ENGINE_SHORTCUTS): `icefloe` (the reference
implementation, a stepping adapter) and `pyiceberg` (a black-box adapter). A name that cannot
be loaded, or an engine that breaks this protocol, is an `EngineSpecError` (a typed usage error).

Capabilities (`Capabilities`), declared once per engine; the suite draws only steps
they allow:
  operations   a subset of OPERATIONS: append, overwrite (by filter), delete (by
               filter), rewrite (compaction), rollback, expire (snapshot expiry),
               orphans (orphan-file removal, a maintenance call, not a commit);
  mode         STEPPING (the commit exposes the protocol's phases and the suite
               interleaves writers phase by phase) or BLACK_BOX (a commit runs whole in
               a worker thread; writers are interleaved only by gating their S3
               requests at the fault proxy);
  faults       a subset of FAULT_KINDS the adapter lets the suite inject:
               write_fail (a storage write fails, not applied), swap_fail (the swap is
               rejected before any effect), ack_lost (the swap is applied, its
               acknowledgement lost), swap_delayed (the swap times out; the request is
               still in flight and lands later or never), crash (the writer stops
               between two phases, for good);
  swap_over_s3 whether the engine's pointer swap is an S3 request (a conditional PUT)
               that the proxy can fault and gate; if not (e.g. a SQL catalog), a
               black-box engine's interleavings are coarser, and the verdict says so;
  reads        a subset of READS: current, at-snapshot (time travel), incremental
               (rows appended since a snapshot, along main's ancestry), handle (what a
               writer's own table handle shows right after its operation ended),
               filtered (a snapshot's rows matching `column op value`, planned with the
               engine's own pruning: `read_filtered`);
  isolation    the isolation level the engine claims for overwrite-by-filter
               ("serializable" or "snapshot"); the model and checker judge at it;
  stores       where its tables can live: "memory" (a memory:// warehouse, stepping
               engines only) and/or "s3" (moto S3 on 127.0.0.1 behind the suite's
               FaultProxy) and/or "rest" (behind `icefloe serve` on 127.0.0.1, its
               warehouse a local directory, `ctx.warehouse` file://...; a fresh table
               name per program, `ctx.identifier`);
  transport    a subset of TRANSPORTS, the transport-level faults an engine can meet:
               for a stepping engine (conformance.transport) "s3" (it sends its S3
               requests to `ctx.s3_endpoint`, signed with each writer's own key, so the
               proxy can lose a request or its response), "sql" (its SQL catalog's
               connections ask `hooks.on_commit(writer)` at every COMMIT and fail as it
               says: see conformance.testing.faulty_sql); for a black-box engine "rest"
               (its swap is an Iceberg REST catalog commit, `POST .../tables/{t}`, to the
               `icefloe serve` at `ctx.catalog_uri`, http://127.0.0.1:PORT, every request
               of writer w carrying the header `X-Icefloe-Writer: w` or `ctx.access_key(w)`;
               the suite holds each commit request at the server and faults it there:
               conformance.blackbox). A "rest" engine runs on the "rest" store.
  format_versions  the table format versions it creates and commits to (default {2});
               with 3 the suite's v3 phase (conformance.v3: families `dvs`, `lineage`)
               drives a v3 table, `TableContext.format_version` 3, through
               `v3_operations` and judges it at `dv_policy`; without 3 those families are
               listed as out of reach, never failed;
  v3_operations  on a v3 table, a subset of V3_OPERATIONS: append, rewrite (compaction
               of one data file), row_delete (a deletion vector), row_update (a DV and the
               row written again with its _row_id), cow_delete (copy-on-write: the row's
               data file rewritten without it);
  dv_policy    how it settles two concurrent DVs for one data file (spec/PROTOCOL.md
               19.4): "conflict" (Iceberg-Java 1.10: the later one fails validation) or
               "merge" (apache/iceberg #17754: a pure delete merges a pure delete's DV,
               never an overwrite's); required with row_delete or row_update on v3;
  row_lineage  whether `read_v3` gives each row's _row_id (v3 "Row Lineage"); without
               it the lineage family is out of reach.
  v3_upgrade   whether `create_table` can build the v3 phase's table upgraded from v2
               (`TableContext.upgraded_from_v2`); without it the `dvs` classes of a DV
               merging position delete files are out of reach.

The table. Every run uses one unpartitioned table `TableContext.identifier` with one
required string column `id` (`COLUMN`); each row is a distinct string such as "1.2".
`Engine.create_table(ctx)` creates it empty and returns a `TableHandle` for the
harness (writer 0: bootstrap, readers, maintenance). The `TableContext` says where:
  warehouse      the table's warehouse location (memory://... or s3://bucket/...);
  catalog_uri    the catalog, e.g. sqlite:///path/catalog.db, or None for an engine
                 that keeps its pointer in the warehouse (an S3 catalog);
  s3_endpoint    the S3 endpoint to use (for black-box engines: the FaultProxy's);
  access_keys    writer number -> S3 access key id; each writer must sign with its
                 own key, so proxy rules and gates can target one writer;
  faults         the harness's `FaultHooks`, which a stepping adapter consults from its
                 storage and catalog wrappers (black-box engines are faulted at the
                 proxy and may ignore them);
  commit_attempts_max  the number of attempts a commit may make (retries + 1);
  seed           for the engine's own random choices (snapshot ids, uuids).

Writers. `TableHandle.begin(writer, op)` starts one operation (`OpSpec`) by writer
number `writer` (1..N) and returns either a `SteppingCommit` or a `BlackBoxCommit`:
  SteppingCommit  `phase` (one of PHASES), `step()` runs exactly one phase, `done`,
                  `outcome` once done, `snapshot_id` (drawn at plan time, kept across
                  attempts; None for operations without a snapshot), and
                  `starting_snapshot_id`. The first `step()` is PLAN (refresh and
                  plan); a retry returns to the operation's restart phase. The suite
                  compares `phase` with the model's phase after every step.
  BlackBoxCommit  `run()` runs the whole commit (every attempt) and returns the
                  outcome; the suite calls it in a worker thread.
An outcome is one of `Committed` / `Conflict` / `Unknown`, each carrying the snapshot
id (when there is one) and the number of attempts: "the swap failed" and "we do not
know whether it landed" are different facts and must never be merged.

Reads return a `ReadResult` (snapshot id, sorted rows, data file locations or None):
`read_current()`, `read_at(snapshot_id)`, `read_incremental(since_snapshot_id)`, and with
the optional `current_snapshot_id()` (cheap: the current snapshot's id only; the suite
then re-reads the rows only when it changed), and with the `handle` read,
`read_handle(writer)`: the current snapshot of the table handle writer
`writer`'s operations ran through, as that handle holds it, without refreshing it. The
suite reads it after every outcome: a handle must never show a commit that did not land
(it may show an older committed state).

History. `TableHandle.history()` returns a `TableHistory`: the metadata versions of the
current pointer's chain (location, previous location, main's head, retained snapshot
ids; oldest first, as far as the engine's metadata log reaches) and a
`SnapshotRecord` per snapshot it saw: id, parent, the summary's operation, data files
live / added / removed, and, where the engine records them, the operation's
predicate (filter) and the suite's op id. The history checker
(icefloe.model.checks.history) builds its dependency graph from these, so predicate
anti-dependencies are visible, not only file-level ones.

Maintenance. `TableHandle.remove_orphans(older_than_ms)` deletes unreferenced files
older than the threshold: with a threshold in the future when no writer is active, and with
one older than every file of the writers at work while they work (spec/PROTOCOL.md 12.2;
what a file's age is: `TableContext.now_ms`). Run it as the engine's maintenance job does,
through a long-lived handle (icefloe's is opened when the table is created), never one the
suite's reads keep fresh: a job must not trust what its handle saw last.

Faults for stepping adapters (`FaultHooks`). The suite arms at most one fault for a
writer before stepping it; the adapter's wrappers take it at the matching request:
  - every storage write of writer w calls `hooks.on_write(w, location)`: True means
    fail this write before it is applied (raise the engine's storage error);
  - the swap of writer w calls `hooks.on_swap(w)`: None (swap normally), SWAP_FAIL
    (reject, not applied), ACK_LOST (apply it, then report the outcome unknown) or
    SWAP_DELAYED (do not apply it now: register `hooks.park(w, deliver)` with a
    callable that applies the same compare-and-swap later, and report unknown).
A crash needs no hook: the suite stops stepping the commit and never resumes it.

Format v3 (an engine with 3 in `format_versions`). `create_table(ctx)` with
`ctx.format_version` 3 creates the same one-column table as v3 (merge-on-read deletes as
deletion vectors, row lineage on). The suite's v3 phase begins `OpSpec`s of the kinds in
`v3_operations`, each naming its row by its COLUMN value (`row`; None: a no-op), a rewrite
its data file by the rows it was written with (`where`, deletes not applied) and a row live
in it (`row`, None when none is). `read_v3(snapshot_id=None)` returns a `V3Read` of main's
head (or of that snapshot): next-row-id, every live data file with its first-row-id, its
rows by position and their _row_ids (deletes not applied), every live DV (all of them:
two for one data file is what P11 forbids, so list what the manifests hold), the rows
the engine's own scan returns with their _row_ids (None, with the error, if it refuses), and
every live position delete file that is not a DV, once per data file it names with the
positions it deletes there (`position_deletes`; an upgraded table's, spec/PROTOCOL.md 19.8).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol, runtime_checkable

# -- vocabulary (model names: icefloe.model.state) -----------------------------------------

APPEND, OVERWRITE, DELETE, REWRITE, ROLLBACK, EXPIRE, ORPHANS = (
    "append", "overwrite", "delete", "rewrite", "rollback", "expire", "orphans")
# Row-level (merge-on-read) operations and ref operations (spec/PROTOCOL.md 7.3, 8).
ROW_DELETE, ROW_UPDATE, UPSERT, TAG, FAST_FORWARD = "row_delete", "row_update", "upsert", "tag", "fast_forward"
# A row inserted and updated within one commit (a CDC writer's checkpoint, Flink's): one data
# file holding `rows` in that order and, in the same row delta, a position delete of `row`
# (the first version) naming that new file.
CDC_UPDATE = "cdc_update"
COMMIT_OPERATIONS = (APPEND, OVERWRITE, DELETE, REWRITE, ROLLBACK, EXPIRE, ROW_DELETE, ROW_UPDATE, UPSERT,
                     TAG, FAST_FORWARD, CDC_UPDATE)
OPERATIONS = COMMIT_OPERATIONS + (ORPHANS,)

STEPPING, BLACK_BOX = "stepping", "black-box"

WRITE_FAIL, SWAP_FAIL, ACK_LOST, SWAP_DELAYED, CRASH = (
    "write_fail", "swap_fail", "ack_lost", "swap_delayed", "crash")
FAULT_KINDS = (WRITE_FAIL, SWAP_FAIL, ACK_LOST, SWAP_DELAYED, CRASH)

READ_CURRENT, READ_AT, READ_INCREMENTAL, READ_HANDLE, READ_FILTERED = (
    "current", "at-snapshot", "incremental", "handle", "filtered")
READS = (READ_CURRENT, READ_AT, READ_INCREMENTAL, READ_HANDLE, READ_FILTERED)

TRANSPORT_S3, TRANSPORT_SQL, TRANSPORT_REST = "s3", "sql", "rest"
TRANSPORTS = (TRANSPORT_S3, TRANSPORT_SQL)          # a stepping engine's
BLACK_BOX_TRANSPORTS = (TRANSPORT_REST,)            # a black-box engine's
STORES = ("memory", "s3", "rest")
WRITER_HEADER = "X-Icefloe-Writer"                  # a REST engine's writer, per request

from icefloe.impl.outcomes import (  # noqa: E402 - one set of outcome types, impl's
    COMMITTED, CONFLICT, SERIALIZABLE, SNAPSHOT, UNKNOWN, Committed, Conflict, Outcome, Unknown,
)
from icefloe.model.checks.history import (  # noqa: E402 - one set of history types, the checker's
    SnapshotRecord, TableHistory, VersionRecord,
)

# Commit phases of a stepping adapter (spec/PROTOCOL.md 5 "Writer phases").
PLAN, DATA, MANIFESTS, LIST, METADATA, SWAP, RETRY, RESOLVE, DONE = (
    "plan", "data", "manifests", "list", "metadata", "swap", "retry", "resolve", "done")
PHASES = (PLAN, DATA, MANIFESTS, LIST, METADATA, SWAP, RETRY, RESOLVE, DONE)

# Format v3 (spec/PROTOCOL.md 19; model: icefloe.model.v3, whose kind names these are).
COW_DELETE = "cow_delete"
V3_OPERATIONS = (APPEND, REWRITE, ROW_DELETE, ROW_UPDATE, COW_DELETE)
DV_CONFLICT, DV_MERGE = "conflict", "merge"
DV_POLICIES = (DV_CONFLICT, DV_MERGE)
FORMAT_VERSIONS = (1, 2, 3)

COLUMN = "id"
PART_COLUMN = "part"      # the partition column (identity-partitioned) of an engine with partitions
MAIN_REF, BRANCH, TAG_REF = "main", "b", "t"   # main, the model's branch (created with the table at
                                                # main's head) and its tag
TABLE_IDENTIFIER = "db.t"

class EngineSpecError(ValueError):
    """An engine name that cannot be loaded, or an adapter that breaks the protocol."""


class EngineFailure(Exception):
    """Raise from a commit's `run()` when the engine itself failed the operation with an error
    that is no outcome (Iceberg-Java's IllegalArgumentException from its own validation, say):
    the suite judges it as the engine's observation (A0, beside what the model did). Anything
    else a `run()` raises is the adapter's own error, and the verdict is "adapter error"."""

    def __init__(self, cause: BaseException):
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause


class UnreadableSnapshot(Exception):
    """A read found which snapshot to read but could not read its rows (an object it
    reaches is missing): raise it from a read so the suite can tell a snapshot that never
    landed from a committed one whose files were lost."""

    def __init__(self, snapshot_id: int | None, cause: str):
        super().__init__(f"snapshot {snapshot_id}: {cause}")
        self.snapshot_id, self.cause = snapshot_id, cause


# -- what an engine declares ------------------------------------------------------------------

@dataclass(frozen=True)
class Capabilities:
    operations: frozenset
    mode: str
    faults: frozenset = frozenset()
    swap_over_s3: bool = False
    reads: frozenset = frozenset({READ_CURRENT, READ_AT, READ_INCREMENTAL})
    isolation: str = SERIALIZABLE
    stores: frozenset = frozenset({"memory", "s3"})
    transport: frozenset = frozenset()
    partitions: int = 1       # 2: its table can be identity-partitioned by PART_COLUMN
    refs: bool = False        # it can commit to a branch, tag, fast-forward main
    # The attempts its own commit loop makes at most (None: as many as the suite asks through
    # TableContext.commit_attempts_max). 1: it does not retry a rejected commit (pyiceberg
    # before 0.12): the model's writer then ends Conflict at the first rejection too, and the
    # classes that need a second attempt are out of reach, with that reason, not missed.
    commit_attempts_max: int | None = None
    format_versions: frozenset = frozenset({2})   # table versions it creates and commits to
    v3_operations: frozenset = frozenset()        # on a v3 table: a subset of V3_OPERATIONS
    dv_policy: str | None = None                  # v3: DV_CONFLICT or DV_MERGE
    row_lineage: bool = False                     # v3: read_v3 gives each row's _row_id
    v3_upgrade: bool = False                      # v3: create_table honours ctx.upgraded_from_v2

    @property
    def v3(self) -> bool:
        """Whether the suite's v3 phase can drive this engine."""
        return 3 in self.format_versions and bool(self.v3_operations)

    def __post_init__(self):
        bad = set(self.operations) - set(OPERATIONS)
        if bad or APPEND not in self.operations:
            raise EngineSpecError(f"operations must include append and be among {OPERATIONS}: {sorted(bad)}")
        if self.mode not in (STEPPING, BLACK_BOX):
            raise EngineSpecError(f"mode must be {STEPPING!r} or {BLACK_BOX!r}, not {self.mode!r}")
        if not set(self.faults) <= set(FAULT_KINDS):
            raise EngineSpecError(f"faults must be among {FAULT_KINDS}: {sorted(self.faults)}")
        if not set(self.reads) <= set(READS) or READ_CURRENT not in self.reads:
            raise EngineSpecError(f"reads must include current and be among {READS}: {sorted(self.reads)}")
        if self.isolation not in (SERIALIZABLE, SNAPSHOT):
            raise EngineSpecError(f"isolation must be {SERIALIZABLE!r} or {SNAPSHOT!r}")
        if not self.stores or not set(self.stores) <= set(STORES):
            raise EngineSpecError(f"stores must be a non-empty subset of {', '.join(STORES)}: {sorted(self.stores)}")
        allowed = TRANSPORTS if self.mode == STEPPING else BLACK_BOX_TRANSPORTS
        if not set(self.transport) <= set(allowed):
            raise EngineSpecError(f"transport must be among {allowed} for a {self.mode} engine: "
                                  f"{sorted(self.transport)}")
        if self.partitions not in (1, 2):
            raise EngineSpecError(f"partitions must be 1 or 2, not {self.partitions!r}")
        if not self.refs and {TAG, FAST_FORWARD} & set(self.operations):
            raise EngineSpecError("operations tag and fast_forward need refs")
        if not self.format_versions or not set(self.format_versions) <= set(FORMAT_VERSIONS):
            raise EngineSpecError(f"format_versions must be a non-empty subset of {FORMAT_VERSIONS}: "
                                  f"{sorted(self.format_versions)}")
        if self.v3_operations and (3 not in self.format_versions or APPEND not in self.v3_operations
                                   or not set(self.v3_operations) <= set(V3_OPERATIONS)):
            raise EngineSpecError(f"v3_operations need format version 3, must include append and be among "
                                  f"{V3_OPERATIONS}: {sorted(self.v3_operations)}")
        if self.v3_upgrade and not {ROW_DELETE, ROW_UPDATE} & set(self.v3_operations):
            raise EngineSpecError("v3_upgrade (a table upgraded from v2 for DVs to merge its position deletes) "
                                  "needs v3 row_delete or row_update")
        if self.dv_policy not in (None, *DV_POLICIES):
            raise EngineSpecError(f"dv_policy must be one of {DV_POLICIES}, not {self.dv_policy!r}")
        if {ROW_DELETE, ROW_UPDATE} & set(self.v3_operations) and self.dv_policy is None:
            raise EngineSpecError("an engine that writes deletion vectors (v3 row_delete, row_update) declares its "
                                  f"dv_policy, one of {DV_POLICIES}")
        if self.commit_attempts_max is not None and (not isinstance(self.commit_attempts_max, int)
                                                     or self.commit_attempts_max < 1):
            raise EngineSpecError(f"commit_attempts_max must be None or an int >= 1, not {self.commit_attempts_max!r}")
        if (TRANSPORT_REST in self.transport) != ("rest" in self.stores):
            raise EngineSpecError("a black-box engine whose swap is a REST commit (transport 'rest') runs on the "
                                  "'rest' store, and only such an engine does")

    @property
    def rest(self) -> bool:
        """Whether the engine's swap is a REST catalog commit the suite can hold and fault."""
        return TRANSPORT_REST in self.transport

    def to_json(self) -> dict:
        """What the engine declared (verdict.json's `capabilities`; what this leaves out of reach
        is in its `coverage`, per family, with the reasons)."""
        return {"operations": sorted(self.operations), "mode": self.mode, "faults": sorted(self.faults),
                "swap_over_s3": self.swap_over_s3, "reads": sorted(self.reads), "isolation": self.isolation,
                "stores": sorted(self.stores), "transport": sorted(self.transport), "partitions": self.partitions,
                "refs": self.refs, "commit_attempts_max": self.commit_attempts_max,
                "format_versions": sorted(self.format_versions), "v3_operations": sorted(self.v3_operations),
                "dv_policy": self.dv_policy, "row_lineage": self.row_lineage, "v3_upgrade": self.v3_upgrade}

    @property
    def interleaving(self) -> str:
        """How finely the suite can interleave this engine's writers (for the verdict)."""
        if self.mode == STEPPING:
            return "phase by phase"
        if self.rest:
            return "at the REST commit endpoint: each commit request held, faulted and released there"
        return "at S3 requests, swap included" if self.swap_over_s3 else \
            "at S3 requests; the swap does not travel over S3, so interleavings are coarser"


# -- what the harness gives an engine --------------------------------------------------------

class FaultHooks(Protocol):
    """The harness's fault switchboard as a stepping adapter sees it (the module docstring,
    "Faults for stepping adapters"): the adapter's storage and catalog wrappers ask it at each
    write, swap and SQL COMMIT. The suite's implementation, which arms the faults, is
    conformance.suite.hooks.FaultSwitchboard."""

    def on_write(self, writer: int, location: str) -> bool: ...
    def on_swap(self, writer: int) -> str | None: ...
    def on_commit(self, writer: int) -> str | None: ...
    def park(self, writer: int, deliver: Callable[[], object]) -> None: ...


@dataclass
class TableContext:
    warehouse: str
    catalog_uri: str | None = None
    s3_endpoint: str | None = None
    access_keys: dict = field(default_factory=dict)    # writer -> access key id
    secret_key: str = "testing"
    region: str = "us-east-1"
    identifier: str = TABLE_IDENTIFIER
    faults: FaultHooks | None = None
    commit_attempts_max: int = 2
    seed: int = 0
    workdir: str | None = None
    partitions: int = 1       # the run's model: > 1, or row-level kinds, need PART_COLUMN
    refs: bool = False        # the run's model has branch BRANCH (created by create_branch)
    format_version: int = 2   # the table's format version (3: the suite's v3 phase)
    # v3 phase, a table upgraded from v2 (spec/PROTOCOL.md 19.8): (rows, deleted). Create
    # the table as v2, append one data file of `rows` (COLUMN values, in order), delete each
    # row of `deleted` by a position delete file of its own, then upgrade it to v3 (no v3
    # snapshot yet). () : created as v3.
    upgraded_from_v2: tuple = ()
    # The clock memory storage should stamp each file's last-modified time with (orphan
    # removal by age, conformance.suite.clock); None: the engine's own. The suite ages files
    # only on memory storage; a file an engine stamps by the wall clock instead is younger
    # than every threshold the suite passes, so its orphan removal is judged for safety only.
    now_ms: Callable[[], int] | None = None

    def access_key(self, writer: int) -> str:
        return self.access_keys.get(writer, self.access_keys.get(0, "testing"))


# -- what a writer is asked to do -----------------------------------------------------------------

@dataclass(frozen=True)
class OpSpec:
    """One operation. `op_id` is unique per run ("w.k"); an engine that can should record
    it in the snapshot summary (key OP_ID_PROPERTY). Filters are over COLUMN: `where`
    None means every row (`true`), otherwise the rows whose id is in `where`."""
    kind: str
    op_id: str
    rows: tuple = ()                      # append / overwrite / upsert / row_update / cdc_update:
                                          # the rows to add (cdc_update: in this order, one data file)
    where: frozenset | None = None        # overwrite / delete / rewrite: rows selected
    target_snapshot_id: int | None = None  # rollback: main's new head (an ancestor); tag,
                                           # fast_forward: the snapshot the ref moves to
    retain_last: int = 1                  # expire: keep this many snapshots of main
    partition: int = 1                    # PART_COLUMN of rows added; the partition an
                                          # overwrite, rewrite, upsert or row-level op works on
    ref: str = "main"                     # the branch an append commits to
    row: str | None = None                # row_delete / row_update: the row (its id); None: no-op;
                                          # cdc_update: the row of `rows` deleted by position

    def __post_init__(self):
        assert self.kind in COMMIT_OPERATIONS or self.kind == COW_DELETE, self.kind
        assert self.kind != ROLLBACK or self.target_snapshot_id is not None, "rollback needs a target"

    @property
    def filter_text(self) -> str:
        """The predicate as text (recorded in histories and reports)."""
        if self.where is None:
            return "true"
        return f"{COLUMN} in ({', '.join(repr(r) for r in sorted(self.where))})"


OP_ID_PROPERTY = "icefloe.conformance.op-id"


# -- outcomes ------------------------------------------------------------------------------------
# Committed(snapshot_id, attempts, metadata_location=None), Conflict(reason, attempts,
# snapshot_id=None, cause=...), Unknown(reason, attempts, snapshot_id=None, ...): the types
# of icefloe.impl.outcomes, imported above, so an engine author has one set to return.
# Their names are the model's and the history checker's outcome names.
OUTCOME_TYPES = {COMMITTED: Committed, CONFLICT: Conflict, UNKNOWN: Unknown}


def outcome_name(outcome) -> str | None:
    """committed / conflict / unknown for an outcome object (None for anything else)."""
    for name, cls in OUTCOME_TYPES.items():
        if isinstance(outcome, cls):
            return name
    return None


# -- reads and history -----------------------------------------------------------------------------

@dataclass(frozen=True)
class ReadResult:
    snapshot_id: int | None
    rows: tuple                      # sorted values of COLUMN
    files: frozenset | None = None   # data file locations read, if the engine can tell


@dataclass(frozen=True)
class V3DataFile:
    """A live data file of a v3 table as `read_v3` sees it."""
    path: str
    first_row_id: int | None
    rows: tuple                      # COLUMN values by position, deletes not applied
    row_ids: tuple                   # each position's _row_id (materialised, or first_row_id + position)


@dataclass(frozen=True)
class V3DeletionVector:
    data_file: str                   # referenced_data_file
    positions: frozenset             # deleted positions, 0-based


@dataclass(frozen=True)
class V3Read:
    """A v3 table's state at one snapshot (the v3 phase compares it with the model's)."""
    snapshot_id: int | None
    next_row_id: int
    files: tuple                     # V3DataFile per live data file
    dvs: tuple                       # V3DeletionVector per live DV (every one the manifests hold)
    rows: tuple | None               # sorted (COLUMN value, _row_id) the engine's scan returns
    scan_error: str | None = None    # why the scan refused, when rows is None
    # V3DeletionVector per (live position delete file, data file it names): an upgraded
    # table's v2 files, which a DV written for the file merges and removes (PROTOCOL 19.8)
    position_deletes: tuple = ()


# SnapshotRecord, VersionRecord, TableHistory: the history checker's input types
# (icefloe.model.checks.history), imported above, so what an engine records is what is judged.


HISTORY_VERSIONS_MAX = 10_000


def history_from_metadata_log(location: str, metadata, read_metadata, snapshot_record) -> TableHistory:
    """A TableHistory from the current metadata back through its metadata-log, for any
    engine whose metadata objects have the spec's fields (`metadata_log[].metadata_file`,
    `current_snapshot_id`, `snapshots[].snapshot_id`): `read_metadata(location)` reads an
    older version, `snapshot_record(snapshot)` makes its SnapshotRecord. A trimmed or
    deleted old version ends the walk (the checker judges what is readable)."""
    chain = [(location, metadata)]
    for entry in reversed(metadata.metadata_log):
        if len(chain) >= HISTORY_VERSIONS_MAX:
            break
        try:
            chain.append((entry.metadata_file, read_metadata(entry.metadata_file)))
        except Exception:  # noqa: BLE001 - a trimmed or deleted old version ends the walk
            break
    chain.reverse()
    versions, snapshots = [], {}
    for loc, m in chain:
        previous = m.metadata_log[-1].metadata_file if m.metadata_log else None
        versions.append(VersionRecord(loc, previous, m.current_snapshot_id,
                                      tuple(s.snapshot_id for s in m.snapshots)))
        for s in m.snapshots:
            if s.snapshot_id not in snapshots:
                snapshots[s.snapshot_id] = snapshot_record(s)
    return TableHistory(tuple(versions), snapshots)


# -- the protocol ------------------------------------------------------------------------------------

@runtime_checkable
class SteppingCommit(Protocol):
    phase: str
    outcome: Outcome | None
    snapshot_id: int | None
    starting_snapshot_id: int | None

    @property
    def done(self) -> bool: ...
    def step(self) -> str: ...


@runtime_checkable
class BlackBoxCommit(Protocol):
    def run(self) -> Outcome: ...


class TableHandle(Protocol):
    def begin(self, writer: int, op: OpSpec) -> SteppingCommit | BlackBoxCommit: ...
    def read_current(self) -> ReadResult: ...
    def read_at(self, snapshot_id: int) -> ReadResult: ...
    def read_incremental(self, since_snapshot_id: int) -> ReadResult: ...
    def read_handle(self, writer: int) -> ReadResult: ...
    # Only for the filtered read: the rows of the snapshot where `column op value` holds
    # (op one of < <= > >= = !=), as the engine's own planning and filtering find them.
    def read_filtered(self, snapshot_id: int, column: str, op: str, value) -> ReadResult: ...
    def history(self) -> TableHistory: ...
    def remove_orphans(self, older_than_ms: int) -> list: ...
    def close(self) -> None: ...
    # Only for an engine with refs (Capabilities.refs): the branch `name` at `snapshot_id`.
    def create_branch(self, name: str, snapshot_id: int) -> None: ...
    # Only on a v3 table (Capabilities.format_versions holds 3): its state at main's head or a snapshot.
    def read_v3(self, snapshot_id: int | None = None) -> V3Read: ...


class Engine(Protocol):
    name: str
    capabilities: Capabilities

    def create_table(self, ctx: TableContext) -> TableHandle: ...
