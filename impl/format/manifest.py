"""Manifests and manifest lists in Avro (Iceberg spec: "Manifests", "Manifest Lists",
"Sequence Number Inheritance", "Appendix A: Format-specific Requirements -> Avro").

Writing produces v2 files: every Avro field carries the spec's `field-id` (lists carry
`element-id`, int-keyed maps are arrays of key/value records with ids on both), and the
header carries the key-value metadata the spec requires. Reading goes by field id, never
by name, so files from other writers (extra fields, v1 names) read the same; a file that
lacks a required id raises `ManifestError` naming the file and the field.

Values are in icefloe's internal form (conversions.py): date = days, time/timestamp =
microseconds, decimal = Decimal, uuid = uuid.UUID, binary/fixed = bytes.

TLA+ (tla/IcebergCommit.tla): the bytes written by `WriteManifest` and `WriteList`; the
spec treats their contents as opaque.
"""
from __future__ import annotations

import io
import json
import operator
import math
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, replace
from decimal import Decimal
from enum import IntEnum
from typing import Any, Iterable

import fastavro

from icefloe.impl.format import avro_decode, conversions, types as T
from icefloe.impl.format.transforms import PartitionSpec, partition_spec_to_json, partition_type
from icefloe.impl.outcomes import IcefloeError

__all__ = [
    "ManifestError", "ManifestEntryStatus", "DataFileContent", "ManifestContent", "DataFile",
    "ManifestEntry", "FieldSummary", "ManifestFile", "write_manifest", "read_manifest",
    "read_manifest_metadata", "manifest_file_of", "summarize_partitions",
    "write_manifest_list", "read_manifest_list", "LazyManifest", "read_manifest_lazy",
]

FORMAT_VERSION = 2
AVRO_CODEC = "deflate"  # what Java and pyiceberg write by default


class ManifestError(IcefloeError):
    """A manifest or manifest list that cannot be read or written as the spec says.
    `location` names the file, `field` the spec field (e.g. `102 partition`) when known."""

    def __init__(self, message: str, location: str | None = None, field: str | None = None):
        parts = [p for p in (location, f"field {field}" if field else None) if p]
        super().__init__(f"{': '.join(parts)}: {message}" if parts else message)
        self.location = location
        self.field = field


class ManifestEntryStatus(IntEnum):
    EXISTING = 0
    ADDED = 1
    DELETED = 2


class DataFileContent(IntEnum):
    DATA = 0
    POSITION_DELETES = 1
    EQUALITY_DELETES = 2


class ManifestContent(IntEnum):
    DATA = 0
    DELETES = 1


@dataclass(frozen=True)
class DataFile:
    """The spec's `data_file` struct (field ids 100..140). `partition` is a tuple ordered
    as the partition spec's fields; bounds are single-value serialized bytes."""
    file_path: str
    file_format: str
    partition: tuple
    record_count: int
    file_size_in_bytes: int
    content: DataFileContent = DataFileContent.DATA
    column_sizes: dict[int, int] | None = None
    value_counts: dict[int, int] | None = None
    null_value_counts: dict[int, int] | None = None
    nan_value_counts: dict[int, int] | None = None
    lower_bounds: dict[int, bytes] | None = None
    upper_bounds: dict[int, bytes] | None = None
    key_metadata: bytes | None = None
    split_offsets: tuple[int, ...] | None = None
    equality_ids: tuple[int, ...] | None = None
    sort_order_id: int | None = None


@dataclass(frozen=True)
class ManifestEntry:
    """The spec's `manifest_entry`. Null snapshot/sequence numbers mean "inherit from the
    manifest list" (only ADDED entries may leave them null in v2)."""
    status: ManifestEntryStatus
    data_file: DataFile
    snapshot_id: int | None = None
    sequence_number: int | None = None
    file_sequence_number: int | None = None


@dataclass(frozen=True)
class FieldSummary:
    """The spec's `field_summary` (ids 509, 518, 510, 511) for one partition field."""
    contains_null: bool
    contains_nan: bool | None = None
    lower_bound: bytes | None = None
    upper_bound: bytes | None = None


@dataclass(frozen=True)
class ManifestFile:
    """The spec's `manifest_file` (ids 500..519): one manifest list entry. A None
    sequence number is unassigned: write_manifest_list assigns the snapshot's."""
    manifest_path: str
    manifest_length: int
    partition_spec_id: int
    added_snapshot_id: int | None
    content: ManifestContent = ManifestContent.DATA
    sequence_number: int | None = None
    min_sequence_number: int | None = None
    added_files_count: int | None = None
    existing_files_count: int | None = None
    deleted_files_count: int | None = None
    added_rows_count: int | None = None
    existing_rows_count: int | None = None
    deleted_rows_count: int | None = None
    partitions: tuple[FieldSummary, ...] | None = None
    key_metadata: bytes | None = None


