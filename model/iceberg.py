"""The Iceberg commit protocol as a transition system (spec/PROTOCOL.md; TLA+ module
IcebergCommit, whose actions carry the same names as the functions below).

`successors(bounds, state)` yields (action label, next state) for every enabled
action. Labels are tuples: (ActionName, writer[, detail]). Flawed variants of the
protocol (spec/PROTOCOL.md "Negative controls") are selected by `bounds.variant`;
each changes one rule and is named after the real bug it reproduces.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from icefloe.model import operations as O
from icefloe.model.operations import apply_actions, current, head_snap, justified, manifest_obj, validate
from icefloe.model.state import (
    CLASSIC_KINDS, CONFLICT, ACK_LOST, APPEND, BRANCH, COMMITTED, CRASH, CRASHED, DATA, DATA_KINDS, DELETE_FILE_KINDS,
    DONE, EXPIRE, FAST_FORWARD, FAULT_KINDS, PLAN, LIST, MAIN, MANIFESTS, METADATA, NO_META, NO_PART,
    NO_ROW, NO_SNAP, NOOP, OP_KINDS, PARTITION_KINDS, PENDING, SERIALIZABLE, SNAPSHOT, RENAME,
    RETRY, ROLLBACK, SWAP, SWAP_DELAYED, SWAP_FAIL, TAG_OP, RESOLVE, UNKNOWN, WRITE_FAIL,
    WRITE_PHASES, Meta, MetaId, OpInfo, OpResult, Snap, State, Writer, ancestors, chain, data_obj,
    delete_obj, meta_obj, mget, mput, reach, snap_of,
)


# Variants of the Iceberg-shaped protocol, each breaking one rule of spec/PROTOCOL.md.
ICEBERG_VARIANTS = {
    "correct": "the protocol of spec/PROTOCOL.md",
    "no-revalidate": "(a) a retry re-applies its actions without re-running its validations",
    "cleanup-after-unknown": "(b) an unknown swap outcome is taken as failure and the attempt's files are deleted (iceberg #2317, #4666)",
    "rename-commit": "(c) file-system table: check that the next version is absent, then rename over it; no atomic put-if-absent (iceberg #970, #1014)",
    "pointer-status-check": "an unknown outcome is resolved by comparing the pointer with the attempt's metadata only; a commit that landed and was built upon is declared failed and cleaned up (iceberg #3717, #7151)",
    "no-lineage-check": "a retry after an unknown outcome re-applies the snapshot without looking for it in the metadata chain (iceberg #2808)",
    "expire-deleted-entries": "expiry deletes the files that expired snapshots removed, without checking that a retained snapshot still reaches them (iceberg #17304)",
    "orphans-no-threshold": "orphan removal deletes unreferenced files with no age threshold, while writers are still working",
    "row-delete-ignores-concurrent-deletes": "a merge-on-read DELETE does not look for delete files added concurrently for the data file it names (Spark validates conflicting delete files for UPDATE and MERGE only): it commits over a concurrent UPDATE of the same row",
    "rewrite-ignores-new-deletes": "a compaction commits over position deletes added after it read, so the rows they deleted come back (apache/iceberg #10312)",
    "rewrite-takes-new-sequence": "a compaction's new files take the commit's own data sequence number, so equality deletes committed concurrently no longer apply to them",
    "stale-sequence-number-on-retry": "an append's reused manifest carries an explicit data sequence number fixed at its first attempt, so an equality delete committed before the retry deletes its rows",
    "expire-keeps-main-only": "expiry keeps what main's ancestry reaches and deletes the rest of what expired snapshots reached, blind to tags and branches (apache/iceberg #13568)",
    "validation-ignores-partitions": "a serializable validation conflicts with every concurrent commit, whatever partition it touched (no conflict-detection filter): operations on disjoint partitions abort",
    "branch-commit-on-main": "a commit to a branch builds its snapshot on main's head, the snapshot a writer without refs reads",
}


@dataclass(frozen=True)
class Bounds:
    """The explored instance: every bound of the state space is here."""
    writers: int = 2
    ops: int = 1
    kinds: tuple = CLASSIC_KINDS
    faults: tuple = FAULT_KINDS
    fault_budget: int = 1
    attempts_max: int = 2
    isolation: str = SERIALIZABLE
    orphan_runs: int = 0
    variant: str = "correct"
    # "any": each operation's kind is chosen freely at Begin (every combination);
    # "round-robin": operation k of writer w has kind kinds[((k-1)*writers + w-1) % len]
    # (a fixed workload, for larger instances: --writers 3 --ops 2 runs each kind once).
    workload: str = "any"
    # Partial-order reduction (off by default, so the TLA+ agreement sees every state):
    # once faults have stopped, a writer's private write step (data, manifest, manifest
    # list, metadata file) commutes with every other enabled action and changes nothing
    # a property reads, so one such step is explored alone (an ample set of size one;
    # the state graph is acyclic, so no cycle proviso is needed). Unsound where orphan
    # removal runs while writers work (it reads storage: the orphans-no-threshold variant,
    # orphan_age), so never applied there.
    por: bool = False
    # Partitions of the table (1 or 2): partition-scoped kinds pick one at Begin.
    partitions: int = 1
    # Refs: branch "b" (created with the table, at main's head) and tag "t"; appends may
    # commit to the branch; kinds tag and fast_forward move the tag and main.
    refs: bool = False
    # Orphan removal by age (spec/PROTOCOL.md 12.2): AgeFiles, time passing the removal's
    # threshold while no writer works, makes every file then in storage old; orphan removal
    # may then run while writers work and deletes only old files. Off: orphan removal runs
    # only while no writer works (its threshold is then "now").
    orphan_age: bool = False

    def kinds_for(self, w: int, k: int) -> tuple:
        if self.workload == "any":
            return self.kinds
        return (self.kinds[((k - 1) * self.writers + w - 1) % len(self.kinds)],)

    def __post_init__(self):
        assert self.writers >= 1 and self.ops >= 1 and self.attempts_max >= 1
        assert set(self.kinds) <= set(OP_KINDS) and self.kinds, self.kinds
        assert set(self.faults) <= set(FAULT_KINDS), self.faults
        assert self.isolation in (SERIALIZABLE, SNAPSHOT)
        assert self.variant in ICEBERG_VARIANTS, self.variant
        assert self.workload in ("any", "round-robin"), self.workload
        assert self.partitions in (1, 2), self.partitions
        assert self.refs or not {TAG_OP, FAST_FORWARD} & set(self.kinds), "tag, fast_forward need refs"

    def choices(self, kind: str) -> tuple[tuple[int, str, tuple], ...]:
        """(partition, ref, label suffix) for each way to begin an operation of `kind`
        (computed once per kind: the explorer asks at every Begin)."""
        cache = self.__dict__.setdefault("_choices", {})
        if kind not in cache:
            cache[kind] = tuple(self._choices_of(kind))
        return cache[kind]

    def _choices_of(self, kind: str) -> list[tuple[int, str, tuple]]:
        parts = range(1, self.partitions + 1) if kind in PARTITION_KINDS else (NO_PART,)
        refs = (MAIN, BRANCH) if self.refs and kind == APPEND else (MAIN,)
        return [(p, r, ((p,) if self.partitions > 1 and p != NO_PART else ())
                 + ((r,) if self.refs and kind == APPEND else ())) for p in parts for r in refs]


# -- the initial table: two appends by the bootstrap writer 0 ------------------------------

def bootstrap_metas(b: Bounds) -> tuple:
    p2 = b.partitions      # the second file is in the last partition
    s1 = Snap((0, 1), NO_SNAP, frozenset({(0, 1)}), ("l", 0, 1, 1), frozenset({("m", 0, 1, 0)}),
              1, frozenset(), (((0, 1), 1),))
    s2 = Snap((0, 2), (0, 1), frozenset({(0, 1), (0, 2)}), ("l", 0, 2, 1),
              frozenset({("m", 0, 1, 0), ("m", 0, 2, 0)}), 2, frozenset(), (((0, 1), 1), ((0, 2), 2)))
    m1 = Meta(NO_META, (0, 1), frozenset({s1}), OpInfo(APPEND, NO_SNAP, frozenset(), NO_SNAP, 1, MAIN, NO_ROW),
              1, ())
    m2 = Meta((0, 1, 1), (0, 2), frozenset({s1, s2}),
              OpInfo(APPEND, (0, 1), frozenset(), NO_SNAP, p2, MAIN, NO_ROW), 2,
              ((BRANCH, (0, 2)),) if b.refs else ())
    return frozenset({((0, 1, 1), m1), ((0, 2, 1), m2)})


@lru_cache(maxsize=None)
def idle_writer(k: int, ops: int) -> Writer:
    """A writer before operation k (of `ops`); one shared record per (k, ops)."""
    return Writer(k, "", PLAN if k <= ops else DONE, 0, NO_META, NO_SNAP,
                  frozenset(), NO_SNAP, frozenset(), False, False, NO_PART, MAIN, NO_ROW, 0)


PENDING_OUTCOME = OpResult(PENDING, False, False, False)


def initial_state(b: Bounds) -> State:
    metas = bootstrap_metas(b)
    store = frozenset({
        ("d", 0, 1, 0), ("d", 0, 2, 0), ("m", 0, 1, 0), ("m", 0, 2, 0),
        ("l", 0, 1, 1), ("l", 0, 2, 1), ("j", 0, 1, 1), ("j", 0, 2, 1)})
    content = frozenset({((0, 1), frozenset({(0, 1)})), ((0, 2), frozenset({(0, 2)}))})
    parts = frozenset({((0, 1), 1), ((0, 2), b.partitions)})
    return State(
        cat=(0, 2, 1), metas=metas, store=store, content=content, parts=parts, dels=frozenset(),
        inflight=frozenset(),
        writers=tuple(idle_writer(1, b.ops) for _ in range(b.writers)),
        faults_on=bool(b.faults) and b.fault_budget > 0, faults_used=0, orphan_runs=0,
        aged=frozenset(), hist=((0, 1, 1), (0, 2, 1)), acked=frozenset(),
        outcomes=tuple(tuple(PENDING_OUTCOME for _ in range(b.ops)) for _ in range(b.writers)),
        deleted=frozenset(), consumed=frozenset({(0, 1), (0, 2)}), reader_at=(0, 2))


# -- small helpers --------------------------------------------------------------------------

def set_writer(s: State, w: int, wr: Writer, **changes) -> State:
    """s with writer w's record replaced by wr (and the other fields in `changes`, in
    the same step: the explorer builds millions of successor states)."""
    ws = s.writers
    values = list(s)        # one new tuple, not a State._replace on top of a slice
    values[_WRITERS] = ws[:w - 1] + (wr,) + ws[w:]
    for name, value in changes.items():
        values[_FIELD_INDEX[name]] = value
    return _new_state(State, values)


_FIELD_INDEX = {f: i for i, f in enumerate(State._fields)}
_WRITERS = _FIELD_INDEX["writers"]
_new_state = tuple.__new__
# Entries kept by the caches of what an attempt plans and writes (cleared when full).
PLAN_CACHE_MAX = 1 << 16


def op_objects(s: State, w: int, k: int) -> frozenset:
    """Everything operation (w, k) has written that is still in storage."""
    return frozenset(o for o in s.store if o[1] == w and o[2] == k)


def move_pointer(s: State, new: MetaId) -> State:
    """The catalog's pointer takes a new value; the incremental reader of main polls."""
    meta = mget(s.metas, new)
    consumed, reader_at = s.consumed, s.reader_at
    line = ancestors(meta, meta.head)
    if reader_at in line:
        consumed = consumed | frozenset(line[: line.index(reader_at)])
    reader_at = meta.head
    return s._replace(cat=new, hist=s.hist + (new,), consumed=consumed, reader_at=reader_at)


