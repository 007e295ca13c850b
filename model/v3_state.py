"""The state of the v3 model (model/v3.py): its ids, records and bounds, and the reads of a
state that the transitions and the property checks (model/checks/v3.py) share. Below both,
so neither imports the other (spec/PROTOCOL.md 19; TLA+ module IcebergV3's variables)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

FileId = tuple[int, int]            # (writer, op) that wrote the data file
RowKey = tuple[int, int, int]       # (writer, op, position) that first wrote the row
MetaId = tuple[int, int, int]       # (writer, op, attempt)

NO_FILE: FileId = (0, 0)
NO_META: MetaId = (0, 0, 0)
NO_ID = -1                          # a row whose _row_id is not materialised (inherited)
OP = 1                              # one operation per writer: its index in every id

# Operation kinds (the v2 model's names where the concept is the same).
APPEND, REWRITE, ROW_DELETE, ROW_UPDATE, COW_DELETE = (
    "append", "rewrite", "row_delete", "row_update", "cow_delete")
V3_KINDS = (APPEND, REWRITE, ROW_DELETE, ROW_UPDATE, COW_DELETE)
ROW_KINDS = (ROW_DELETE, ROW_UPDATE, COW_DELETE)          # name one row at Begin
DV_KINDS = (ROW_DELETE, ROW_UPDATE)                       # write a DV (merge-on-read)
FILE_KINDS = (REWRITE, COW_DELETE)                        # replace the data file they name

# DV policies an engine declares (spec/PROTOCOL.md 19.4).
CONFLICT_POLICY, MERGE_POLICY = "conflict", "merge"

# Writer phases and outcomes (the v2 model's names).
PLAN, DATA, METADATA, SWAP, RETRY, DONE = "plan", "data", "metadata", "swap", "retry", "done"
from icefloe.model.state import COMMITTED, CONFLICT, NOOP, PENDING  # noqa: E402 - one set of outcome names

V3_VARIANTS = {
    "v3-correct": "format v3 commits as spec/PROTOCOL.md 19 states them",
    "stale-first-row-id-on-retry": "an append bakes first-row-id into its manifest at the first attempt and "
                                   "reuses it on a retry after a concurrent append (apache/iceberg-go #1021 review)",
    "replacement-dv-keeps-old": "a row delta adds a DV for a file that has one (holding its positions) without "
                                "removing the old one: two live DVs (apache/iceberg-go #1868)",
    "dv-validation-over-window": "validation indexes every DV added since the operation began by data file and "
                                 "fails on a file with two, though the older was replaced (apache/iceberg #17764)",
    "merge-over-overwrite-dv": "the merge policy also merges a DV an overwrite (a row update) added: the row the "
                               "delete removes lives on in the overwrite's new data file (apache/iceberg #17754)",
    "dv-seeded-from-start": "a merged DV is seeded from the DV the operation read when it began, not from the "
                            "live one it replaces: the concurrent delete's rows come back (apache/iceberg-go #1419 review)",
    "dv-ignores-position-deletes": "on a table upgraded from v2, a DV for a data file with position delete files "
                                   "holds only the DV's positions and the new one, and supersedes the position "
                                   "delete files: the rows they deleted come back",
}

# Each flawed variant: the instance that shows it (V3Bounds fields besides the variant)
# and every property it breaks (model/variants.py registers them; docs/variants.md).
V3_VARIANT_CASES = {
    "stale-first-row-id-on-retry": (dict(roles=("append", "append")),
                                    ("P13 RowIdsUnique", "P14 NextRowIdExact")),
    "replacement-dv-keeps-old": (dict(roles=("row_delete", "row_delete")), ("P11 OneLiveDV",)),
    "dv-validation-over-window": (dict(roles=("row_delete", "row_delete", "rewrite"), data_files=2),
                                  ("L3 NoSpuriousConflict",)),
    "merge-over-overwrite-dv": (dict(roles=("row_delete", "row_update"), dv_policy="merge"),
                                ("P6 Isolation",)),
    "dv-seeded-from-start": (dict(roles=("row_delete", "row_delete"), dv_policy="merge"),
                             ("P12 DeletedRowsStayDeleted", "P6 Isolation")),
    "dv-ignores-position-deletes": (dict(roles=("row_delete",), position_deletes=1),
                                    ("P12 DeletedRowsStayDeleted", "P6 Isolation")),
}


@dataclass(frozen=True)
class V3Bounds:
    """The explored instance: one operation per writer, of the kind its role names."""
    roles: tuple = (ROW_DELETE, ROW_DELETE, REWRITE, APPEND)
    dv_policy: str = CONFLICT_POLICY
    attempts_max: int = 2
    variant: str = "v3-correct"
    # Data files of the bootstrap table: (0, 1) with two rows, and (0, 2) with one row
    # when 2 (a compaction of one file while DVs go to the other: apache/iceberg #17764).
    data_files: int = 1
    # 0: the table was created as v3. k in (1, 2): it was written as v2 and upgraded to v3
    # (table spec "Row Lineage for Upgraded Tables", "Deletion Vectors"): data file (0, 1)
    # has 2 + k rows, position delete file j (j = 1..k) deletes its position j, and no file
    # has a first-row-id yet (next-row-id 0): the first v3 commit assigns them.
    position_deletes: int = 0

    @property
    def writers(self) -> int:
        return len(self.roles)

    @property
    def upgraded(self) -> bool:
        return self.position_deletes > 0

    def __post_init__(self):
        assert self.roles and set(self.roles) <= set(V3_KINDS), self.roles
        assert self.dv_policy in (CONFLICT_POLICY, MERGE_POLICY), self.dv_policy
        assert self.attempts_max >= 1
        assert self.variant in V3_VARIANTS, self.variant
        assert self.data_files in (1, 2), self.data_files
        assert self.position_deletes in (0, 1, 2), self.position_deletes
        assert self.data_files == 1 or not self.upgraded, "an upgraded table has one data file"


class Row(NamedTuple):
    key: RowKey                 # auxiliary: which row this is
    id: int                     # the materialised _row_id, or NO_ID (inherited)


class DV(NamedTuple):
    id: MetaId                  # the attempt that wrote it (its Puffin blob)
    file: FileId                # referenced_data_file
    positions: frozenset        # deleted positions (1-based)


class PosDelete(NamedTuple):
    """A v2 position delete file of an upgraded table (one data file's positions)."""
    file: FileId
    positions: frozenset        # deleted positions (1-based)


class OpInfo(NamedTuple):
    """What the commit's operation planned (auxiliary, as Meta.op in the v2 model)."""
    kind: str
    start: MetaId               # the version it planned at
    file: FileId                # the data file it names (NO_FILE: append)
    pos: int                    # the row it names (0: none)
    new: FileId                 # the data file it adds (NO_FILE: none)


class Meta(NamedTuple):
    """One metadata version with its one new snapshot (main only)."""
    prev: MetaId
    files: tuple                # sorted ((FileId, first-row-id or NO_ID), ...): the live data files
    dvs: frozenset              # the live DVs
    pos_deletes: frozenset      # the live position delete files (an upgraded table's)
    next_row_id: int
    op: OpInfo


class Writer(NamedTuple):
    kind: str
    phase: str
    attempt: int
    base: MetaId
    start: MetaId
    file: FileId
    pos: int
    dv: frozenset               # the positions of the DV this attempt wrote
    mfirst: int                 # first-row-id baked into its manifest (NO_ID: none; a flaw)


class OpResult(NamedTuple):
    res: str
    spurious: bool              # a failed validation no overlapping commit justifies


class V3State(NamedTuple):
    # -- protocol variables --
    cat: MetaId
    metas: frozenset            # {(MetaId, Meta), ...}
    content: frozenset          # {(FileId, (Row, ...)), ...}: data files' rows, by position
    writers: tuple
    # -- history (auxiliary) variables --
    hist: tuple
    outcomes: tuple             # OpResult per writer


BOOT: MetaId = (0, 1, 1)
PENDING_OUTCOME = OpResult(PENDING, False)
IDLE = Writer("", PLAN, 0, NO_META, NO_META, NO_FILE, 0, frozenset(), NO_ID)


def initial_state(b: V3Bounds) -> V3State:
    boot_op = OpInfo(APPEND, NO_META, NO_FILE, 0, NO_FILE)
    if b.upgraded:
        n = 2 + b.position_deletes
        pds = frozenset(PosDelete((0, 1), frozenset({j})) for j in range(1, b.position_deletes + 1))
        boot = Meta(NO_META, (((0, 1), NO_ID),), frozenset(), pds, 0, boot_op)
        content = frozenset({((0, 1), tuple(Row((0, 1, i), NO_ID) for i in range(1, n + 1)))})
    else:
        files = (((0, 1), 0), ((0, 2), 2))[:b.data_files]
        boot = Meta(NO_META, files, frozenset(), frozenset(), 1 + b.data_files, boot_op)
        rows = (((0, 1), (Row((0, 1, 1), NO_ID), Row((0, 1, 2), NO_ID))), ((0, 2), (Row((0, 2, 1), NO_ID),)))
        content = frozenset(rows[:b.data_files])
    return V3State(BOOT, frozenset({(BOOT, boot)}), content,
                   tuple(IDLE._replace(kind=k) for k in b.roles), (BOOT,),
                   tuple(PENDING_OUTCOME for _ in b.roles))


# -- reading a version ---------------------------------------------------------------------

@lru_cache(maxsize=1 << 14)
def _dict(pairs: frozenset | tuple) -> dict:
    return dict(pairs)


def meta(s: V3State, m: MetaId) -> Meta:
    return _dict(s.metas)[m]


def rows_of(s: V3State, f: FileId) -> tuple:
    return _dict(s.content)[f]


def dv_positions(m: Meta, f: FileId) -> frozenset:
    """Every position a live DV of `m` deletes in data file f."""
    return frozenset().union(*(d.positions for d in m.dvs if d.file == f))


def pos_delete_positions(m: Meta, f: FileId) -> frozenset:
    """Every position a live position delete file of `m` deletes in data file f."""
    return frozenset().union(*(d.positions for d in m.pos_deletes if d.file == f))


def deleted_positions(m: Meta, f: FileId) -> frozenset:
    """The positions of f a reader of m skips: its DV's when it has one (readers ignore
    position delete files for a file with a DV: table spec "Deletion Vectors"), else its
    position delete files'."""
    dv = dv_positions(m, f)
    return dv if any(d.file == f for d in m.dvs) else pos_delete_positions(m, f)


def row_id(s: V3State, m: Meta, f: FileId, pos: int) -> int:
    """_row_id of the row at `pos` of f in version m: materialised, else inherited (NO_ID:
    null, a file of an upgraded table before a v3 commit assigned its first-row-id)."""
    r = rows_of(s, f)[pos - 1]
    if r.id != NO_ID:
        return r.id
    first = _dict(m.files)[f]
    return NO_ID if first == NO_ID else first + pos - 1


def live(s: V3State, m: Meta) -> list[tuple[FileId, int]]:
    """(data file, position) of every row a reader of m sees, in order."""
    out = []
    for f, _ in m.files:
        gone = deleted_positions(m, f)
        out.extend((f, i) for i in range(1, len(rows_of(s, f)) + 1) if i not in gone)
    return out


def live_keys(s: V3State, m: Meta) -> tuple:
    """The sorted multiset of the rows a reader of m sees."""
    return tuple(sorted(rows_of(s, f)[i - 1].key for f, i in live(s, m)))