# -- Avro schemas (ids from the spec's tables) ---------------------------------------------

def _opt(name: str, avro_type: Any, field_id: int) -> dict:
    return {"name": name, "type": ["null", avro_type], "default": None, "field-id": field_id}


def _req(name: str, avro_type: Any, field_id: int) -> dict:
    return {"name": name, "type": avro_type, "field-id": field_id}


def _map(key_id: int, value_id: int, value_type: str) -> dict:
    return {"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": f"k{key_id}_v{value_id}",
        "fields": [_req("key", "int", key_id), _req("value", value_type, value_id)]}}


def _list(element_id: int, element_type: Any) -> dict:
    return {"type": "array", "items": element_type, "element-id": element_id}


def _decimal_bytes(precision: int) -> int:
    """Smallest fixed size holding `precision` decimal digits (spec Appendix A)."""
    size = 1
    while 10 ** precision > 2 ** (8 * size - 1):
        size += 1
    return size


def avro_type(t: T.IcebergType, field_id: int) -> Any:
    """Avro type of an Iceberg primitive (Appendix A). Named types are unique per id."""
    simple = {T.BOOLEAN: "boolean", T.INT: "int", T.LONG: "long", T.FLOAT: "float",
              T.DOUBLE: "double", T.STRING: "string", T.BINARY: "bytes",
              T.DATE: {"type": "int", "logicalType": "date"},
              T.TIME: {"type": "long", "logicalType": "time-micros"},
              T.TIMESTAMP: {"type": "long", "logicalType": "timestamp-micros",
                            "adjust-to-utc": False},
              T.TIMESTAMPTZ: {"type": "long", "logicalType": "timestamp-micros",
                              "adjust-to-utc": True},
              T.UUID: {"type": "fixed", "size": 16, "logicalType": "uuid",
                       "name": f"uuid_{field_id}"}}
    if t in simple:
        return simple[t]
    if isinstance(t, T.DecimalType):
        return {"type": "fixed", "size": _decimal_bytes(t.precision), "logicalType": "decimal",
                "precision": t.precision, "scale": t.scale, "name": f"decimal_{field_id}"}
    if isinstance(t, T.FixedType):
        return {"type": "fixed", "size": t.length, "name": f"fixed_{field_id}"}
    raise ManifestError(f"partition field type {t} has no Avro mapping", field=str(field_id))


def avro_name(name: str) -> str:
    """`name` made a valid Avro name ([A-Za-z_][A-Za-z0-9_]*), escaping as Java does: a
    leading digit gets "_", any other invalid character becomes "_x" + its hex code.
    Readers go by field id, so the name only has to be valid."""
    out = []
    for i, ch in enumerate(name):
        if ch == "_" or ch.isascii() and (ch.isalpha() or (ch.isdigit() and i > 0)):
            out.append(ch)
        elif ch.isascii() and ch.isdigit():
            out.append("_" + ch)
        else:
            out.append(f"_x{ord(ch):X}")
    return "".join(out) or "_"


def manifest_entry_schema(partition: T.StructType) -> dict:
    partition_record = {"type": "record", "name": "r102", "fields": [
        _opt(avro_name(f.name), avro_type(f.type, f.field_id), f.field_id) for f in partition.fields]}
    data_file = {"type": "record", "name": "r2", "fields": [
        _req("content", "int", 134),
        _req("file_path", "string", 100),
        _req("file_format", "string", 101),
        _req("partition", partition_record, 102),
        _req("record_count", "long", 103),
        _req("file_size_in_bytes", "long", 104),
        _opt("column_sizes", _map(117, 118, "long"), 108),
        _opt("value_counts", _map(119, 120, "long"), 109),
        _opt("null_value_counts", _map(121, 122, "long"), 110),
        _opt("nan_value_counts", _map(138, 139, "long"), 137),
        _opt("lower_bounds", _map(126, 127, "bytes"), 125),
        _opt("upper_bounds", _map(129, 130, "bytes"), 128),
        _opt("key_metadata", "bytes", 131),
        _opt("split_offsets", _list(133, "long"), 132),
        _opt("equality_ids", _list(136, "int"), 135),
        _opt("sort_order_id", "int", 140),
    ]}
    return {"type": "record", "name": "manifest_entry", "fields": [
        _req("status", "int", 0),
        _opt("snapshot_id", "long", 1),
        _opt("sequence_number", "long", 3),
        _opt("file_sequence_number", "long", 4),
        _req("data_file", data_file, 2),
    ]}


