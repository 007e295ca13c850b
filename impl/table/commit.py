"""The commit loop as a phase-steppable object (spec/PROTOCOL.md 5 "Writer phases",
6 "Bounded retry", 7 "Retry validation", 9 "Commit outcomes"; model: `iceberg.plan`,
`write_data`, `write_manifest`, `write_list`, `write_meta`, `swap`, `reconcile`,
`finish_failed`; TLA+ actions Begin, WriteData, WriteManifest, WriteList, WriteMeta,
Swap, Retry/Resolve).

`PendingCommit.step()` runs exactly one phase, so a test can interleave writers phase by
phase; `run()` steps until an outcome. An operation (producer.py, operations.py) says
what to write and which validations and actions it has; the loop owns the protocol:

- the snapshot id is drawn once and kept across attempts (1.5);
- SwapRejected and SwapUnknown both lead to `reconcile`, which reads the pointer once,
  looks for this operation's attempts in the chain of that pointer (9.3 step 2), and
  only then gives up or re-validates and starts the next attempt;
- after SwapUnknown nothing is ever deleted; a failure is definite (and cleanup runs)
  only when no attempt is in the chain and the pointer is not the base of an attempt
  whose outcome was unknown (9.5).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from icefloe.impl.catalog.base import Catalog, CatalogError, TableIdentifier
from icefloe.impl.format.manifest import ManifestFile, assign_first_row_ids, listed_manifests
from icefloe.impl.format.manifest_writer import write_manifest_list
from icefloe.impl.format.metadata import (
    MetadataError, Snapshot, TableMetadata, from_json, snapshot_sequence_number, to_json,
)
from icefloe.impl.io.base import AlreadyExists, ObjectStore, StoreError, StoreOutcomeUnknown
from icefloe.impl.io.locations import canonical_location
from icefloe.impl.outcomes import (
    ATTEMPTS, COLLISION, STORE, TIME, VALIDATION, CommitLoopExceeded, Committed, Conflict, IcefloeError, Outcome,
    InvalidArgument, require,
    SwapRejected, Swapped, SwapUnknown, Unknown,
)
from icefloe.impl.table import updates as U
from icefloe.impl.table.env import (
    Env, backoff_wait_ms, manifest_list_location, metadata_file_location, metadata_version,
)
from icefloe.impl.table.confinement import Confinement, check_metadata_location
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.validation import Validation, check_all

# Phases (model: state.py phase names).
PLAN, DATA, MANIFESTS, LIST, METADATA, SWAP, RETRY, RESOLVE, DONE = (
    "plan", "data", "manifests", "list", "metadata", "swap", "retry", "resolve", "done")

NUM_RETRIES_DEFAULT = 4
MIN_WAIT_MS_DEFAULT = 100
MAX_WAIT_MS_DEFAULT = 60_000
TOTAL_TIMEOUT_MS_DEFAULT = 1_800_000
CHAIN_WALK_VERSIONS_MAX = 1000
SNAPSHOT_ID_DRAWS_MAX = 3
COMMIT_STEPS_FIXED, COMMIT_STEPS_PER_ATTEMPT = 10, 8     # the loop's bound (run)
_UNDECIDED = object()  # a chain walk that could not reach its end


class Operation(Protocol):
    """What one table operation contributes to the loop. Hooks receive the PendingCommit."""
    ref: str
    produces_snapshot: bool
    restart_phase: str  # where a retry restarts: LIST (fast append), MANIFESTS, METADATA

    def plan(self, c: "PendingCommit") -> bool: ...             # False: nothing to do (5.4)
    def write_data(self, c: "PendingCommit") -> None: ...
    def write_manifests(self, c: "PendingCommit") -> None: ...
    def manifests(self, c: "PendingCommit") -> list[ManifestFile]: ...
    def summary(self, c: "PendingCommit") -> dict[str, str]: ...
    def validations(self, c: "PendingCommit") -> list[Validation]: ...
    def updates(self, c: "PendingCommit", snapshot: Snapshot | None) -> list[U.Update]: ...
    def after_acknowledged(self, c: "PendingCommit", pre: TableMetadata, post: TableMetadata) -> None: ...


@dataclass(frozen=True)
class RetryPolicy:
    """The four commit.retry.* table properties (6.1)."""
    num_retries: int = NUM_RETRIES_DEFAULT
    retry_wait_ms_min: int = MIN_WAIT_MS_DEFAULT
    retry_wait_ms_max: int = MAX_WAIT_MS_DEFAULT
    commit_timeout_ms_total: int = TOTAL_TIMEOUT_MS_DEFAULT

    @classmethod
    def from_properties(cls, props) -> "RetryPolicy":
        def get(key, default):
            try:
                return int(props.get(key, default))
            except (TypeError, ValueError):
                raise InvalidArgument(f"table property {key} is not a whole number: {props.get(key)!r}") from None
        policy = cls(get("commit.retry.num-retries", NUM_RETRIES_DEFAULT),
                     get("commit.retry.min-wait-ms", MIN_WAIT_MS_DEFAULT),
                     get("commit.retry.max-wait-ms", MAX_WAIT_MS_DEFAULT),
                     get("commit.retry.total-timeout-ms", TOTAL_TIMEOUT_MS_DEFAULT))
        require(policy.num_retries >= 0 and 0 <= policy.retry_wait_ms_min <= policy.retry_wait_ms_max,
                f"commit.retry.* out of range: {policy}")
        return policy

    @property
    def commit_attempts_max(self) -> int:
        return self.num_retries + 1


def read_metadata(io: ObjectStore, location: str) -> TableMetadata:
    """The metadata file at `location`; CorruptMetadata if its location field disagrees with
    the table root its own location implies (confinement.py: the commit would write, and
    cleanup delete, wherever the field points)."""
    metadata = from_json(io.get(location), location)
    check_metadata_location(metadata, location)
    return metadata


class PendingCommit:
    def __init__(self, catalog: Catalog, identifier: TableIdentifier, io: ObjectStore,
                 operation: Operation, env: Env | None = None, retry: RetryPolicy | None = None,
                 *, tree: TreeReader | None = None,
                 known: tuple[str | None, TableMetadata | None] | None = None):
        """`tree` and `known` (a metadata location and its parsed content) let a table
        handle share what it has already read or written: every object is immutable and
        named once (1.3, 1.4), so a cached read by location is the read itself."""
        self.catalog, self.identifier, self.io = catalog, identifier, io
        self.operation = operation
        self.env = env or Env()
        self.retry = retry  # None: from the table's properties at plan time
        self.tree = tree if tree is not None else TreeReader(io)
        self._known = known if known is not None and known[1] is not None else None
        self.phase = PLAN
        self.attempt = 0
        self.base: TableMetadata | None = None
        self.base_location: str | None = None
        self.first_base_location: str | None = None
        self.starting_snapshot_id: int | None = None
        self.snapshot_id: int | None = None
        self.snapshot_id_draws = 0
        self.manifest_list_location: str | None = None
        self.first_row_id: int | None = None      # v3: the snapshot's, from this attempt's base
        self.added_rows: int | None = None
        self.new_metadata: TableMetadata | None = None
        self.new_metadata_location: str | None = None
        self.attempted: list[str] = []            # every metadata location written
        self.unknown_bases: set[str] = set()       # canonical bases of unknown swaps (U)
        self.written: list[str] = []              # every object written, for cleanup
        self.outcome: Outcome | None = None
        self.started_ms = 0
        self.swap_results: list = []
        self.catalog_unavailable: str | None = None   # the last rejection, when the catalog was unavailable


    # -- helpers for operations --------------------------------------------------------

    @property
    def starting_snapshot(self) -> Snapshot | None:
        if self.starting_snapshot_id is None:
            return None
        return self.base_at_start.snapshot_by_id(self.starting_snapshot_id)

    def head(self, metadata: TableMetadata | None = None) -> Snapshot | None:
        """The head of the operation's ref in `metadata` (default: the current base)."""
        return (metadata or self.base).ref_head(self.operation.ref)

    def write(self, location: str, data: bytes) -> None:
        """put_if_absent of a freshly named object, recorded for cleanup (9.5). An object
        whose write had an unknown effect is recorded too: deleting it is harmless."""
        try:
            self.io.put_if_absent(location, data)
        except StoreOutcomeUnknown:
            self.written.append(location)
            raise
        # AlreadyExists: not ours, never record or delete it; StoreUnavailable: not written.
        self.written.append(location)

    # -- driving -----------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.phase == DONE

    def run(self) -> Outcome:
        steps = 0
        while not self.done:
            # Bounded: each attempt takes at most 7 phases, plus planning (6.3); the retry
            # policy is read from the table's properties when the commit plans.
            bound = COMMIT_STEPS_FIXED + COMMIT_STEPS_PER_ATTEMPT * (
                self.retry.commit_attempts_max if self.retry else 1)
            if steps >= bound:
                raise CommitLoopExceeded(f"the commit loop did not finish in {bound} steps "
                                         f"(phase {self.phase}, attempt {self.attempt})")
            self.step()
            steps += 1
        assert self.outcome is not None
        return self.outcome

    def step(self) -> str:
        """Run the current phase; returns the next one."""
        require(not self.done, "a finished commit takes no more steps")
        handler = {PLAN: self.refresh_and_plan, DATA: self.write_data, MANIFESTS: self.write_manifests,
                   LIST: self.write_manifest_list, METADATA: self.write_metadata, SWAP: self.swap,
                   RETRY: self.reconcile, RESOLVE: self.reconcile}[self.phase]
        try:
            handler()
        except AlreadyExists as e:
            self._finish_failed(self._read_pointer(), f"name collision (broken random source?): {e}", COLLISION)
        except IcefloeError as e:
            # Store errors, and files that cannot be written as the format says (rows that
            # do not fit the schema): the operation fails (9.5), never half-done.
            if self.phase == PLAN:
                raise  # nothing written yet: the table could not be read or planned
            self._finish_failed(self._read_pointer(), f"{type(e).__name__} in phase {self.phase}: {e}", STORE)
        return self.phase

    def abandon(self, reason: str) -> None:
        """The caller gives up at the first swap, before making it (what the swap had to wait
        for failed): no attempt can have landed, so the commit ends as a Conflict and deletes
        everything it wrote (9.5)."""
        require(self.phase == SWAP and self.attempt == 1 and not self.swap_results and not self.unknown_bases,
                "a commit is abandoned only before its first swap")
        self._finish_failed(None, reason, STORE)

    def _policy(self) -> RetryPolicy:
        if self.retry is None:
            self.retry = RetryPolicy.from_properties(self.base_at_start.properties)
        return self.retry

    # -- phases ------------------------------------------------------------------------

    def refresh_and_plan(self) -> None:
        """Begin: read the pointer and its metadata; the ref's head is the starting snapshot."""
        assert self.phase == PLAN
        location = self.catalog.load(self.identifier)
        if self._known is not None and self._known[0] == location:
            self.base = self.base_at_start = self._known[1]
        else:
            self.base = self.base_at_start = read_metadata(self.io, location)
        self.base_location = self.first_base_location = location
        head = self.head()
        self.starting_snapshot_id = None if head is None else head.snapshot_id
        self._read_base_tree()
        self.started_ms = self.env.monotonic_ms()
        self._policy()
        self.attempt = 1
        if self.operation.produces_snapshot:
            self._draw_snapshot_id()
        if not self.operation.plan(self):
            self.outcome = Committed(None, 0, location)  # no-op (5.4): attempts 0, nothing written
            self.phase = DONE
            return
        problem = check_all(self.operation.validations(self), self.base, self.starting_snapshot_id, self.tree)
        assert problem is None, f"a validation fails on the starting snapshot itself: {problem}"
        self.phase = DATA

    def write_data(self) -> None:
        assert self.phase == DATA and self.attempt == 1
        self.operation.write_data(self)
        self.phase = MANIFESTS

    def write_manifests(self) -> None:
        assert self.phase == MANIFESTS
        self.operation.write_manifests(self)
        self.phase = LIST

    def write_manifest_list(self) -> None:
        assert self.phase == LIST
        if self.operation.produces_snapshot:
            if self.base.snapshot_by_id(self.snapshot_id) is not None:
                # Another writer's snapshot has our id (our own attempts were ruled out by
                # reconcile's chain walk): draw again (1.5).
                if self.snapshot_id_draws >= SNAPSHOT_ID_DRAWS_MAX:
                    self._finish_failed(self._read_pointer(), "snapshot id collided too often", COLLISION)
                    return
                self._draw_snapshot_id()
            head = self.head()
            location = manifest_list_location(self.base.location, self.snapshot_id, self.attempt, self.env.uuid())
            manifests = self.operation.manifests(self)
            sequence_number = snapshot_sequence_number(self.base)   # 0 in v1, which has none
            # v3 row lineage: ids assigned on every attempt from this attempt's base, never
            # kept in a manifest a retry reuses (spec "First Row ID Assignment").
            self.first_row_id = self.added_rows = None
            if self.base.format_version >= 3:
                self.first_row_id = self.base.next_row_id
                manifests, self.added_rows = assign_first_row_ids(manifests, self.first_row_id)
            data = write_manifest_list(manifests, self.snapshot_id, None if head is None else head.snapshot_id,
                                       sequence_number, self.base.format_version)
            self.write(location, data)
            # the next commit's base list, as a reader of `data` would see it
            self.tree.remember_manifest_list(location, listed_manifests(manifests, self.snapshot_id, sequence_number))
            self.manifest_list_location = location
        self.phase = METADATA

    def write_metadata(self) -> None:
        """WriteMeta: apply the actions to the base (a pure function) and write the result."""
        assert self.phase == METADATA
        now = max(self.env.wall_ms(), self.base.last_updated_ms)
        snapshot = None
        if self.operation.produces_snapshot:
            head = self.head()
            snapshot = Snapshot(
                snapshot_id=self.snapshot_id, parent_snapshot_id=None if head is None else head.snapshot_id,
                sequence_number=snapshot_sequence_number(self.base), timestamp_ms=now,
                manifest_list=self.manifest_list_location, summary=self.operation.summary(self),
                schema_id=self.base.current_schema_id,
                first_row_id=self.first_row_id, added_rows=self.added_rows)
        new = U.apply_all(U.succeed(self.base, self.base_location, now), self.operation.updates(self, snapshot))
        if snapshot is not None:
            assert new.snapshot_by_id(snapshot.snapshot_id) == snapshot
            assert new.ref_head(self.operation.ref) == snapshot, "the new snapshot heads its ref (7.4)"
        version = metadata_version(self.base_location)
        version = (len(self.base.metadata_log) if version is None else version) + 1
        location = metadata_file_location(self.base.location, version, self.env.uuid())
        self.write(location, to_json(new))
        self.attempted.append(location)
        self.new_metadata, self.new_metadata_location = new, location
        self.phase = SWAP

    def swap(self) -> None:
        assert self.phase == SWAP and self.new_metadata_location not in (None, self.base_location)
        try:
            result = self.catalog.swap(self.identifier, self.base_location, self.new_metadata_location)
        except Exception as e:  # noqa: BLE001 - a catalog must not raise here; if it does, we do not know
            result = SwapUnknown(self.base_location, self.new_metadata_location, f"swap raised {e!r}")
        self.swap_results.append(result)
        if isinstance(result, Swapped):
            # A catalog that writes its own version of each request (a REST catalog's server
            # applies the attempt's changes) names that version; any other moves to ours.
            assert result.new_location == self.new_metadata_location or writes_own_versions(self.catalog)
            self.outcome = Committed(self.snapshot_id, self.attempt, result.new_location)
            self.phase = DONE
            try:
                self.operation.after_acknowledged(self, self.base, self.new_metadata)
            except StoreError:
                pass  # the commit stands; what was not deleted is left to orphan removal (12)
        elif isinstance(result, SwapRejected):
            self.catalog_unavailable = result.reason if result.unavailable else None
            self.phase = RETRY
        else:
            assert isinstance(result, SwapUnknown), result
            self.unknown_bases.add(canonical_location(self.base_location))
            self.phase = RESOLVE

    def reconcile(self) -> None:
        """Retry / Resolve (9.3): wait, read the pointer once, look for our attempts in its
        chain, then give up or validate and start the next attempt on it."""
        assert self.phase in (RETRY, RESOLVE)
        policy = self._policy()
        time_up = False
        if self.attempt < policy.commit_attempts_max:
            wait = backoff_wait_ms(self.env, self.attempt, policy.retry_wait_ms_min, policy.retry_wait_ms_max)
            if self.env.monotonic_ms() + wait - self.started_ms > policy.commit_timeout_ms_total:
                time_up = True
            else:
                self.env.sleep_ms(wait)
        pointer = self._read_pointer()
        if pointer is None:
            self._finish_failed(None, "cannot read the pointer", STORE)
            return
        location, metadata = pointer
        # With every swap answered definitely, none of ours can be in the chain (3.2); the
        # walk matters, and can be undecided, only after a SwapUnknown.
        landed = self._own_attempt_in_chain(location, metadata) if self.unknown_bases else None
        if landed is _UNDECIDED:
            self._finish_unknown("the metadata chain could not be walked back to the first base")
            return
        if landed is not None:
            self.outcome = Committed(self.snapshot_id, self.attempt, landed)
            self.phase = DONE
            return
        if self.attempt >= policy.commit_attempts_max or time_up:
            why = ATTEMPTS if not time_up else TIME
            if self.catalog_unavailable:   # not a lost race: say what the catalog said (bug10)
                self._finish_failed(pointer, f"the catalog could not take the swap ({self.catalog_unavailable}); "
                                             f"gave up after {self.attempt} attempt(s)", STORE)
                return
            self._finish_failed(pointer, f"out of {why} after {self.attempt} attempt(s)", why)
            return
        problem = check_all(self.operation.validations(self), metadata, self.starting_snapshot_id, self.tree)
        if problem is not None:
            self._finish_failed(pointer, f"validation failed: {problem}", VALIDATION)
            return
        self.base, self.base_location = metadata, location
        self._read_base_tree()
        self.attempt += 1
        self.phase = self.operation.restart_phase

    # -- outcomes ----------------------------------------------------------------------

    def _read_pointer(self) -> tuple[str, TableMetadata] | None:
        try:
            location = self.catalog.load(self.identifier)
            return location, read_metadata(self.io, location)
        except (CatalogError, StoreError, MetadataError):
            return None

    def _own_attempt_in_chain(self, location: str, metadata: TableMetadata):
        """The location of an attempt of ours in the chain of `location`, None if there is
        none, _UNDECIDED if the walk could not finish (9.7). The walk stops at the first
        attempt's base: every attempt was built on a pointer value at or after it."""
        return own_attempt(self.catalog, self.identifier, self.io, location, metadata, self.attempted,
                           self.first_base_location)

    def _finish_unknown(self, reason: str) -> None:
        self.outcome = Unknown(reason, self.attempt, self.snapshot_id, tuple(self.attempted))
        self.phase = DONE

    def _finish_failed(self, pointer: tuple[str, TableMetadata] | None, reason: str, cause: str) -> None:
        """finish_failed (9.5): Unknown while an attempt may have landed or may still land;
        otherwise Conflict, and only then delete everything this operation wrote."""
        assert self.outcome is None, "an operation ends once"
        if pointer is None:
            if self.unknown_bases:  # with no unknown swap, no attempt can have landed
                self._finish_unknown(f"{reason}; pointer unreadable with unknown attempts")
                return
        else:
            location, metadata = pointer
            if self.unknown_bases:  # only an unknown swap can have landed (3.2)
                landed = self._own_attempt_in_chain(location, metadata)
                if landed is not None:
                    self._finish_unknown(f"{reason}; an attempt is in the chain or the walk was cut short")
                    return
            if canonical_location(location) in self.unknown_bases:
                self._finish_unknown(f"{reason}; the pointer is still the base of an unknown attempt")
                return
        confinement = Confinement.for_metadata(self.first_base_location, self.io)
        for obj in reversed(self.written):
            if confinement is None or not confinement.allows(obj):
                continue  # never outside the table the catalog names (left to orphan removal)
            try:
                self.io.delete(obj)
            except StoreError:
                pass  # orphan removal will find it (12)
        self.outcome = Conflict(reason, self.attempt, self.snapshot_id, cause)
        self.phase = DONE

    def _read_base_tree(self) -> None:
        """Refresh reads the base's head manifest list too (model: Begin/Retry read the
        base), so a later expiry of that snapshot cannot fail this attempt's writes:
        the manifests it names stay reachable from the head that replaced it."""
        if self.operation.produces_snapshot:
            self.tree.manifests(self.head())

    def _draw_snapshot_id(self) -> None:
        self.snapshot_id_draws += 1
        self.snapshot_id = self.env.snapshot_id()


