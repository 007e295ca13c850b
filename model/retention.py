"""Snapshot retention per ref as a pure function (Iceberg table spec "Snapshot Retention
Policy" and "Snapshot References"; spec/PROTOCOL.md 11 "Expiry"; issue 30 item 4).

`expire(table, now_ms, ...)` says which refs and snapshots an expiry keeps, from the table's
refs, snapshots and retention properties alone. The rules, each from the spec:

- **refs.** A ref other than `main` whose snapshot is older than its `max-ref-age-ms` (else
  the table's `history.expire.max-ref-age-ms`; none: forever) is removed; `main` is never
  removed. A ref whose snapshot is missing is removed.
- **branches.** Every branch kept keeps its head and, walking its ancestors from the head,
  each one while fewer than `min-snapshots-to-keep` (the head counted) are kept or while
  the ancestor is not older than `max-snapshot-age-ms` (each the branch's own, else the
  table's `history.expire.min-snapshots-to-keep` / `max-snapshot-age-ms`); the first
  ancestor that is neither ends the walk (older ones go, even if one is younger again).
- **tags.** A tag kept keeps its snapshot only.
- **the rest.** A snapshot on no kept ref's line (a branch's ancestors, a tag's snapshot)
  is kept while it is not older than the table's default age.

An expiry call may give `older_than_ms` and `retain_last` (Iceberg-Java's `expireOlderThan`
and `retainLast`): they replace the table's defaults, never a ref's own setting (the spec's
ref-level properties override the table's: Iceberg-Java's RemoveSnapshots does the same).

Nothing here reads the model's state machine: the conformance family ref-lifecycle
(conformance/coverage/reflife.py) judges an engine's expiry by it, with the table as the
engine's metadata says. The v2 model's expiry action (model/operations.py `_retained`)
keeps the heads of its refs and main's last `retain_last`: per-ref retention is not in its
transitions, nor in tla/IcebergCommit.tla's `Expire` (see tests/model/test_retention.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

MAIN = "main"
BRANCH, TAG = "branch", "tag"
# The spec's table property defaults (Iceberg "Table Properties": history.expire.*).
MIN_SNAPSHOTS_TO_KEEP_DEFAULT = 1
MAX_SNAPSHOT_AGE_MS_DEFAULT = 5 * 24 * 3_600_000
MAX_REF_AGE_MS_DEFAULT = None          # forever
ANCESTORS_MAX = 1_000_000              # a walk longer than this is a cycle in the input


class RetentionInputError(ValueError):
    """The table handed to `expire` is not one a spec-valid metadata file can describe."""


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    parent_snapshot_id: int | None
    timestamp_ms: int


@dataclass(frozen=True)
class Ref:
    snapshot_id: int
    type: str = BRANCH
    min_snapshots_to_keep: int | None = None     # branches only
    max_snapshot_age_ms: int | None = None       # branches only
    max_ref_age_ms: int | None = None


@dataclass(frozen=True)
class Table:
    snapshots: tuple                              # (Snapshot, ...)
    refs: Mapping[str, Ref]
    properties: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Retained:
    refs: frozenset                               # the names of the refs kept
    snapshots: frozenset                          # the ids of the snapshots kept
    why: Mapping[int, tuple]                      # snapshot id -> the rules keeping it, as text

    def expired(self, table: Table) -> frozenset:
        return frozenset(s.snapshot_id for s in table.snapshots) - self.snapshots


def _prop(table: Table, key: str, default):
    value = table.properties.get(f"history.expire.{key}")
    if value is None:
        return default
    try:
        n = int(value)
    except ValueError:
        raise RetentionInputError(f"table property history.expire.{key} is not an integer: {value!r}") from None
    if n < (1 if key == "min-snapshots-to-keep" else 0):
        raise RetentionInputError(f"table property history.expire.{key} is out of range: {n}")
    return n


def _check(table: Table) -> dict:
    by_id = {}
    for s in table.snapshots:
        if s.snapshot_id in by_id:
            raise RetentionInputError(f"snapshot {s.snapshot_id} is listed twice")
        by_id[s.snapshot_id] = s
    for name, r in table.refs.items():
        if r.type not in (BRANCH, TAG):
            raise RetentionInputError(f"ref {name} has type {r.type!r}, not branch or tag")
        if r.type == TAG and (r.min_snapshots_to_keep is not None or r.max_snapshot_age_ms is not None):
            raise RetentionInputError(f"tag {name} has branch retention (min-snapshots-to-keep, max-snapshot-age-ms)")
        if name == MAIN and r.type != BRANCH:
            raise RetentionInputError("main is a branch")
    return by_id


def ancestors(by_id: dict, snapshot_id: int) -> list:
    """The snapshot and its ancestors, newest first, as far as they are in the table."""
    out, seen, s = [], set(), by_id.get(snapshot_id)
    while s is not None:
        if s.snapshot_id in seen or len(out) >= ANCESTORS_MAX:
            raise RetentionInputError(f"the parents of snapshot {snapshot_id} form a cycle")
        seen.add(s.snapshot_id)
        out.append(s)
        s = by_id.get(s.parent_snapshot_id) if s.parent_snapshot_id is not None else None
    return out


def expire(table: Table, now_ms: int, older_than_ms: int | None = None,
           retain_last: int | None = None) -> Retained:
    """The refs and snapshots an expiry at `now_ms` keeps (the module docstring's rules)."""
    if retain_last is not None and retain_last < 1:
        raise RetentionInputError(f"retain_last must be at least 1, not {retain_last}")
    by_id = _check(table)
    min_keep_default = retain_last if retain_last is not None else _prop(
        table, "min-snapshots-to-keep", MIN_SNAPSHOTS_TO_KEEP_DEFAULT)
    age_default = _prop(table, "max-snapshot-age-ms", MAX_SNAPSHOT_AGE_MS_DEFAULT)
    cutoff_default = older_than_ms if older_than_ms is not None else now_ms - age_default
    ref_age_default = _prop(table, "max-ref-age-ms", MAX_REF_AGE_MS_DEFAULT)
    why: dict = {}

    def keep(snapshot_id: int, reason: str) -> None:
        why.setdefault(snapshot_id, []).append(reason)

    refs = set()
    for name, r in sorted(table.refs.items()):
        head = by_id.get(r.snapshot_id)
        max_age = r.max_ref_age_ms if r.max_ref_age_ms is not None else ref_age_default
        if name != MAIN and (head is None or (max_age is not None and now_ms - head.timestamp_ms > max_age)):
            continue                                  # the ref expires
        if head is None:
            raise RetentionInputError(f"main points at snapshot {r.snapshot_id}, which the table does not have")
        refs.add(name)
        keep(head.snapshot_id, f"head of {r.type} {name}")
    on_a_line: set = set()
    for name in sorted(refs):
        r = table.refs[name]
        if r.type == TAG:
            on_a_line.add(r.snapshot_id)
            continue
        min_keep = r.min_snapshots_to_keep if r.min_snapshots_to_keep is not None else min_keep_default
        cutoff = now_ms - r.max_snapshot_age_ms if r.max_snapshot_age_ms is not None else cutoff_default
        line = ancestors(by_id, r.snapshot_id)
        on_a_line.update(s.snapshot_id for s in line)
        for i, s in enumerate(line):
            if i < min_keep:
                keep(s.snapshot_id, f"one of the last {min_keep} of {name}")
            elif s.timestamp_ms >= cutoff:
                keep(s.snapshot_id, f"not older than {name}'s cutoff {cutoff}")
            else:
                break
    for s in table.snapshots:
        if s.snapshot_id not in on_a_line and s.timestamp_ms >= cutoff_default:
            keep(s.snapshot_id, f"on no ref's line, not older than {cutoff_default}")
    assert all(table.refs[n].snapshot_id in why for n in refs)
    return Retained(frozenset(refs), frozenset(why), {k: tuple(v) for k, v in why.items()})