def finish(s: State, w: int, res: str, spurious: bool = False) -> State:
    wr = s.writers[w - 1]
    assert s.outcomes[w - 1][wr.k - 1].res == PENDING, (w, wr.k)
    outcomes = list(s.outcomes)
    row = list(outcomes[w - 1])
    row[wr.k - 1] = OpResult(res, wr.lone, wr.healed, spurious)
    outcomes[w - 1] = tuple(row)
    return set_writer(s, w, idle_writer(wr.k + 1, len(row)), outcomes=tuple(outcomes))


def delete_objects(s: State, objs: frozenset) -> State:
    return s._replace(store=s.store - objs, deleted=s.deleted | (objs & s.store))


def finish_failed(b: Bounds, s: State, w: int, spurious: bool = False) -> State:
    """The operation gives up. Clean up only if the failure is definite: no attempt is
    in the lineage, and every attempt whose outcome was unknown had a base the pointer
    has since left (versions are never reused, so such a request can no longer land).
    Retry/Resolve have already looked for a landed attempt; WriteFails has not (a
    delayed attempt may have landed while a later attempt was writing), so look here."""
    wr = s.writers[w - 1]
    if b.variant != "pointer-status-check" and (
            s.cat in wr.unknowns or own_landed(s, w, wr.k) is not None):
        return finish(s, w, UNKNOWN)
    return finish(delete_objects(s, op_objects(s, w, wr.k)), w, CONFLICT, spurious)