MANIFEST_FILE_SCHEMA = {"type": "record", "name": "manifest_file", "fields": [
    _req("manifest_path", "string", 500),
    _req("manifest_length", "long", 501),
    _req("partition_spec_id", "int", 502),
    _req("content", "int", 517),
    _req("sequence_number", "long", 515),
    _req("min_sequence_number", "long", 516),
    _req("added_snapshot_id", "long", 503),
    _req("added_files_count", "int", 504),
    _req("existing_files_count", "int", 505),
    _req("deleted_files_count", "int", 506),
    _req("added_rows_count", "long", 512),
    _req("existing_rows_count", "long", 513),
    _req("deleted_rows_count", "long", 514),
    _opt("partitions", _list(508, {"type": "record", "name": "r508", "fields": [
        _req("contains_null", "boolean", 509),
        _opt("contains_nan", "boolean", 518),
        _opt("lower_bound", "bytes", 510),
        _opt("upper_bound", "bytes", 511)]}), 507),
    _opt("key_metadata", "bytes", 519),
]}


# -- writing -------------------------------------------------------------------------------

def _avro_bytes(schema: dict, records: list[dict], metadata: dict[str, str]) -> bytes:
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, codec=AVRO_CODEC,
                    metadata=metadata)
    return out.getvalue()


def _to_avro_value(t: T.IcebergType, value: Any) -> Any:
    # fastavro passes ints and bytes through its date/time/timestamp/decimal writers.
    if value is None:
        return None
    if t == T.UUID:
        return value.bytes if isinstance(value, uuid.UUID) else bytes(value)
    if isinstance(t, T.DecimalType):
        return Decimal(value)
    return value


def _map_out(d: dict | None) -> list[dict] | None:
    return None if d is None else [{"key": k, "value": v} for k, v in sorted(d.items())]


def _partition_json(spec: PartitionSpec) -> str:
    return json.dumps(partition_spec_to_json(spec)["fields"])  # the spec asks for the field list


def write_manifest(entries: Iterable[ManifestEntry], schema: T.Schema, spec: PartitionSpec,
                   content: ManifestContent = ManifestContent.DATA) -> bytes:
    """A v2 manifest holding `entries`, written against `schema` and `spec`."""
    entries = list(entries)
    ptype = partition_type(spec, schema)
    records = []
    for i, e in enumerate(entries):
        f = e.data_file
        where = f"entry {i} ({f.file_path})"
        if len(f.partition) != len(ptype.fields):
            raise ManifestError(f"{where}: partition has {len(f.partition)} values, spec "
                                f"{spec.spec_id} has {len(ptype.fields)} fields", field="102 partition")
        if (f.content == DataFileContent.DATA) != (content == ManifestContent.DATA):
            raise ManifestError(f"{where}: {f.content.name} file in a {content.name} manifest",
                                field="134 content")
        if e.status != ManifestEntryStatus.ADDED and (e.sequence_number is None
                                                      or e.file_sequence_number is None):
            # Spec: only ADDED entries inherit; EXISTING/DELETED keep their numbers.
            raise ManifestError(f"{where}: {e.status.name} entry needs explicit sequence numbers",
                                field="3 sequence_number")
        records.append({
            "status": int(e.status), "snapshot_id": e.snapshot_id,
            "sequence_number": e.sequence_number, "file_sequence_number": e.file_sequence_number,
            "data_file": {
                "content": int(f.content), "file_path": f.file_path, "file_format": f.file_format,
                "partition": {avro_name(pf.name): _to_avro_value(pf.type, v)
                              for pf, v in zip(ptype.fields, f.partition)},
                "record_count": f.record_count, "file_size_in_bytes": f.file_size_in_bytes,
                "column_sizes": _map_out(f.column_sizes), "value_counts": _map_out(f.value_counts),
                "null_value_counts": _map_out(f.null_value_counts),
                "nan_value_counts": _map_out(f.nan_value_counts),
                "lower_bounds": _map_out(f.lower_bounds), "upper_bounds": _map_out(f.upper_bounds),
                "key_metadata": f.key_metadata,
                "split_offsets": None if f.split_offsets is None else list(f.split_offsets),
                "equality_ids": None if f.equality_ids is None else list(f.equality_ids),
                "sort_order_id": f.sort_order_id}})
    metadata = {"schema": json.dumps(T.schema_to_json(schema)),
                "schema-id": str(schema.schema_id),
                "partition-spec": _partition_json(spec),
                "partition-spec-id": str(spec.spec_id),
                "format-version": str(FORMAT_VERSION),
                "content": "data" if content == ManifestContent.DATA else "deletes"}
    return _avro_bytes(manifest_entry_schema(ptype), records, metadata)


