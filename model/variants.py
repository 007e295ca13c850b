"""The registry of protocol variants: the correct protocol and the negative controls.

Each flawed variant names the bounds under which the explorer finds its shortest
counterexample quickly and the properties it is expected to break (docs/variants.md
shows the matrix; tests/model/test_variants.py asserts it).
"""
from __future__ import annotations

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
        return IcebergSpec(iceberg.Bounds(**kw))
    return Variant(name, iceberg.ICEBERG_VARIANTS[name], make, breaks, defaults)


VARIANTS: dict[str, Variant] = {}


def register(v: Variant) -> None:
    assert v.name not in VARIANTS, v.name
    VARIANTS[v.name] = v


register(_iceberg("correct", ()))
register(_iceberg("no-revalidate", ("P5 ValidationSound", "P6 Isolation"),
                  kinds=("delete", "rewrite"), faults=(), writers=2, ops=1))
register(_iceberg("cleanup-after-unknown", ("P8 NoDanglingRefs", "P9 CleanupSafe"),
                  kinds=("append",), faults=("ack_lost",), writers=1, ops=1))
register(_iceberg("rename-commit", ("P1 LinearHistory", "P2 NoLostCommit"),
                  kinds=("append",), faults=(), writers=2, ops=1))
register(_iceberg("pointer-status-check", ("P8 NoDanglingRefs", "P9 CleanupSafe"),
                  kinds=("append",), faults=("ack_lost",), writers=2, ops=1))
register(_iceberg("no-lineage-check", ("P3 NoDuplicateCommit",),
                  kinds=("append",), faults=("ack_lost",), writers=1, ops=1))
register(_iceberg("expire-deleted-entries", ("P9 CleanupSafe", "P8 NoDanglingRefs"),
                  kinds=("delete", "rollback", "expire"), faults=(), writers=1, ops=3))
register(_iceberg("orphans-no-threshold", ("P8 NoDanglingRefs", "P9 CleanupSafe"),
                  kinds=("append",), faults=(), writers=1, ops=1, orphan_runs=1))


def get(name: str) -> Variant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise KeyError(f"unknown variant {name!r}; --list-variants shows them") from None



