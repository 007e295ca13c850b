"""Field-id views of Avro record schemas (Iceberg spec "Appendix A: Format-specific
Requirements -> Avro": every field carries its `field-id`), and raw Avro values in
icefloe's internal form. Readers go by id, never by name, so files from other writers
(extra fields, v1 names, escaped names) read the same.
"""
from __future__ import annotations

import operator
import uuid
from typing import Any

from icefloe.impl.format import conversions
from icefloe.impl.format.manifest import ManifestError

__all__ = ["FieldIds", "branch", "map_in", "from_avro_value", "check_int"]


def branch(avro_type: Any) -> Any:
    """The non-null branch of an optional union."""
    if isinstance(avro_type, list):
        rest = [b for b in avro_type if b != "null"]
        return rest[0] if len(rest) == 1 else avro_type
    return avro_type


class FieldIds:
    """Field-id view of one Avro record schema: which name holds each id."""

    def __init__(self, schema: Any, location: str, what: str):
        schema = branch(schema)
        if not isinstance(schema, dict) or schema.get("type") != "record":
            raise ManifestError(f"{what} is not an Avro record", location)
        self.location = location
        self.fields: dict[int, dict] = {}
        for f in schema["fields"]:
            fid = f.get("field-id")
            if isinstance(fid, int) and not isinstance(fid, bool):
                self.fields[fid] = f
        self.names = [f["name"] for f in schema["fields"]]

    def has(self, fid: int) -> bool:
        return fid in self.fields

    def field(self, fid: int, label: str) -> dict:
        if fid not in self.fields:
            raise ManifestError("required field id missing from the Avro schema",
                                self.location, f"{fid} {label}")
        return self.fields[fid]

    def get(self, record: dict, fid: int, label: str, required: bool = True, default=None):
        if fid not in self.fields:
            if required:
                self.field(fid, label)
            return default
        value = record.get(self.fields[fid]["name"])
        if value is None and required:
            raise ManifestError("required field is null", self.location, f"{fid} {label}")
        return default if value is None else value


_KEY_VALUE = operator.itemgetter("key", "value")


def map_in(value: Any) -> dict | None:
    if value is None:
        return None
    if isinstance(value, dict):  # an Avro map (string keys) from a lenient writer
        return {int(k): v for k, v in value.items()}
    return dict(map(_KEY_VALUE, value))


def from_avro_value(avro_type: Any, value: Any) -> Any:
    """A raw Avro value (logical types not applied, see _open) in icefloe's internal form."""
    if value is None:
        return None
    t = branch(avro_type)
    logical = t.get("logicalType") if isinstance(t, dict) else None
    if logical == "decimal" and isinstance(value, bytes):
        return conversions.unscaled_to_decimal(int.from_bytes(value, "big", signed=True), t.get("scale", 0))
    if logical == "uuid":
        return uuid.UUID(bytes=value) if isinstance(value, bytes) else uuid.UUID(value)
    if logical in ("timestamp-millis", "time-millis"):  # not Iceberg's, but unambiguous
        return value * 1000
    return value


def check_int(value: Any, name: str, location: str) -> None:
    """Counts and ids are Avro ints or longs; a foreign schema may declare anything."""
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise ManifestError(f"{type(value).__name__} where the spec has an int", location, name)
