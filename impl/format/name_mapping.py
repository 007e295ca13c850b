"""Name mapping (Iceberg spec "Column Projection" and Appendix C "Name Mapping
Serialization"): for data files written without field ids (a Parquet file from pandas,
DuckDB or any writer that knows nothing of Iceberg, committed by `add-files`), the table
property `schema.name-mapping.default` maps column names to field ids:

    [{"field-id": 1, "names": ["id", "record_id"]}, {"field-id": 2, "names": ["data"],
      "fields": [...]}]

A file's column is read as the field whose mapping lists its name. Names a field had
before a rename stay in its entry, so files added before the rename still resolve; a
name the current schema gives to another field is taken from the old entry (the current
schema wins). icefloe resolves top-level columns; a file without field ids whose nested
columns would need the entries' `fields` is refused by add-files.
"""
from __future__ import annotations

import functools
import json

from icefloe.impl.format import types as T

NAME_MAPPING_PROPERTY = "schema.name-mapping.default"


class NameMappingError(T.FormatError):
    """A name mapping that is not the spec's JSON, or that maps one name twice."""


def _entries(schema_fields) -> list[dict]:
    out = []
    for f in schema_fields:
        entry = {"field-id": f.field_id, "names": [f.name]}
        t = f.type
        if isinstance(t, T.StructType):
            entry["fields"] = _entries(t.fields)
        elif isinstance(t, T.ListType):
            entry["fields"] = _entries([t.element_field])
        elif isinstance(t, T.MapType):
            entry["fields"] = _entries([t.key_field, t.value_field])
        out.append(entry)
    return out


def parse(text: str) -> list[dict]:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise NameMappingError(f"{NAME_MAPPING_PROPERTY} is not JSON: {e}") from None
    if not isinstance(doc, list) or not all(isinstance(e, dict) and isinstance(e.get("names", []), list)
                                            for e in doc):
        raise NameMappingError(f"{NAME_MAPPING_PROPERTY} is not a list of {{field-id, names}} entries")
    return doc


@functools.lru_cache(maxsize=64)
def top_level_ids(text: str | None) -> dict[str, int] | None:
    """name -> field id of the mapping's top-level entries (None without a mapping)."""
    if text is None:
        return None
    out: dict[str, int] = {}
    for entry in parse(text):
        fid = entry.get("field-id")
        for name in entry.get("names", []):
            if name in out and out[name] != fid:
                raise NameMappingError(f"{NAME_MAPPING_PROPERTY} maps {name!r} to fields {out[name]} and {fid}")
            if fid is not None:
                out[name] = fid
    return out


def of(properties) -> dict[str, int] | None:
    """The top-level mapping of a table's properties (None if it has none)."""
    return top_level_ids(properties.get(NAME_MAPPING_PROPERTY))


def merged(existing: str | None, schema: T.Schema) -> str:
    """The mapping for `schema`, keeping the names each field had in `existing` (files
    added under an older name still resolve) except those the schema now gives to
    another field."""
    current = _entries(schema.fields)
    old = {e.get("field-id"): e for e in parse(existing)} if existing else {}
    taken = {f.name for f in schema.fields}
    for entry in current:
        before = old.pop(entry["field-id"], None)
        if before:
            entry["names"] += [n for n in before.get("names", []) if n not in entry["names"] and n not in taken]
    for fid, before in sorted(old.items(), key=lambda kv: (kv[0] is None, kv[0] or 0)):
        names = [n for n in before.get("names", []) if n not in taken]   # a dropped column: still names old files
        if names:
            current.append({**before, "names": names})
    return json.dumps(current, separators=(",", ":"))