def summarize_partitions(partitions: Iterable[tuple], ptype: T.StructType) -> tuple[FieldSummary, ...]:
    """Field summaries over partition tuples: null/NaN flags and serialized min/max of the
    remaining values (spec "Manifest Lists": bounds exclude nulls and NaN)."""
    partitions = list(partitions)
    out = []
    for pos, pf in enumerate(ptype.fields):
        values = [p[pos] for p in partitions]
        is_nan = [isinstance(v, float) and math.isnan(v) for v in values]
        rest = [v for v, nan in zip(values, is_nan) if v is not None and not nan]
        floating = pf.type in (T.FLOAT, T.DOUBLE)
        out.append(FieldSummary(
            contains_null=any(v is None for v in values),
            contains_nan=any(is_nan) if floating else None,
            lower_bound=conversions.to_bytes(pf.type, min(rest)) if rest else None,
            upper_bound=conversions.to_bytes(pf.type, max(rest)) if rest else None))
    return tuple(out)


def manifest_file_of(entries: Iterable[ManifestEntry], schema: T.Schema, spec: PartitionSpec, *,
                     manifest_path: str, manifest_length: int, added_snapshot_id: int | None,
                     content: ManifestContent = ManifestContent.DATA,
                     sequence_number: int | None = None) -> ManifestFile:
    """The manifest list entry describing a manifest of `entries`: counts, partition
    summaries and min_sequence_number (None when every live entry inherits, so that the
    manifest list assigns the snapshot's sequence number)."""
    entries = list(entries)
    by_status = {s: [e for e in entries if e.status == s] for s in ManifestEntryStatus}
    live = by_status[ManifestEntryStatus.ADDED] + by_status[ManifestEntryStatus.EXISTING]
    explicit = [e.sequence_number for e in live if e.sequence_number is not None]
    # A newly assigned sequence number is above every existing one, so when some entry
    # inherits, the explicit ones (if any) hold the minimum.
    min_seq = min(explicit) if explicit else sequence_number

    def rows(s):
        return sum(e.data_file.record_count for e in by_status[s])
    return ManifestFile(
        manifest_path=manifest_path, manifest_length=manifest_length,
        partition_spec_id=spec.spec_id, added_snapshot_id=added_snapshot_id, content=content,
        sequence_number=sequence_number, min_sequence_number=min_seq,
        added_files_count=len(by_status[ManifestEntryStatus.ADDED]),
        existing_files_count=len(by_status[ManifestEntryStatus.EXISTING]),
        deleted_files_count=len(by_status[ManifestEntryStatus.DELETED]),
        added_rows_count=rows(ManifestEntryStatus.ADDED),
        existing_rows_count=rows(ManifestEntryStatus.EXISTING),
        deleted_rows_count=rows(ManifestEntryStatus.DELETED),
        partitions=summarize_partitions((e.data_file.partition for e in entries),
                                        partition_type(spec, schema)))


def write_manifest_list(manifests: Iterable[ManifestFile], snapshot_id: int,
                        parent_snapshot_id: int | None, sequence_number: int) -> bytes:
    """The v2 manifest list of snapshot `snapshot_id`. Unassigned (None) sequence numbers
    and added_snapshot_id take this snapshot's values (spec "Sequence Number Inheritance")."""
    records = []
    for m in manifests:
        seq = sequence_number if m.sequence_number is None else m.sequence_number
        min_seq = seq if m.min_sequence_number is None else m.min_sequence_number
        if not min_seq <= seq <= sequence_number:
            raise ManifestError(f"sequence numbers out of order: min {min_seq}, manifest {seq}, "
                                f"snapshot {sequence_number}", m.manifest_path, "515 sequence_number")
        counts = [m.added_files_count, m.existing_files_count, m.deleted_files_count,
                  m.added_rows_count, m.existing_rows_count, m.deleted_rows_count]
        if any(c is None for c in counts):
            raise ManifestError("v2 requires every file and row count", m.manifest_path)
        records.append({
            "manifest_path": m.manifest_path, "manifest_length": m.manifest_length,
            "partition_spec_id": m.partition_spec_id, "content": int(m.content),
            "sequence_number": seq, "min_sequence_number": min_seq,
            "added_snapshot_id": snapshot_id if m.added_snapshot_id is None else m.added_snapshot_id,
            "added_files_count": m.added_files_count,
            "existing_files_count": m.existing_files_count,
            "deleted_files_count": m.deleted_files_count,
            "added_rows_count": m.added_rows_count,
            "existing_rows_count": m.existing_rows_count,
            "deleted_rows_count": m.deleted_rows_count,
            "partitions": None if m.partitions is None else [
                {"contains_null": s.contains_null, "contains_nan": s.contains_nan,
                 "lower_bound": s.lower_bound, "upper_bound": s.upper_bound}
                for s in m.partitions],
            "key_metadata": m.key_metadata})
    metadata = {"snapshot-id": str(snapshot_id),
                "parent-snapshot-id": "null" if parent_snapshot_id is None else str(parent_snapshot_id),
                "sequence-number": str(sequence_number),
                "format-version": str(FORMAT_VERSION)}
    return _avro_bytes(MANIFEST_FILE_SCHEMA, records, metadata)


# -- reading (by field id) -----------------------------------------------------------------