def writes_own_versions(catalog) -> bool:
    """Whether `catalog` writes its own version for each swap (a REST catalog): our attempts
    then never appear in the chain, and the catalog itself says which landed (`landed`)."""
    return bool(getattr(catalog, "writes_own_versions", False))


def own_attempt(catalog: Catalog, identifier: TableIdentifier, io: ObjectStore, location: str,
                metadata: TableMetadata, attempted, stop: str | None):
    """The location where one of `attempted` landed, None, or _UNDECIDED: by walking the
    chain (walk_chain), or, for a catalog that writes its own versions, by asking it."""
    if writes_own_versions(catalog):
        try:
            return catalog.landed(identifier, tuple(attempted))
        except CatalogError:
            return _UNDECIDED
    return walk_chain(io, location, metadata, attempted, stop)


def walk_chain(io: ObjectStore, location: str, metadata: TableMetadata, targets, stop: str | None):
    """Walk the chain of `location` (1.7) newest first, by metadata-log entries, reading an
    older file only where a log was trimmed. Returns the first location found in `targets`,
    None when `stop` (or, without a stop, the table's first version) is reached first,
    and _UNDECIDED when the walk cannot finish: an unreadable file, the bound of 1000
    versions, or a chain that ends without passing `stop`."""
    targets = {canonical_location(t) for t in targets}
    stop = None if stop is None else canonical_location(stop)
    visited = 0
    while visited <= CHAIN_WALK_VERSIONS_MAX:
        here = canonical_location(location)
        if here in targets:
            return location
        if here == stop:
            return None
        log = metadata.metadata_log
        for entry in reversed(log):
            visited += 1
            if visited > CHAIN_WALK_VERSIONS_MAX:
                return _UNDECIDED
            c = canonical_location(entry.metadata_file)
            if c in targets:
                return entry.metadata_file
            if c == stop:
                return None
        if not log:
            return None if stop is None else _UNDECIDED
        location = log[0].metadata_file  # the log was trimmed: continue in the oldest file
        try:
            metadata = read_metadata(io, location)
        except (StoreError, MetadataError):
            return _UNDECIDED
    return _UNDECIDED


