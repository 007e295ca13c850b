"""Values of the model: ids, metadata versions, snapshots, writers, the whole state.

spec/PROTOCOL.md "The table as a tree of immutable files"; TLA+ module
IcebergCommit, section "Values". Every id is a tuple of small integers derived
from (writer, operation index, attempt), never from a counter or a clock, so two
runs that take the same steps reach equal states (and the TLA+ spec, which uses the
same ids, reaches the same states: see docs/model-tla-mapping.md).

Object kinds in storage (ObjId = (kind, writer, op, attempt)):
  "d" data file        (one per operation, written once, reused by every attempt)
  "x" delete file      (position or equality; one per row-level operation, written once)
  "m" manifest         (append: one per operation, attempt 0, reused; others: per attempt)
  "l" manifest list    (per attempt)
  "j" metadata JSON    (per attempt; its MetaId is (writer, op, attempt))
Writer 0 is the bootstrap that created the initial table (two snapshots).
"""
from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

SnapId = tuple[int, int]            # (writer, op): kept across attempts
FileId = tuple[int, int]            # the data file (or delete file) an operation writes
RowId = tuple                       # (writer, op): the operation that first wrote the row;
                                    # (writer, op, 0): the version a cdc_update wrote and
                                    # then deleted by position in the same commit
MetaId = tuple[int, int, int]       # (writer, op, attempt)
ObjId = tuple[str, int, int, int]   # (kind, writer, op, attempt)

NO_SNAP: SnapId = (0, 0)
NO_META: MetaId = (0, 0, 0)
NO_ROW: tuple = ()                  # an operation that names no row
NO_PART = 0                         # an operation that is not scoped to a partition (1..P)

# Refs (spec/PROTOCOL.md 8): main, one more branch and one tag.
MAIN, BRANCH, TAG = "main", "b", "t"

# Phases of a writer (spec/PROTOCOL.md "Writer phases").
PLAN, DATA, MANIFESTS, LIST, METADATA, SWAP, RENAME, RETRY, RESOLVE, DONE = (
    "plan", "data", "manifests", "list", "metadata", "swap", "rename", "retry", "resolve", "done")
WRITE_PHASES = (DATA, MANIFESTS, LIST, METADATA)

# Operation kinds and final outcomes of an operation.
APPEND, OVERWRITE, DELETE, REWRITE, ROLLBACK, EXPIRE = (
    "append", "overwrite", "delete", "rewrite", "rollback", "expire")
# Row-level (merge-on-read) operations: row deltas that add delete files (PROTOCOL 7.3).
ROW_DELETE, ROW_UPDATE, UPSERT = "row_delete", "row_update", "upsert"
# A row inserted and updated within one commit, as a change-data-capture writer does it
# (Flink's, one checkpoint): one data file holding both versions and a position delete of
# the first version naming that same file, of the commit's own sequence number (PROTOCOL 7.3).
CDC_UPDATE = "cdc_update"
# Ref operations (PROTOCOL 8): point the tag at main's head; fast-forward main to the branch.
TAG_OP, FAST_FORWARD = "tag", "fast_forward"
OP_KINDS = (APPEND, OVERWRITE, DELETE, REWRITE, ROLLBACK, EXPIRE, ROW_DELETE, ROW_UPDATE, UPSERT,
            TAG_OP, FAST_FORWARD, CDC_UPDATE)
# The kinds of the single-partition table without delete files or refs (the default bounds).
CLASSIC_KINDS = (APPEND, OVERWRITE, DELETE, REWRITE, ROLLBACK, EXPIRE)
DATA_KINDS = (APPEND, OVERWRITE, REWRITE, ROW_UPDATE, UPSERT, CDC_UPDATE)   # write a data file
DELETE_FILE_KINDS = (ROW_DELETE, ROW_UPDATE, UPSERT, CDC_UPDATE)              # write a delete file
SNAPSHOT_KINDS = (APPEND, OVERWRITE, DELETE, REWRITE, ROW_DELETE, ROW_UPDATE, UPSERT, CDC_UPDATE)
# Kinds scoped to one partition (chosen at Begin when the table has more than one).
PARTITION_KINDS = SNAPSHOT_KINDS
# Delete file contents (Iceberg spec "Row-level Deletes").
POSITION, EQUALITY = "position", "equality"
PENDING, COMMITTED, CONFLICT, UNKNOWN, CRASHED, NOOP = (
    "pending", "committed", "conflict", "unknown", "crashed", "noop")

# Isolation levels of operations that read what they replace (spec/PROTOCOL.md 7.3).
SERIALIZABLE, SNAPSHOT = "serializable", "snapshot"

# Fault kinds (spec/PROTOCOL.md "Faults").
WRITE_FAIL, SWAP_FAIL, ACK_LOST, SWAP_DELAYED, CRASH = (
    "write_fail", "swap_fail", "ack_lost", "swap_delayed", "crash")
