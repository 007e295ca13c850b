"""The commit endpoint's TableRequirements (REST spec: TableRequirement, AssertCreate,
AssertTableUUID, AssertRefSnapshotId, AssertLastAssignedFieldId, AssertCurrentSchemaId,
AssertLastAssignedPartitionId, AssertDefaultSpecId, AssertDefaultSortOrderId).

A requirement is what the client assumed of the table when it built its updates. The
server checks every one against the metadata the swap will replace, at the swap's own
base (commit.py re-checks them on every server-side attempt), so a requirement can never
pass against one version and the swap land on another. `parse` refuses an unknown type
or a malformed field with a 400 before anything is read or written.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from icefloe.impl.format.metadata import TableMetadata
from icefloe.impl.serve.errors import bad_request

# type -> (JSON field, TableMetadata attribute it compares with) for the id assertions
_ID_ASSERTIONS = {
    "assert-last-assigned-field-id": ("last-assigned-field-id", "last_column_id"),
    "assert-current-schema-id": ("current-schema-id", "current_schema_id"),
    "assert-last-assigned-partition-id": ("last-assigned-partition-id", "last_partition_id"),
    "assert-default-spec-id": ("default-spec-id", "default_spec_id"),
    "assert-default-sort-order-id": ("default-sort-order-id", "default_sort_order_id"),
}
TYPES = ("assert-create", "assert-table-uuid", "assert-ref-snapshot-id", *_ID_ASSERTIONS)


@dataclass(frozen=True)
class TableRequirement:
    """One requirement: `kind` (its REST type), and what it names. `check(metadata)` returns
    None when it holds, else a sentence saying what was found; `metadata` is None when the
    table does not exist."""
    kind: str
    value: Any = None
    ref: str | None = None

    @property
    def creates(self) -> bool:
        return self.kind == "assert-create"

    def check(self, metadata: TableMetadata | None) -> str | None:
        if self.kind == "assert-create":
            return None if metadata is None else "Requirement failed: table already exists"
        if metadata is None:
            return "Requirement failed: table does not exist"
        if self.kind == "assert-table-uuid":
            if metadata.table_uuid != self.value:
                return f"Requirement failed: UUID does not match: expected {self.value} != {metadata.table_uuid}"
            return None
        if self.kind == "assert-ref-snapshot-id":
            ref = metadata.refs.get(self.ref)
            found = None if ref is None else ref.snapshot_id
            if found != self.value:
                if self.value is None:
                    return f"Requirement failed: ref {self.ref!r} was created concurrently (at {found})"
                if found is None:
                    return f"Requirement failed: ref {self.ref!r} is missing, expected {self.value}"
                return f"Requirement failed: ref {self.ref!r} has changed: expected id {self.value} != {found}"
            return None
        field, attribute = _ID_ASSERTIONS[self.kind]
        found = getattr(metadata, attribute)
        if found != self.value:
            return f"Requirement failed: {field} has changed: expected {self.value} != {found}"
        return None


def _int(raw: dict, key: str, kind: str, nullable: bool = False) -> int | None:
    if key not in raw:
        raise bad_request(f"Malformed requirement {kind}: missing {key!r}")
    value = raw[key]
    if value is None and nullable:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise bad_request(f"Malformed requirement {kind}: {key!r} must be an integer, not {value!r}")
    return value


def parse(raw: Any) -> TableRequirement:
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise bad_request(f"Malformed requirement: expected an object with a 'type', got {str(raw)[:100]}")
    kind = raw["type"]
    if kind == "assert-create":
        return TableRequirement(kind)
    if kind == "assert-table-uuid":
        if not isinstance(raw.get("uuid"), str):
            raise bad_request("Malformed requirement assert-table-uuid: 'uuid' must be a string")
        return TableRequirement(kind, raw["uuid"])
    if kind == "assert-ref-snapshot-id":
        if not isinstance(raw.get("ref"), str) or not raw["ref"]:
            raise bad_request("Malformed requirement assert-ref-snapshot-id: 'ref' must be a name")
        # The REST spec: "if snapshot-id is null or missing, the ref must not already exist"
        # (ClickHouse and pyiceberg 0.9 leave it out on a table's first commit).
        snapshot_id = _int(raw, "snapshot-id", kind, nullable=True) if "snapshot-id" in raw else None
        return TableRequirement(kind, snapshot_id, raw["ref"])
    if kind in _ID_ASSERTIONS:
        return TableRequirement(kind, _int(raw, _ID_ASSERTIONS[kind][0], kind))
    raise bad_request(f"Unknown requirement type {kind!r} (known: {', '.join(TYPES)})")


def parse_all(raw: list) -> list[TableRequirement]:
    return [parse(r) for r in raw]


def first_failure(requirements: list[TableRequirement], metadata: TableMetadata | None) -> str | None:
    for r in requirements:
        found = r.check(metadata)
        if found is not None:
            return found
    return None
