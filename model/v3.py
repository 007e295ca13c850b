"""Iceberg format v3 commits: deletion vectors and row lineage as a transition system
(spec/PROTOCOL.md 19 "Format v3 commits"; TLA+ module IcebergV3, whose actions carry the
names of the functions below; the properties are in model/checks/v3.py).

The v2 model (model/iceberg.py) decides what a commit may reuse, validate and clean up
under faults; this one adds what format v3 changes about a commit, on a small table:

- a **deletion vector** (DV) deletes rows of one data file by position; at most one DV per
  data file is live, so a DV for a file that has one holds all its positions and removes
  it in the same snapshot (table spec "Deletion Vectors"). Two concurrent DVs for one file
  follow the engine's declared **DV policy**: `conflict` (Iceberg-Java 1.10: the second
  writer's validation fails, `validateAddedDVs`) or `merge` (apache/iceberg #17754: a pure
  delete merges a DV that another pure delete added meanwhile; a DV added by an overwrite
  marks rows that live on in its new data file and is never merged);
- **row lineage**: `next-row-id` in the metadata; a data file's `first-row-id` is assigned
  when the attempt writes its metadata, from the base that attempt commits on, and
  `next-row-id` grows by the rows the snapshot adds; a row's `_row_id` is
  `first-row-id + position` unless the file materialises it (compaction and
  copy-on-write copy each row's id into the file they write).

The table starts with two data files written by the bootstrap writer 0: `(0, 1)` with two
rows and `(0, 2)` with one (first-row-ids 0 and 2, next-row-id 3). Each writer runs one
operation of the kind its role names (`V3Bounds.roles`); faults are left to the v2 model
(a v3 commit swaps, retries and resolves exactly as a v2 commit does): what remains is
every interleaving of Begin, WriteData, WriteMetadata, Swap and Retry.

Values are the model's own (ids derive from writer, operation and attempt, as in
model/state.py); a row's `key` is auxiliary: the row it is, whatever id the protocol
gives it, which only the property checks read.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

from icefloe.model.spec import ModuleSpec
from icefloe.model.v3_state import (  # noqa: F401 - the state, re-exported: model.v3 is the v3 model's name
    APPEND, BOOT, COMMITTED, CONFLICT, CONFLICT_POLICY, COW_DELETE, DATA, DONE, DV, DV_KINDS,
    FILE_KINDS, FileId, IDLE, MERGE_POLICY, METADATA, Meta, MetaId, NOOP, NO_FILE, NO_ID, NO_META,
    OP, OpInfo, OpResult, PENDING, PENDING_OUTCOME, PLAN, RETRY, REWRITE, ROW_DELETE, ROW_KINDS,
    ROW_UPDATE, Row, RowKey, SWAP, V3Bounds, V3State, V3_KINDS, V3_VARIANTS, V3_VARIANT_CASES,
    PosDelete, Writer, _dict, deleted_positions, dv_positions, initial_state, live, live_keys, meta,
    pos_delete_positions, row_id, rows_of,
)


def chain_since(s: V3State, start: MetaId) -> list[tuple[Meta, Meta]]:
    """(parent, version) for each version committed after `start`, newest first."""
    out, m = [], s.cat
    while m != start:
        x = meta(s, m)
        out.append((meta(s, x.prev), x))
        m = x.prev
    return out


# -- actions (names match the TLA+ actions) ------------------------------------------------

def choices(s: V3State, kind: str) -> list[tuple[FileId, int]]:
    """What Begin may pick at the current version: a live row, a live file, or nothing."""
    m = meta(s, s.cat)
    if kind in ROW_KINDS:
        return live(s, m)
    if kind == REWRITE:
        return [(f, 0) for f, _ in m.files]
    return [(NO_FILE, 0)]


def new_rows(s: V3State, m: Meta, w: int, kind: str, f: FileId, pos: int) -> tuple:
    """The rows of the data file operation w writes (empty: it writes none). An append
    writes one new row, its id inherited; compaction and copy-on-write copy each live row
    with its _row_id materialised; an update writes the row again, keeping its id (table
    spec "Row Lineage")."""
    if kind == APPEND:
        return (Row((w, OP, 1), NO_ID),)
    if kind in FILE_KINDS:
        keep = [(f, i) for g, i in live(s, m) if g == f and (kind != COW_DELETE or i != pos)]
    else:
        keep = [(f, pos)] if kind == ROW_UPDATE else []
    return tuple(Row(rows_of(s, g)[i - 1].key, row_id(s, m, g, i)) for g, i in keep)


def begin(b: V3Bounds, s: V3State, w: int, f: FileId, pos: int) -> V3State:
    """Begin: read the pointer, plan at the current version (the operation's start)."""
    wr = s.writers[w - 1]
    m = meta(s, s.cat)
    fid = (w, OP)
    rows = new_rows(s, m, w, wr.kind, f, pos)
    content = s.content | {(fid, rows)} if rows else s.content
    nxt = wr._replace(phase=DATA, attempt=1, base=s.cat, start=s.cat, file=f, pos=pos)
    return _set(s, w, nxt, content=content)


def write_data(b: V3Bounds, s: V3State, w: int) -> V3State:
    """WriteData: the data file (once), the DV (every attempt: it holds the positions of the
    DV live in the attempt's base) and an append's manifest (once, reused by a retry)."""
    wr = s.writers[w - 1]
    base = meta(s, wr.base)
    nxt = wr._replace(phase=METADATA)
    if wr.kind in DV_KINDS:
        seed = meta(s, wr.start) if b.variant == "dv-seeded-from-start" else base
        # Position delete files are merged into the DV (table spec "Deletion Vectors").
        held = dv_positions if b.variant == "dv-ignores-position-deletes" else deleted_positions
        nxt = nxt._replace(dv=held(seed, wr.file) | {wr.pos})
    if wr.kind == APPEND and b.variant == "stale-first-row-id-on-retry":
        nxt = nxt._replace(mfirst=base.next_row_id)
    return _set(s, w, nxt)


def new_file(s: V3State, w: int) -> FileId:
    return (w, OP) if (w, OP) in _dict(s.content) else NO_FILE


def apply_actions(b: V3Bounds, s: V3State, w: int) -> Meta:
    """The operation as a pure function of the attempt's base: first-row-id from the base's
    next-row-id (written now, never earlier), DVs replacing the file's live DV and its
    position delete files. The snapshot's manifest list assigns first-row-ids in list
    order, its new manifest first, then each file of an upgraded table still without one
    (table spec "First Row ID Assignment", "Row Lineage for Upgraded Tables")."""
    wr = s.writers[w - 1]
    base = meta(s, wr.base)
    files, dvs, pds, next_row_id = dict(base.files), base.dvs, base.pos_deletes, base.next_row_id
    if wr.kind in FILE_KINDS:
        del files[wr.file]
        dvs = frozenset(d for d in dvs if d.file != wr.file)
        pds = frozenset(d for d in pds if d.file != wr.file)
    if wr.kind in DV_KINDS:
        if b.variant != "replacement-dv-keeps-old":
            dvs = frozenset(d for d in dvs if d.file != wr.file)
            pds = frozenset(d for d in pds if d.file != wr.file)
        dvs = dvs | {DV((w, OP, wr.attempt), wr.file, wr.dv)}
    fid = new_file(s, w)
    if fid != NO_FILE:
        stale = wr.kind == APPEND and b.variant == "stale-first-row-id-on-retry"
        files[fid] = wr.mfirst if stale else base.next_row_id
        next_row_id = base.next_row_id + len(rows_of(s, fid))
    for f in sorted(f for f, first in files.items() if first == NO_ID):
        files[f] = next_row_id
        next_row_id += len(rows_of(s, f))
    op = OpInfo(wr.kind, wr.start, wr.file, wr.pos, fid)
    return Meta(wr.base, tuple(sorted(files.items())), dvs, pds, next_row_id, op)


def write_metadata(b: V3Bounds, s: V3State, w: int) -> V3State:
    wr = s.writers[w - 1]
    mid = (w, OP, wr.attempt)
    return _set(s, w, wr._replace(phase=SWAP), metas=s.metas | {(mid, apply_actions(b, s, w))})


def swap(b: V3Bounds, s: V3State, w: int) -> V3State:
    """The catalog's compare-and-swap: commit, or retry when the pointer moved."""
    wr = s.writers[w - 1]
    if s.cat != wr.base:
        return _set(s, w, wr._replace(phase=RETRY))
    mid = (w, OP, wr.attempt)
    return _finish(s._replace(cat=mid, hist=s.hist + (mid,)), w, COMMITTED)


def added_dvs(s: V3State, start: MetaId) -> list[tuple[Meta, DV]]:
    """(version, DV) for every DV a version committed after `start` added."""
    return [(x, d) for pre, x in chain_since(s, start) for d in x.dvs - pre.dvs]


def validate(b: V3Bounds, s: V3State, wr: Writer) -> bool:
    """The operation's validation against every version committed since it began
    (spec/PROTOCOL.md 19.4): the file it names is still live, and no DV was added for it
    meanwhile, except, under the merge policy, by a pure delete when it is one."""
    if wr.kind == APPEND:
        return True
    if wr.file not in _dict(meta(s, s.cat).files):
        return False
    added = added_dvs(s, wr.start)
    if b.variant == "dv-validation-over-window":
        indexed = [d.file for _, d in added]
        if len(indexed) != len(set(indexed)):
            return False                # "Can't index multiple DVs"
    mine = [x for x, d in added if d.file == wr.file]
    if not mine:
        return True
    if wr.kind == ROW_DELETE and b.dv_policy == MERGE_POLICY:
        mergeable = (ROW_DELETE, ROW_UPDATE) if b.variant == "merge-over-overwrite-dv" else (ROW_DELETE,)
        return all(x.op.kind in mergeable for x in mine)
    return False


def justified(s: V3State, wr: Writer) -> bool:
    """A failed validation is justified when the named file was removed or got a DV
    meanwhile (what L3 NoSpuriousConflict demands)."""
    return wr.file not in _dict(meta(s, s.cat).files) or any(
        d.file == wr.file for _, d in added_dvs(s, wr.start))


def retry(b: V3Bounds, s: V3State, w: int) -> V3State:
    """Retry: refresh, validate against the new base, start the next attempt (a DV writer
    rewrites its DV; every other kind reuses its files and manifests)."""
    wr = s.writers[w - 1]
    if wr.attempt >= b.attempts_max:
        return _finish(s, w, CONFLICT)
    if not validate(b, s, wr):
        return _finish(s, w, CONFLICT, not justified(s, wr))
    phase = DATA if wr.kind in DV_KINDS else METADATA
    return _set(s, w, wr._replace(phase=phase, attempt=wr.attempt + 1, base=s.cat))


def _set(s: V3State, w: int, wr: Writer, **changes) -> V3State:
    ws = s.writers
    return s._replace(writers=ws[:w - 1] + (wr,) + ws[w:], **changes)


def _finish(s: V3State, w: int, res: str, spurious: bool = False) -> V3State:
    assert s.outcomes[w - 1].res == PENDING, w
    out = s.outcomes[:w - 1] + (OpResult(res, spurious),) + s.outcomes[w:]
    return _set(s, w, s.writers[w - 1]._replace(phase=DONE), outcomes=out)


def successors(b: V3Bounds, s: V3State):
    for w, wr in enumerate(s.writers, start=1):
        ph = wr.phase
        if ph == PLAN:
            picks = choices(s, wr.kind)
            if not picks:
                yield ("Begin", w), _finish(s, w, NOOP)
            for f, pos in picks:
                yield ("Begin", w, f, pos), begin(b, s, w, f, pos)
        elif ph == DATA:
            yield ("WriteData", w), write_data(b, s, w)
        elif ph == METADATA:
            yield ("WriteMetadata", w), write_metadata(b, s, w)
        elif ph == SWAP:
            yield ("Swap", w), swap(b, s, w)
        elif ph == RETRY:
            yield ("Retry", w), retry(b, s, w)
        else:
            assert ph == DONE, ph


def is_terminal(s: V3State) -> bool:
    return all(wr.phase == DONE for wr in s.writers)


# -- the Spec for the explorer -------------------------------------------------------------

# Properties of spec/PROPERTIES.md this model does not read (docs/variants.md's matrix):
# faults, refs, cleanup and the incremental reader are the v2 model's (model/iceberg.py).
NOT_APPLICABLE = {p: "the v3 model leaves it to the v2 model (no faults, storage, refs or incremental reader)"
                  for p in ("P1 LinearHistory", "P2 NoLostCommit", "P3 NoDuplicateCommit",
                            "P4 ReadersSeeCommitted", "P5 ValidationSound", "P7 TimeTravelImmutable",
                            "P8 NoDanglingRefs", "P9 CleanupSafe", "P10 IncrementalComplete")}


@dataclass
class V3Spec(ModuleSpec):
    """The Spec protocol (model/spec.py) for v3 commits on the given bounds; its checks are
    model/checks/v3.py's (imported when asked for: that module reads this one)."""
    bounds: V3Bounds
    only: tuple = ()

    @property
    def SAFETY(self):
        from icefloe.model.checks.v3 import SAFETY_CHECKS
        return SAFETY_CHECKS

    @property
    def TERMINAL(self):
        from icefloe.model.checks.v3 import TERMINAL_CHECKS
        return TERMINAL_CHECKS

    _initial = staticmethod(initial_state)
    _successors = staticmethod(successors)
    _is_terminal = staticmethod(is_terminal)

    @staticmethod
    def partition_key(state):
        """What decides which process of a parallel search owns a state: the pointer's
        history, which only a swap changes (as IcebergSpec's)."""
        return state.hist

    def events(self, state, label, nxt):
        if label[0] == "Retry":
            w = label[1]
            res = nxt.outcomes[w - 1].res
            yield f"retry: {res if res != PENDING else 'next attempt'}"
            if nxt.outcomes[w - 1].spurious:
                yield "spurious conflict"
        if label[0] == "Swap" and nxt.cat != state.cat:
            m = meta(nxt, nxt.cat)
            pre = meta(state, state.cat)
            if m.op.kind in DV_KINDS and any(d.file == m.op.file for d in pre.dvs):
                yield "DV replaced"
            if m.op.kind in DV_KINDS and any(d.file == m.op.file for d in pre.pos_deletes):
                yield "position deletes merged into a DV"

    def describe(self, s: V3State) -> str:
        m = meta(s, s.cat)
        files = ", ".join(f"{f}@{first}" for f, first in m.files)
        dvs = ", ".join(f"{d.file}:{sorted(d.positions)}" for d in sorted(m.dvs))
        if m.pos_deletes:
            dvs += "; position deletes " + ", ".join(f"{d.file}:{sorted(d.positions)}" for d in sorted(m.pos_deletes))
        ws = "; ".join(f"w{i}: {wr.kind} {wr.phase}"
                       + (f" attempt {wr.attempt} base {wr.base}" if wr.phase not in (PLAN, DONE) else "")
                       for i, wr in enumerate(s.writers, start=1))
        return (f"pointer {s.cat} files [{files}] dvs [{dvs}] next-row-id {m.next_row_id}"
                f" rows {live_keys(s, m)} | {ws}")


# The explorer's options for the v2 model's larger instances; this model searches every
# interleaving (a superset), so it ignores them.
EXPLORER_ONLY = ("por", "workload")


def make(**overrides) -> V3Spec:
    """Build a spec; accepts every V3Bounds field by name."""
    for option in EXPLORER_ONLY:
        overrides.pop(option, None)
    allowed = {f.name for f in fields(V3Bounds)}
    bad = sorted(set(overrides) - allowed)
    if bad:
        raise ValueError(f"the v3 model has no bound {bad}; it takes {sorted(allowed)}")
    return V3Spec(V3Bounds(**overrides))
