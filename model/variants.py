"""The registry of protocol variants: the correct protocol and the negative controls.

Each flawed variant names the bounds under which the explorer finds its shortest
counterexample quickly and the properties it is expected to break (docs/variants.md
shows the matrix; tests/model/test_variants.py asserts it).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

from icefloe.model import iceberg
from icefloe.model.spec import IcebergSpec


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    make: Callable[..., object]           # (**bound overrides) -> Spec
    breaks: tuple[str, ...] = ()          # property names this variant violates
    defaults: dict = field(default_factory=dict)


def _iceberg(name: str, breaks: tuple[str, ...], **defaults) -> Variant:
    def make(**overrides):
        kw = {**defaults, **overrides, "variant": name}
        allowed = {f.name for f in dataclasses.fields(iceberg.Bounds)}
        bad = sorted(set(kw) - allowed)
        if bad:     # a v3 model's bound given to the v2 model: refused by name, not a TypeError
            raise ValueError(f"the Iceberg model (variant {name}) has no bound {bad}; it takes {sorted(allowed)}")
        return IcebergSpec(iceberg.Bounds(**kw))
    return Variant(name, iceberg.ICEBERG_VARIANTS[name], make, breaks, defaults)


VARIANTS: dict[str, Variant] = {}


def register(v: Variant) -> None:
    assert v.name not in VARIANTS, v.name
    VARIANTS[v.name] = v


register(_iceberg("correct", ()))
register(_iceberg("no-revalidate", ("P5 ValidationSound", "P6 Isolation"),
                  kinds=("delete", "rewrite"), faults=(), writers=2, ops=1))
register(_iceberg("cleanup-after-unknown", ("P4 ReadersSeeCommitted", "P8 NoDanglingRefs", "P9 CleanupSafe"),
                  kinds=("append",), faults=("ack_lost",), writers=1, ops=1))
register(_iceberg("rename-commit", ("P1 LinearHistory", "P2 NoLostCommit"),
                  kinds=("append",), faults=(), writers=2, ops=1))
register(_iceberg("pointer-status-check", ("P4 ReadersSeeCommitted", "P8 NoDanglingRefs", "P9 CleanupSafe"),
                  kinds=("append",), faults=("ack_lost",), writers=2, ops=1))
register(_iceberg("no-lineage-check", ("P3 NoDuplicateCommit",),
                  kinds=("append",), faults=("ack_lost",), writers=1, ops=1))
register(_iceberg("expire-deleted-entries", ("P9 CleanupSafe", "P8 NoDanglingRefs"),
                  kinds=("delete", "rollback", "expire"), faults=(), writers=1, ops=3))
register(_iceberg("orphans-no-threshold", ("P8 NoDanglingRefs", "P9 CleanupSafe"),
                  kinds=("append",), faults=(), writers=1, ops=1, orphan_runs=1))
# Partitions, row-level deletes and refs (issue 12): one control per new property clause.
register(_iceberg("row-delete-ignores-concurrent-deletes", ("P5 ValidationSound", "P6 Isolation"),
                  kinds=("row_delete", "row_update"), faults=(), writers=2, ops=1, isolation="snapshot"))
register(_iceberg("rewrite-ignores-new-deletes", ("P5 ValidationSound", "P6 Isolation"),
                  kinds=("rewrite", "row_delete"), faults=(), writers=2, ops=1))
register(_iceberg("rewrite-takes-new-sequence", ("P6 Isolation",),
                  kinds=("rewrite", "upsert"), faults=(), writers=2, ops=1))
register(_iceberg("stale-sequence-number-on-retry", ("P6 Isolation",),
                  kinds=("append", "upsert"), faults=(), writers=2, ops=2))
register(_iceberg("expire-keeps-main-only", ("P8 NoDanglingRefs", "P9 CleanupSafe"),
                  kinds=("delete", "expire", "tag"), faults=(), writers=1, ops=3, refs=True))
register(_iceberg("validation-ignores-partitions", ("L3 NoSpuriousConflict",),
                  kinds=("append", "overwrite"), faults=(), writers=2, ops=1, partitions=2))
register(_iceberg("branch-commit-on-main", ("P1 LinearHistory", "P6 Isolation"),
                  kinds=("append",), faults=(), writers=1, ops=2, refs=True))


def get(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise KeyError(f"unknown variant {name!r}; --list-variants shows them") from None




# -- The flawed table formats as their own models (model/hive.py, model/hudi.py): each has
# -- its own transition system and its own reading of P1..P10 (docs/variants.md).
from icefloe.model import checks, hive, hudi  # noqa: E402  (after the Iceberg entries, on purpose)


def _own(name: str, module, description: str, breaks: tuple[str, ...], **defaults) -> Variant:
    def make(**overrides):
        return module.make(**{**defaults, **overrides, "variant": name})
    return Variant(name, description, make, breaks, defaults)


_P = {n.split()[0]: n for n in checks.SAFETY_CHECKS}     # "P4" -> "P4 ReadersSeeCommitted"


def _props(*short: str) -> tuple[str, ...]:
    return tuple(_P[s] for s in short)


register(_own(
    "hive-listing", hive,
    "Hive-style table: the state is the directory listing; writers put files straight into it, "
    "overwrite deletes then writes, readers list (iceberg #970/#1014 territory: no commit point)",
    _props("P4", "P2", "P5", "P6", "P7", "P8", "P9"),
    writers=2, ops=1, kinds=("append", "overwrite"), append_files=2, reads=1))
register(_own(
    "hudi", hudi,
    "Hudi-style timeline, knobs: clock monotonic|skewed, cc none|optimistic|pessimistic, "
    "pk_check, put_if_absent, table_type cow|mor (docs/variants.md has the knob table); "
    "this entry: the single-writer defaults (ms clock, no cc, no checks) run by two writers",
    _props("P2", "P1", "P3", "P4", "P5", "P6", "P7", "P10"),
    writers=2, ops=1, kinds=("insert",)))
register(_own(
    "hudi-collision", hudi,
    "Hudi: two writers draw the same millisecond instant (no put-if-absent); one's completion "
    "makes the other's uncommitted files live (seed analysis, REGRESSIONS #12), even with OCC",
    _props("P4", "P1", "P6", "P7", "P10"),
    writers=2, ops=1, kinds=("append",), cc="optimistic"))
register(_own(
    "hudi-collision-rollback", hudi,
    "Hudi: colliding instants with OCC and a key check; the loser's rollback deletes every file "
    "named with the shared instant, including the winner's committed files",
    _props("P2", "P1", "P3", "P4", "P6", "P7", "P8", "P9", "P10"),
    writers=2, ops=1, kinds=("insert",), cc="optimistic", pk_check=True))
register(_own(
    "hudi-duplicate-keys", hudi,
    "Hudi: OCC checks file-group overlap only; two concurrent inserts of one new key go to two "
    "new file groups and both commit (hudi #9831)",
    _props("P3", "P5", "P6", "P10"),
    writers=2, ops=1, kinds=("insert",), cc="optimistic", put_if_absent=True))
register(_own(
    "hudi-out-of-order", hudi,
    "Hudi: every check on, but instants complete out of order; the incremental consumer's "
    "watermark passes an instant that completes later, which it never reads",
    _props("P10",),
    writers=2, ops=1, kinds=("append",), cc="optimistic", pk_check=True, put_if_absent=True))
register(_own(
    "hudi-read-optimized", hudi,
    "Hudi merge-on-read: the read-optimized view reads base files only; after compacting one "
    "of two file groups an update touched, it shows a state no commit produced",
    _props("P4",),
    writers=1, ops=1, kinds=("update",), table_type="mor", compactions=1, cc="pessimistic",
    pk_check=True, put_if_absent=True))
register(_own(
    "hudi-skewed-clock", hudi,
    "Hudi with a table lock and every check on, but a clock that may lag: a later commit gets "
    "an earlier instant, so its update is hidden by the merge order and skipped by the consumer",
    _props("P6", "P10"),
    writers=2, ops=1, kinds=("update",), clock="skewed", cc="pessimistic", pk_check=True,
    put_if_absent=True))


# -- Format v3 commits (model/v3.py, its own transition system: spec/PROTOCOL.md 19): the
# -- correct protocol at its default instance and one flawed variant per 2026 bug class.
from icefloe.model import v3  # noqa: E402  (after the Iceberg entries, on purpose)

register(_own("v3-correct", v3, v3.V3_VARIANTS["v3-correct"], ()))
for _name, (_instance, _breaks) in v3.V3_VARIANT_CASES.items():
    register(_own(_name, v3, v3.V3_VARIANTS[_name], _breaks, **_instance))