# -- actions (the transition system; names match the TLA+ actions) -------------------------

def plan(b: Bounds, s: State, w: int, kind: str, part: int = NO_PART, ref: str = MAIN) -> State:
    """Begin: refresh (read the pointer) and plan the operation at its starting snapshot
    (model/operations.py plan_operation)."""
    wr = s.writers[w - 1]
    meta = current(s)
    others_done = all(o.phase == DONE for i, o in enumerate(s.writers) if i != w - 1)
    new = Writer(wr.k, kind, DATA, 1, s.cat, O.starting_snapshot(meta, kind, ref), frozenset(), NO_SNAP,
                 frozenset(), others_done and not s.inflight, not s.faults_on, part, ref, NO_ROW, 0)
    # What an operation plans is a function of its writer record, the version it reads and
    # the files' rows, partitions and deletes (maps shared by the many states in which only
    # the other writers differ): computed once for them, not once per interleaving.
    cache = b.__dict__.setdefault("_planned", {})
    key = (w, new, meta, s.content, s.parts, s.dels)
    planned = cache.get(key, cache)
    if planned is cache:
        if len(cache) >= PLAN_CACHE_MAX:
            cache.clear()
        planned = cache[key] = O.plan_operation(b, s, w, new)
    if planned is None:
        return finish(set_writer(s, w, new), w, NOOP)
    fid = (w, wr.k)
    if planned.rows is not None:
        s = s._replace(content=mput(s.content, fid, planned.rows), parts=mput(s.parts, fid, part))
    if planned.delete is not None:
        s = s._replace(dels=mput(s.dels, fid, planned.delete))
    return set_writer(s, w, planned.writer)