def _branch(avro_type: Any) -> Any:
    """The non-null branch of an optional union."""
    if isinstance(avro_type, list):
        rest = [b for b in avro_type if b != "null"]
        return rest[0] if len(rest) == 1 else avro_type
    return avro_type


class _Record:
    """Field-id view of one Avro record schema: which name holds each id."""

    def __init__(self, schema: Any, location: str, what: str):
        schema = _branch(schema)
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


def _map_in(value: Any) -> dict | None:
    if value is None:
        return None
    if isinstance(value, dict):  # an Avro map (string keys) from a lenient writer
        return {int(k): v for k, v in value.items()}
    return dict(map(_KEY_VALUE, value))


def _from_avro_value(avro_type: Any, value: Any) -> Any:
    """A raw Avro value (logical types not applied, see _open) in icefloe's internal form."""
    if value is None:
        return None
    t = _branch(avro_type)
    logical = t.get("logicalType") if isinstance(t, dict) else None
    if logical == "decimal" and isinstance(value, bytes):
        return conversions.unscaled_to_decimal(int.from_bytes(value, "big", signed=True), t.get("scale", 0))
    if logical == "uuid":
        return uuid.UUID(bytes=value) if isinstance(value, bytes) else uuid.UUID(value)
    if logical in ("timestamp-millis", "time-millis"):  # not Iceberg's, but unambiguous
        return value * 1000
    return value


# The Avro container header, to swap in a schema without logical types: fastavro would
# turn them into datetime objects, which cannot hold every Iceberg timestamp.
_HEADER_SCHEMA = fastavro.parse_schema({
    "type": "record", "name": "org.apache.avro.file.Header", "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 4}},
        {"name": "meta", "type": {"type": "map", "values": "bytes"}},
        {"name": "sync", "type": {"type": "fixed", "name": "Sync", "size": 16}}]})
_MAGIC = b"Obj\x01"


def _strip_logical(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: _strip_logical(v) for k, v in schema.items() if k != "logicalType"}
    if isinstance(schema, list):
        return [_strip_logical(v) for v in schema]
    return schema


_PRIMITIVE_AVRO = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
NAMED_TYPES_MAX = 10_000  # a schema defining more named types than this is refused


def _expand_names(schema: Any) -> Any:
    """The schema with references to named types (a later use of "decimal_9_2", as Java
    writes for a repeated type) replaced by their definitions, for reading by id."""
    named: dict[str, Any] = {}

    def visit(t: Any, namespace: str) -> Any:
        if isinstance(t, str):
            if t in _PRIMITIVE_AVRO:
                return t
            return named.get(t) or named.get(f"{namespace}.{t}") or t
        if isinstance(t, list):
            return [visit(b, namespace) for b in t]
        if not isinstance(t, dict):
            return t
        kind = t.get("type")
        if kind in ("record", "error", "fixed", "enum") and isinstance(t.get("name"), str):
            ns = t.get("namespace", namespace) if "." not in t["name"] else t["name"].rsplit(".", 1)[0]
            if len(named) >= NAMED_TYPES_MAX:
                raise ValueError("too many named types")
            out = dict(t)
            for key in {t["name"], t["name"].rsplit(".", 1)[-1], f"{ns}.{t['name'].rsplit('.', 1)[-1]}"}:
                named[key] = out
            if kind in ("record", "error"):
                out["fields"] = [dict(f, type=visit(f.get("type"), ns)) for f in t.get("fields", [])]
            return out
        if kind == "array":
            return dict(t, items=visit(t.get("items"), namespace))
        if kind == "map":
            return dict(t, values=visit(t.get("values"), namespace))
        if isinstance(kind, (dict, list)):  # {"type": {...}} wraps a type
            return visit(kind, namespace)
        if isinstance(kind, str) and kind not in _PRIMITIVE_AVRO:  # {"type": "a_name"}
            return visit(kind, namespace)
        return t  # a primitive, possibly with a logical type
    return visit(schema, "")


def _header(data: bytes, location: str) -> tuple[dict, dict[str, str], int]:
    """(the container header as fastavro reads it, its key-value metadata as text, the
    position of the first block)."""
    fo = io.BytesIO(data)
    header = fastavro.schemaless_reader(fo, _HEADER_SCHEMA, None)
    if header["magic"] != _MAGIC:
        raise ManifestError("not an Avro container file (bad magic)", location)
    return header, {k: v.decode("utf-8") for k, v in header["meta"].items()}, fo.tell()