def resolve_unknown(catalog: Catalog, identifier: TableIdentifier, io: ObjectStore,
                    outcome: Unknown) -> Outcome:
    """9.6: resolve an Unknown later from a fresh pointer read. Committed if an attempt is
    in the chain; Conflict if not and the pointer is no attempt's base (the operation's
    objects may then be deleted, here by orphan removal); otherwise still Unknown."""
    location = catalog.load(identifier)
    metadata = read_metadata(io, location)
    found = own_attempt(catalog, identifier, io, location, metadata, outcome.attempted_locations, None)
    if found is _UNDECIDED:
        return outcome
    if found is not None:
        return Committed(outcome.snapshot_id, outcome.attempts, found)
    if writes_own_versions(catalog):      # the catalog recorded every attempt's refusal: none can land
        return Conflict("resolved: the catalog refused every attempt", outcome.attempts, outcome.snapshot_id,
                        ATTEMPTS)
    bases = set()
    for attempt in outcome.attempted_locations:
        log = read_metadata(io, attempt).metadata_log
        if log:
            bases.add(canonical_location(log[-1].metadata_file))
    if canonical_location(location) in bases:
        return outcome
    return Conflict("resolved: no attempt is in the chain and none can still land",
                    outcome.attempts, outcome.snapshot_id, ATTEMPTS)