FAULT_KINDS = (WRITE_FAIL, SWAP_FAIL, ACK_LOST, SWAP_DELAYED, CRASH)
# The action that injects each fault kind (model and TLA+ action names).
FAULT_ACTIONS = {WRITE_FAIL: "WriteFails", SWAP_FAIL: "SwapFails", ACK_LOST: "AckLost",
                 SWAP_DELAYED: "SwapDelayed", CRASH: "Crash"}
# The action a writer takes in each phase it can leave by itself (faults aside).
PHASE_ACTIONS = {DATA: "WriteData", MANIFESTS: "WriteManifests", LIST: "WriteManifestList",
                 METADATA: "WriteMetadata", SWAP: "Swap", RENAME: "Rename", RETRY: "Retry", RESOLVE: "Resolve"}


class Snap(NamedTuple):
    """A snapshot as recorded in one metadata version (its record may differ between
    attempts of the same operation: a retry gets a new parent, manifest list and
    sequence number)."""
    id: SnapId
    parent: SnapId
    files: frozenset            # data FileIds live in this snapshot
    mlist: ObjId
    manifests: frozenset        # ObjIds of the manifests the list names
    seq: int                    # sequence_number
    deletes: frozenset          # delete FileIds live in this snapshot
    dseq: tuple                 # sorted ((FileId, data sequence number), ...) of files and deletes


class DelFile(NamedTuple):
    """A delete file's content (immutable): a position delete names (data file, row)
    pairs; an equality delete deletes every row of its partition (the model's one
    equality key is the partition) in data files of a smaller data sequence number."""
    kind: str                   # POSITION | EQUALITY
    part: int
    targets: frozenset          # position: {(FileId, RowId)}; equality: empty


class OpInfo(NamedTuple):
    """What an operation planned at its starting snapshot (auxiliary: only the
    property checks read it; Iceberg keeps the same in the snapshot summary)."""
    kind: str
    start: SnapId               # the head of its ref when it planned
    files: frozenset            # delete/rewrite: the named files; overwrite: its read set;
                                # row-level: the data file its position delete names
    target: SnapId              # rollback, tag, fast_forward: the snapshot the ref moves to
    part: int                   # its partition (1..P), NO_PART when not partition-scoped
    ref: str                    # the ref it commits to
    row: tuple                  # row_delete/row_update: (FileId, RowId) it deletes; cdc_update:
                                # (its own FileId, the first version's RowId); else NO_ROW


class Meta(NamedTuple):
    """One metadata JSON file: immutable once written."""
    prev: MetaId                # previous_metadata_location
    head: SnapId                # refs.main / current-snapshot-id
    snaps: frozenset            # retained Snap records
    op: OpInfo
    last_seq: int               # last-sequence-number
    refs: tuple                 # sorted ((name, SnapId), ...): the refs besides main


class Writer(NamedTuple):
    k: int                      # index of the current operation (1-based)
    kind: str
    phase: str
    attempt: int
    base: MetaId                # metadata version this attempt is applied to
    start: SnapId               # the operation's starting snapshot
    files: frozenset
    target: SnapId
    unknowns: frozenset         # bases of attempts whose swap outcome is unknown
    lone: bool                  # began with every other writer done and nothing in flight
    healed: bool                # began after faults stopped
    part: int                   # the partition it works on (NO_PART: none)
    ref: str                    # the ref it commits to
    row: tuple                  # row-level: the (FileId, RowId) its position delete names
    mseq: int                   # an append's manifest's explicit data sequence number (0: inherited)


class OpResult(NamedTuple):
    """How an operation ended, as the history records it (TLA+ OpResult): `res` is an outcome
    name (COMMITTED, CONFLICT, UNKNOWN) or PENDING, CRASHED, NOOP."""
    res: str
    lone: bool
    healed: bool
    spurious: bool              # ended in conflict by a validation no overlapping commit justifies


class State(NamedTuple):
    # -- protocol variables --
    cat: MetaId                 # the catalog's pointer
    metas: frozenset            # {(MetaId, Meta), ...}: metadata files ever written
    store: frozenset            # ObjIds present in storage
    content: frozenset          # {(FileId, frozenset of row ids), ...}: data files
    parts: frozenset            # {(FileId, partition), ...}: data files' partitions
    dels: frozenset             # {(FileId, DelFile), ...}: delete files' contents
    inflight: frozenset         # delayed swap requests (writer, expected MetaId, new MetaId)
    writers: tuple              # Writer per writer 1..W
    faults_on: bool
    faults_used: int
    orphan_runs: int
    aged: frozenset             # ObjIds written before the orphan-removal threshold (AgeFiles)
    # -- history (auxiliary) variables: only the property checks read them --
    hist: tuple                 # every value the pointer has taken, in order
    acked: frozenset            # MetaIds acknowledged to their writer as committed
    outcomes: tuple             # per writer, per operation: OpResult
    deleted: frozenset          # ObjIds ever deleted
    consumed: frozenset         # SnapIds an incremental reader of main has consumed
    reader_at: SnapId           # that reader's position