def _open(data: bytes, location: str) -> tuple[Any, dict[str, str], list[dict]]:
    """(writer schema with its logical types and named references expanded, key-value
    metadata, raw records)."""
    try:
        header, metadata, start = _header(data, location)
        body = data[start:]
        schema = json.loads(metadata["avro.schema"])
        raw_meta = dict(header["meta"], **{"avro.schema": json.dumps(_strip_logical(schema)).encode()})
        out = io.BytesIO()
        fastavro.schemaless_writer(out, _HEADER_SCHEMA, {"magic": _MAGIC, "meta": raw_meta, "sync": header["sync"]})
        records = list(fastavro.reader(io.BytesIO(out.getvalue() + body)))
        return _expand_names(schema), metadata, records
    except ManifestError:
        raise
    except Exception as e:  # fastavro raises many kinds on corrupt input
        raise ManifestError(f"not a readable Avro file ({type(e).__name__}: {e})", location) from None


# data_file fields a plan without column predicates never looks at (ids 108..128, 137)
COLUMN_STATS_IDS = frozenset({108, 109, 110, 137, 125, 128})


def _open_without_stats(data: bytes, location: str, positions: list | None = None
                        ) -> tuple[Any, list[dict]] | None:
    """(expanded writer schema, raw records without the column statistics maps of
    data_file), decoded by avro_decode; None when its codec is not one it reads.
    `positions`: see avro_decode.decode_blocks."""
    try:
        header, metadata, start = _header(data, location)
        codec = metadata.get("avro.codec", "null")
        if codec not in avro_decode.CODECS:
            return None
        schema = _expand_names(json.loads(metadata["avro.schema"]))  # logical types are not applied
        entry = _Record(schema, location, "manifest_entry")
        data_file = _branch(entry.field(2, "data_file")["type"])
        if not isinstance(data_file, dict):
            raise ManifestError("data_file is not an Avro record", location, "2 data_file")
        stats = [f for f in data_file.get("fields", []) if f.get("field-id") in COLUMN_STATS_IDS]
        read = avro_decode.compile_reader(schema, lambda f: any(f is x for x in stats))
        return schema, avro_decode.decode_blocks(data, start, header["sync"], codec, read, positions)
    except ManifestError:
        raise
    except Exception as e:  # malformed input: bad lengths, truncation, broken codec data
        raise ManifestError(f"not a readable Avro file ({type(e).__name__}: {e})", location) from None


def read_manifest_metadata(data: bytes, location: str = "<manifest>") -> dict[str, str]:
    """The key-value metadata in a manifest's (or manifest list's) Avro header."""
    _, metadata, _ = _open(data, location)
    return {k: v for k, v in metadata.items() if not k.startswith("avro.")}


def read_manifest(data: bytes, manifest_file: ManifestFile | None = None,
                  location: str | None = None, *, column_stats: bool = True) -> list[ManifestEntry]:
    """Entries of a manifest, with snapshot ids and sequence numbers inherited from
    `manifest_file` (its list entry) where null and the entry is ADDED. A v1 manifest
    (sequence number 0 in its list entry) inherits for every entry. Without
    `column_stats` the data files carry no column statistics maps (COLUMN_STATS_IDS are
    None): what a scan plan with no column predicate needs, decoded without building them."""
    location = location or (manifest_file.manifest_path if manifest_file else "<manifest>")
    opened = None if column_stats else _open_without_stats(data, location)
    if opened is None:
        schema, _, records = _open(data, location)
    else:
        schema, records = opened
    return _entries(_EntryReader(schema, location, column_stats), records, manifest_file, location)


def _entries(reader: "_EntryReader", records: list[dict], manifest_file: ManifestFile | None,
             location: str) -> list[ManifestEntry]:
    entries: list[ManifestEntry] = []
    try:  # one handler for the loop: a context manager per record costs more than the record
        for r in records:
            entries.append(reader.read(r, manifest_file))
    except ManifestError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as e:
        raise ManifestError(f"record {len(entries)}: {type(e).__name__}: {e}", location) from None
    return entries


class LazyManifest:
    """A manifest's entries without their column statistics (`entries`), and any one entry
    in full on demand (`full(i)`): a plan prunes by partition first and decodes the
    statistics of the entries that survive only."""

    def __init__(self, entries: list[ManifestEntry], full):
        self.entries = entries
        self._full = full
        self._done: dict[int, ManifestEntry] = {}

    def full(self, index: int) -> ManifestEntry:
        entry = self._done.get(index)
        if entry is None:
            entry = self._done[index] = self._full(index)
        return entry