def write_data(s: State, w: int) -> State:
    """Write the operation's data file and / or delete file (written once, reused)."""
    wr = s.writers[w - 1]
    objs = set()
    if wr.kind in DATA_KINDS:
        objs.add(data_obj((w, wr.k)))
    if wr.kind in DELETE_FILE_KINDS:
        objs.add(delete_obj((w, wr.k)))
    return set_writer(s, w, wr._replace(phase=MANIFESTS), store=s.store | objs)


def write_manifests(b: Bounds, s: State, w: int) -> State:
    wr = s.writers[w - 1]
    nxt = wr._replace(phase=LIST)
    if wr.kind == APPEND and b.variant == "stale-sequence-number-on-retry":
        # The manifest's entries carry an explicit data sequence number, fixed now.
        nxt = nxt._replace(mseq=mget(s.metas, wr.base).last_seq + 1)
    return set_writer(s, w, nxt, store=s.store | {manifest_obj(wr, w)})


def write_manifest_list(s: State, w: int) -> State:
    wr = s.writers[w - 1]
    obj = ("l", w, wr.k, wr.attempt)
    return set_writer(s, w, wr._replace(phase=METADATA), store=s.store | {obj})


def write_metadata(b: Bounds, s: State, w: int) -> State:
    wr = s.writers[w - 1]
    mid = (w, wr.k, wr.attempt)
    # The metadata an attempt writes is a function of its writer record, its base version
    # and the files' partitions and deletes (apply_actions reads nothing else): computed
    # once for them, not once per interleaving of the other writers.
    cache = b.__dict__.setdefault("_written", {})
    key = (w, wr, mget(s.metas, wr.base), s.content, s.parts, s.dels)
    meta = cache.get(key)
    if meta is None:
        if len(cache) >= PLAN_CACHE_MAX:
            cache.clear()
        meta = cache[key] = apply_actions(b, s, w, wr)
    return set_writer(s, w, wr._replace(phase=SWAP), store=s.store | {meta_obj(mid)},
                      metas=mput(s.metas, mid, meta))