def _fast_replace(cls):
    """A `_replace` for the hot records: the same result as NamedTuple's (a new instance
    with the named fields changed; an unknown field is a ValueError), without its generic
    machinery. The explorer spends most of its time building successor states; this
    halves what each field change costs."""
    index = {f: i for i, f in enumerate(cls._fields)}
    new = tuple.__new__

    def _replace(self, **changes):
        values = list(self)
        for name, value in changes.items():
            try:
                values[index[name]] = value
            except KeyError:
                raise ValueError(f"{cls.__name__} has no field {name!r}") from None
        return new(cls, values)
    return _replace


State._replace = _fast_replace(State)
Writer._replace = _fast_replace(Writer)


_DICTS: dict = {}           # id(frozenset) -> (that frozenset, it as a dict)
_DICTS_MAX = 1 << 16       # distinct maps alive in one BFS level far exceed 4096: a hit rate that pays


def _as_dict(pairs: frozenset) -> dict:
    """`pairs` as a dict, cached by identity (so a look-up returns the very objects the
    frozenset holds; the entry keeps the frozenset alive, so its id is not reused)."""
    hit = _DICTS.get(id(pairs))
    if hit is not None and hit[0] is pairs:
        return hit[1]
    if len(_DICTS) >= _DICTS_MAX:
        _DICTS.clear()
    d = dict(pairs)
    _DICTS[id(pairs)] = (pairs, d)
    return d


def mget(pairs: tuple, key):
    """The value of `key` in `pairs` (a function as key/value pairs); KeyError if absent.
    The state's growing maps are frozensets shared by many states (their hash is cached):
    each is turned into a dict once (a bounded cache) instead of scanned per look-up."""
    if type(pairs) is frozenset:
        return _as_dict(pairs)[key]
    for k, v in pairs:
        if k == key:
            return v
    raise KeyError(key)


def mput(pairs, key, value):
    """`pairs` (a function as key/value pairs) with key set to value. The state's growing
    maps (metas, content, parts, dels) are frozensets, whose hash Python caches: most
    transitions leave them alone, and a successor state then re-hashes none of it. The
    small maps inside records (Meta.refs, Snap.dseq) are sorted tuples."""
    if isinstance(pairs, frozenset):
        if key not in _as_dict(pairs):
            # A new key (the usual case: ids are never reused): a union keeps the hashes
            # the frozenset already holds instead of re-hashing every pair.
            return pairs | {(key, value)}
        return frozenset([p for p in pairs if p[0] != key] + [(key, value)])
    out = [(k, v) for k, v in pairs if k != key]
    out.append((key, value))
    out.sort()
    return tuple(out)


def snap_of(meta: Meta, sid: SnapId) -> Snap | None:
    for s in meta.snaps:
        if s.id == sid:
            return s
    return None


def data_obj(f: FileId) -> ObjId:
    return ("d", f[0], f[1], 0)


def delete_obj(f: FileId) -> ObjId:
    return ("x", f[0], f[1], 0)


def meta_obj(m: MetaId) -> ObjId:
    return ("j", m[0], m[1], m[2])


@lru_cache(maxsize=1 << 16)
def reach(snap: Snap) -> frozenset:
    """Objects a reader of this snapshot opens (manifest list, manifests, data files,
    delete files)."""
    return frozenset({snap.mlist, *snap.manifests, *(data_obj(f) for f in snap.files),
                      *(delete_obj(f) for f in snap.deletes)})


@lru_cache(maxsize=1 << 12)
def reach_all(snaps: frozenset) -> frozenset:
    """Objects a reader of any of these snapshots opens (the union of `reach`)."""
    return frozenset().union(*(reach(x) for x in snaps))


def ref_head(meta: Meta, ref: str) -> SnapId:
    """The head of `ref` in `meta` (NO_SNAP: the ref does not exist)."""
    if ref == MAIN:
        return meta.head
    for name, sid in meta.refs:
        if name == ref:
            return sid
    return NO_SNAP


def ref_heads(meta: Meta) -> list[SnapId]:
    """The head of every ref (main first)."""
    return [meta.head] + [sid for _, sid in meta.refs]


def ancestors(meta: Meta, sid: SnapId) -> list[SnapId]:
    """sid and its ancestors that are still retained in `meta`, newest first."""
    out = []
    by_id = {s.id: s for s in meta.snaps}
    while sid in by_id and sid not in out:
        out.append(sid)
        sid = by_id[sid].parent
    return out


def chain(metas: tuple, m: MetaId) -> list[MetaId]:
    """m and every metadata version reachable through `prev`, newest first."""
    by_id = _as_dict(metas) if type(metas) is frozenset else dict(metas)
    out = []
    while m in by_id and m not in out:
        out.append(m)
        m = by_id[m].prev
    return out