def read_manifest_lazy(data: bytes, manifest_file: ManifestFile | None = None,
                       location: str | None = None) -> LazyManifest:
    """read_manifest(..., column_stats=False), keeping what it takes to read any entry
    in full later. Files avro_decode does not read are read in full at once."""
    location = location or (manifest_file.manifest_path if manifest_file else "<manifest>")
    positions: list = []
    opened = _open_without_stats(data, location, positions)
    if opened is None:
        full = read_manifest(data, manifest_file, location)
        return LazyManifest(full, full.__getitem__)
    schema, records = opened
    entries = _entries(_EntryReader(schema, location, False), records, manifest_file, location)
    try:
        read_record = avro_decode.compile_reader(schema)
    except ValueError as e:
        raise ManifestError(f"not a readable Avro file (ValueError: {e})", location) from None
    full_reader = _EntryReader(schema, location)

    def full_entry(index: int) -> ManifestEntry:
        block, pos = positions[index]
        try:
            record = read_record(block, pos)[0]
        except Exception as e:  # malformed statistics, as in _open_without_stats
            raise ManifestError(f"record {index}: not readable ({type(e).__name__}: {e})", location) from None
        return _entries(full_reader, [record], manifest_file, location)[0]
    return LazyManifest(entries, full_entry)


@contextmanager
def _record_errors(location: str, index: int):
    """Malformed values (wrong Avro types from a foreign writer, unknown enum codes)."""
    try:
        yield
    except ManifestError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as e:
        raise ManifestError(f"record {index}: {type(e).__name__}: {e}", location) from None


_PLAIN_LOGICAL = frozenset({None})  # partition values read as stored unless a logical type says otherwise
_STATUS = {s.value: s for s in ManifestEntryStatus}
_CONTENT = {c.value: c for c in DataFileContent}
# data_file fields read by id: (field id, label, DataFile attribute, required, kind)
_FILE_FIELDS = (
    (100, "file_path", "file_path", True, None), (101, "file_format", "file_format", True, None),
    (103, "record_count", "record_count", True, None),
    (104, "file_size_in_bytes", "file_size_in_bytes", True, None),
    (108, "column_sizes", "column_sizes", False, "map"), (109, "value_counts", "value_counts", False, "map"),
    (110, "null_value_counts", "null_value_counts", False, "map"),
    (137, "nan_value_counts", "nan_value_counts", False, "map"),
    (125, "lower_bounds", "lower_bounds", False, "map"), (128, "upper_bounds", "upper_bounds", False, "map"),
    (131, "key_metadata", "key_metadata", False, None), (132, "split_offsets", "split_offsets", False, "tuple"),
    (135, "equality_ids", "equality_ids", False, "tuple"), (140, "sort_order_id", "sort_order_id", False, None))


class _EntryReader:
    """Reads manifest_entry records of one writer schema by field id. The schema is
    resolved once (names of the ids, missing required ids refused up front); each record
    is then a few dict lookups, so planning a scan costs little beyond Avro decoding."""

    def __init__(self, schema: Any, location: str, column_stats: bool = True):
        entry = _Record(schema, location, "manifest_entry")
        file_ = _Record(entry.field(2, "data_file")["type"], location, "data_file")
        part = _Record(file_.field(102, "partition")["type"], location, "partition")
        part_fields = list(part.fields.values())
        if len(part_fields) != len(part.names):
            raise ManifestError("a partition field lacks its field-id", location, "102 partition")
        self.location = location
        self.entry, self.file = entry, file_
        self.status = entry.field(0, "status")["name"]
        self.data_file = entry.field(2, "data_file")["name"]
        self.optional_entry = tuple((entry.fields[fid]["name"] if fid in entry.fields else None)
                                    for fid in (1, 3, 4))
        self.partition = file_.field(102, "partition")["name"]
        self.content = file_.fields[134]["name"] if 134 in file_.fields else None
        self.file_fields = []
        for fid, label, attr, required, kind in _FILE_FIELDS:
            if not column_stats and fid in COLUMN_STATS_IDS:
                continue
            if fid in file_.fields:
                self.file_fields.append((file_.fields[fid]["name"], fid, label, attr, required, kind))
            elif required:
                file_.field(fid, label)  # raises: a required id is missing from the schema
        self.part_fields = [(pf["name"], pf["type"] if _needs_conversion(pf["type"]) else None)
                            for pf in part_fields]

    def _null(self, fid: int, label: str):
        raise ManifestError("required field is null", self.location, f"{fid} {label}")

    def read(self, r: dict, manifest_file: ManifestFile | None) -> ManifestEntry:
        f = r.get(self.data_file)
        if f is None:
            self._null(2, "data_file")
        raw_part = f.get(self.partition)
        if raw_part is None:
            self._null(102, "partition")
        values = {}
        for name, fid, label, attr, required, kind in self.file_fields:
            value = f.get(name)
            if value is None:
                if required:
                    self._null(fid, label)
                continue
            values[attr] = _map_in(value) if kind == "map" else tuple(value) if kind == "tuple" else value
        content = 0 if self.content is None else f.get(self.content)
        data_file = DataFile(
            content=_CONTENT[0 if content is None else content],
            partition=tuple(raw_part.get(name) if t is None else _from_avro_value(t, raw_part.get(name))
                            for name, t in self.part_fields),
            **values)
        status = r.get(self.status)
        if status is None:
            self._null(0, "status")
        n_snap, n_seq, n_file_seq = self.optional_entry
        snapshot_id = None if n_snap is None else r.get(n_snap)
        seq = None if n_seq is None else r.get(n_seq)
        file_seq = None if n_file_seq is None else r.get(n_file_seq)
        status = _STATUS[status]
        if manifest_file is not None:  # inheritance (see read_manifest)
            if snapshot_id is None:
                snapshot_id = manifest_file.added_snapshot_id
            if status == ManifestEntryStatus.ADDED or manifest_file.sequence_number == 0:
                if seq is None:
                    seq = manifest_file.sequence_number
                if file_seq is None:
                    file_seq = manifest_file.sequence_number
        return ManifestEntry(status=status, snapshot_id=snapshot_id, sequence_number=seq,
                             file_sequence_number=file_seq, data_file=data_file)