def expire_cleanup(b: Bounds, s: State, pre: Meta, post: Meta) -> State:
    """After an acknowledged expiry: delete what only the expired snapshots reached."""
    return delete_objects(s, O.expire_cleanup_objects(b, pre, post))


def swap(b: Bounds, s: State, w: int) -> State:
    """The catalog's compare-and-swap, acknowledged to the writer."""
    wr = s.writers[w - 1]
    mid = (w, wr.k, wr.attempt)
    if s.cat != wr.base:
        return set_writer(s, w, wr._replace(phase=RETRY))
    if b.variant == "rename-commit":
        return set_writer(s, w, wr._replace(phase=RENAME))
    return commit_acknowledged(b, s, w, mid)


def commit_acknowledged(b: Bounds, s: State, w: int, mid: MetaId) -> State:
    wr = s.writers[w - 1]
    pre = mget(s.metas, wr.base)
    s = move_pointer(s, mid)._replace(acked=s.acked | {mid})
    if wr.kind == EXPIRE:
        s = expire_cleanup(b, s, pre, mget(s.metas, mid))
    return finish(s, w, COMMITTED)


def rename(b: Bounds, s: State, w: int) -> State:
    """Variant rename-commit: the second half of check-then-rename; overwrites."""
    wr = s.writers[w - 1]
    return commit_acknowledged(b, s, w, (w, wr.k, wr.attempt))


def own_landed(s: State, w: int, k: int) -> MetaId | None:
    for m in chain(s.metas, s.cat):
        if m[0] == w and m[1] == k:
            return m
    return None


# Where a retry restarts (5.2): an append reuses its manifest; a metadata-only operation
# writes only metadata; every other kind re-plans its manifests against the new base.
RESTART_PHASE = {APPEND: LIST, ROLLBACK: METADATA, EXPIRE: METADATA, TAG_OP: METADATA, FAST_FORWARD: METADATA}


def reconcile(b: Bounds, s: State, w: int) -> State:
    """Retry / Resolve: refresh; if an earlier attempt landed, the operation committed;
    otherwise validate against the refreshed base and start the next attempt."""
    wr = s.writers[w - 1]
    resolving = wr.phase == RESOLVE
    if resolving and b.variant == "cleanup-after-unknown":
        raise AssertionError("unreachable: that variant never waits in RESOLVE")
    if resolving and b.variant == "pointer-status-check":
        if s.cat == (w, wr.k, wr.attempt):
            return finish(s._replace(acked=s.acked | {s.cat}), w, COMMITTED)
        return finish_failed(b, s, w)
    if not (b.variant == "no-lineage-check" and resolving):
        landed = own_landed(s, w, wr.k)
        if landed is not None:
            return finish(s._replace(acked=s.acked | {landed}), w, COMMITTED)
    if wr.attempt >= b.attempts_max:
        return finish_failed(b, s, w)
    if b.variant != "no-revalidate" and not validate(b, s, wr):
        return finish_failed(b, s, w, not justified(s, wr))
    if wr.kind in (ROLLBACK, TAG_OP, FAST_FORWARD) and snap_of(current(s), wr.target) is None:
        return finish_failed(b, s, w)           # even without validation: nothing to point at
    nxt = RESTART_PHASE.get(wr.kind, MANIFESTS)
    return set_writer(s, w, wr._replace(phase=nxt, attempt=wr.attempt + 1, base=s.cat))


# -- faults ---------------------------------------------------------------------------------

def fault_enabled(b: Bounds, s: State, kind: str) -> bool:
    return s.faults_on and kind in b.faults


def spend_fault(b: Bounds, s: State) -> State:
    """Faults come from a budget; when it is spent, faults have stopped (healed)."""
    used = s.faults_used + 1
    return s._replace(faults_used=used, faults_on=used < b.fault_budget)


def write_fails(b: Bounds, s: State, w: int) -> State:
    """A storage write fails (definitely not written): the operation aborts."""
    return finish_failed(b, spend_fault(b, s), w)


def swap_fails(b: Bounds, s: State, w: int) -> State:
    """The swap request is rejected before it could have any effect."""
    wr = s.writers[w - 1]
    return set_writer(spend_fault(b, s), w, wr._replace(phase=RETRY))


def unknown_outcome(b: Bounds, s: State, w: int) -> State:
    wr = s.writers[w - 1]
    if b.variant == "cleanup-after-unknown":
        return finish(delete_objects(s, op_objects(s, w, wr.k)), w, CONFLICT)
    return set_writer(s, w, wr._replace(phase=RESOLVE, unknowns=wr.unknowns | {wr.base}))


def ack_lost(b: Bounds, s: State, w: int) -> State:
    """The swap is applied (if the pointer matched) but the acknowledgement is lost."""
    wr = s.writers[w - 1]
    s = spend_fault(b, s)
    if s.cat == wr.base:
        s = move_pointer(s, (w, wr.k, wr.attempt))
    return unknown_outcome(b, s, w)


def swap_delayed(b: Bounds, s: State, w: int) -> State:
    """The client times out; its request is still in flight and may land later."""
    wr = s.writers[w - 1]
    s = spend_fault(b, s)._replace(inflight=s.inflight | {(w, wr.base, (w, wr.k, wr.attempt))})
    return unknown_outcome(b, s, w)


def deliver(s: State, req) -> State:
    """A delayed swap request reaches the catalog and is compared-and-swapped there."""
    _, expected, new = req
    s = s._replace(inflight=s.inflight - {req})
    return move_pointer(s, new) if s.cat == expected else s


def crash(b: Bounds, s: State, w: int) -> State:
    return finish(spend_fault(b, s), w, CRASHED)


ORPHAN_KINDS = ("d", "x", "m", "l")     # never metadata JSON (12.1)


def quiet(s: State) -> bool:
    """No writer is working and no swap request is in flight: every file in storage was
    written by an operation that has ended (and cannot land any more)."""
    return all(x.phase in (PLAN, DONE) for x in s.writers) and not s.inflight


def age_files(s: State) -> State:
    """Time passes the orphan-removal threshold (12.2): every file in storage now is older
    than it. Only while quiet: the threshold is older than the start of every operation
    that works after it (Iceberg's "older than any commit in flight")."""
    assert quiet(s), "a file of a working writer never ages past the threshold"
    return s._replace(aged=s.store)


def remove_orphans(s: State, threshold: bool = False) -> State:
    """Delete data, delete, manifest and manifest-list objects no retained snapshot reaches;
    with `threshold`, only those older than it (AgeFiles), the others may be a working
    writer's (12.2)."""
    live = frozenset().union(*(reach(x) for x in current(s).snaps))
    old = s.aged if threshold else s.store
    gone = frozenset(o for o in s.store if o[0] in ORPHAN_KINDS and o not in live and o in old)
    return delete_objects(s, gone)._replace(orphan_runs=s.orphan_runs + 1)