def _needs_conversion(avro_type: Any) -> bool:
    t = _branch(avro_type)
    return isinstance(t, dict) and t.get("logicalType") not in _PLAIN_LOGICAL


def read_manifest_list(data: bytes, location: str = "<manifest list>") -> list[ManifestFile]:
    """Entries of a manifest list. v1 lists (no sequence numbers) read as sequence number
    0 and content DATA; an unassigned sequence number inherits the list's own."""
    schema, metadata, records = _open(data, location)
    rec = _Record(schema, location, "manifest_file")
    own_seq = metadata.get("sequence-number")
    v1 = not rec.has(515)
    summary_rec = None
    if rec.has(507):  # resolved once per list, not per record
        summary_rec = _Record(_branch(rec.field(507, "partitions")["type"])["items"], location, "field_summary")
    out = []
    for i, r in enumerate(records):
        with _record_errors(location, i):
            out.append(_read_manifest_file(r, rec, own_seq, v1, location, summary_rec))
    return out


def listed_manifests(manifests: Iterable[ManifestFile], snapshot_id: int,
                     sequence_number: int) -> list[ManifestFile]:
    """The entries of the list `write_manifest_list(manifests, snapshot_id, _,
    sequence_number)` writes, as `read_manifest_list` reads them back (unassigned numbers
    and snapshot ids filled in), without encoding and decoding the list."""
    out = []
    for m in manifests:
        seq = sequence_number if m.sequence_number is None else m.sequence_number
        changes = {}
        if m.sequence_number is None:
            changes["sequence_number"] = seq
        if m.min_sequence_number is None:
            changes["min_sequence_number"] = seq
        if m.added_snapshot_id is None:
            changes["added_snapshot_id"] = snapshot_id
        if m.partitions is not None and not isinstance(m.partitions, tuple):
            changes["partitions"] = tuple(m.partitions)
        out.append(replace(m, **changes) if changes else m)
    return out


def _read_manifest_file(r: dict, rec: _Record, own_seq: str | None, v1: bool,
                        location: str, summary_rec: "_Record | None" = None) -> ManifestFile:
    seq = rec.get(r, 515, "sequence_number", False)
    if seq is None or seq == -1:
        seq = 0 if v1 else _int(own_seq, location)
    min_seq = rec.get(r, 516, "min_sequence_number", False)
    if min_seq is None or min_seq == -1:
        min_seq = seq
    summaries = rec.get(r, 507, "partitions", False)
    if summaries is not None:
        s = summary_rec or _Record(_branch(rec.field(507, "partitions")["type"])["items"], location,
                                   "field_summary")
        summaries = tuple(FieldSummary(
            contains_null=s.get(x, 509, "contains_null"),
            contains_nan=s.get(x, 518, "contains_nan", False),
            lower_bound=s.get(x, 510, "lower_bound", False),
            upper_bound=s.get(x, 511, "upper_bound", False)) for x in summaries)
    return ManifestFile(
        manifest_path=rec.get(r, 500, "manifest_path"),
        manifest_length=rec.get(r, 501, "manifest_length"),
        partition_spec_id=rec.get(r, 502, "partition_spec_id"),
        content=ManifestContent(rec.get(r, 517, "content", False, 0)),
        sequence_number=seq, min_sequence_number=min_seq,
        added_snapshot_id=rec.get(r, 503, "added_snapshot_id"),
        added_files_count=rec.get(r, 504, "added_files_count", False),
        existing_files_count=rec.get(r, 505, "existing_files_count", False),
        deleted_files_count=rec.get(r, 506, "deleted_files_count", False),
        added_rows_count=rec.get(r, 512, "added_rows_count", False),
        existing_rows_count=rec.get(r, 513, "existing_rows_count", False),
        deleted_rows_count=rec.get(r, 514, "deleted_rows_count", False),
        partitions=summaries,
        key_metadata=rec.get(r, 519, "key_metadata", False))


def _int(text: str | None, location: str) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        raise ManifestError("unassigned sequence number and no sequence-number metadata",
                            location, "515 sequence_number") from None