def _private_step(b: Bounds, s: State):
    """The ample set of the partial-order reduction, or None (see Bounds.por)."""
    if not b.por or s.faults_on or b.variant == "orphans-no-threshold" or b.orphan_age:
        return None
    for w, wr in enumerate(s.writers, start=1):
        if wr.phase == DATA:
            return ("WriteData", w), write_data(s, w)
        if wr.phase == MANIFESTS:
            return ("WriteManifests", w), write_manifests(b, s, w)
        if wr.phase == LIST:
            return ("WriteManifestList", w), write_manifest_list(s, w)
        if wr.phase == METADATA:
            return ("WriteMetadata", w), write_metadata(b, s, w)
    return None


def successors(b: Bounds, s: State):
    """Every enabled action with its successor state."""
    ample = _private_step(b, s)
    if ample is not None:
        yield ample
        return
    for w, wr in enumerate(s.writers, start=1):
        ph = wr.phase
        if ph == PLAN:
            for kind in b.kinds_for(w, wr.k):
                for part, ref, more in b.choices(kind):
                    yield ("Begin", w, kind) + more, plan(b, s, w, kind, part, ref)
            continue
        if ph == DONE:
            continue
        if ph == DATA:
            yield ("WriteData", w), write_data(s, w)
        elif ph == MANIFESTS:
            if wr.kind == APPEND and wr.attempt > 1:
                raise AssertionError("an append reuses its manifest")
            yield ("WriteManifests", w), write_manifests(b, s, w)
        elif ph == LIST:
            yield ("WriteManifestList", w), write_manifest_list(s, w)
        elif ph == METADATA:
            yield ("WriteMetadata", w), write_metadata(b, s, w)
        elif ph == SWAP:
            yield ("Swap", w), swap(b, s, w)
            if fault_enabled(b, s, SWAP_FAIL):
                yield ("SwapFails", w), swap_fails(b, s, w)
            if fault_enabled(b, s, ACK_LOST):
                yield ("AckLost", w), ack_lost(b, s, w)
            if fault_enabled(b, s, SWAP_DELAYED):
                yield ("SwapDelayed", w), swap_delayed(b, s, w)
        elif ph == RENAME:
            yield ("Rename", w), rename(b, s, w)
        elif ph == RETRY:
            yield ("Retry", w), reconcile(b, s, w)
        elif ph == RESOLVE:
            yield ("Resolve", w), reconcile(b, s, w)
        else:
            raise AssertionError(ph)
        if ph in WRITE_PHASES and fault_enabled(b, s, WRITE_FAIL):
            yield ("WriteFails", w), write_fails(b, s, w)
        if fault_enabled(b, s, CRASH):
            yield ("Crash", w), crash(b, s, w)
    for req in sorted(s.inflight):
        new = req[2]                # labels name the request: (writer, op, attempt)
        yield ("Deliver", req[0], new[1], new[2]), deliver(s, req)
        yield ("Drop", req[0], new[1], new[2]), s._replace(inflight=s.inflight - {req})
    if s.faults_on:
        yield ("Heal", 0), s._replace(faults_on=False)
    if s.orphan_runs < b.orphan_runs:
        calm = quiet(s)
        if calm or b.variant == "orphans-no-threshold":
            yield ("RemoveOrphans", 0), remove_orphans(s)
        elif b.orphan_age and s.aged:
            yield ("RemoveOrphans", 0), remove_orphans(s, threshold=True)
        if b.orphan_age and calm and s.aged != s.store:
            yield ("AgeFiles", 0), age_files(s)


def is_terminal(s: State) -> bool:
    return all(x.phase == DONE for x in s.writers) and not s.inflight


__all__ = ["Bounds", "ICEBERG_VARIANTS", "SERIALIZABLE", "SNAPSHOT", "initial_state",
           "successors", "is_terminal", "current", "head_snap", "validate", "quiet"]
