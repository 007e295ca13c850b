"""Manifests and manifest lists read (Iceberg spec: "Manifests", "Manifest Lists",
"Sequence Number Inheritance", "Scan Planning").

Reading goes by field id, never by name, so files from other writers (extra fields, v1
names) read the same; a file that lacks a required id raises `ManifestError` naming the
file and the field. One decoder reads everything: avro_container.py for the file,
avro_decode.py for the values, compiled once per writer schema.

`ManifestReader` is one manifest, opened once. `read_entries(projection, keep)` gives its
entries in a `Projection`: ALL fields, or WITHOUT_COLUMN_STATS (the six column statistics
maps left as None: what a scan plan with no column predicate needs). With `keep`, only
the entries it keeps; it is called on entries without column statistics, so that a plan
pruning by partition decodes the statistics of the surviving entries only. Each entry
is decoded at most once per projection, and entries with every field serve any
projection. Every first decode is checked against the manifest's list entry
(integrity.py).

`read_matching(may_match)` is a filtered plan's read: a partition index of the manifest
(each entry's status, record count, partition tuple and first_row_id, every other field
stepped over; avro_shapes.py) decides which live entries' partitions `may_match` keeps,
calling it once per distinct partition; only those entries are decoded, with every field.
The index is checked against the list entry's counts like any first decode; the fields it
steps over are checked in the entries decoded.

TLA+ (tla/IcebergCommit.tla): no action; readers only read committed snapshots.
"""
from __future__ import annotations

import threading
from dataclasses import replace
from enum import Enum
from typing import Any, Callable

from icefloe.impl.format import avro_container, avro_decode, integrity
from icefloe.impl.format.avro_container import DECODE_ERRORS
from icefloe.impl.format.field_ids import FieldIds, branch, check_int, from_avro_value, map_in
from icefloe.impl.format.manifest import (
    COLUMN_STATS_IDS, DataFile, DataFileContent, FieldSummary, ManifestContent, ManifestEntry,
    ManifestEntryStatus, ManifestError, ManifestFile,
)

__all__ = ["Projection", "ManifestReader", "read_manifest", "read_manifest_list", "read_manifest_metadata"]


class Projection(Enum):
    """The fields of a manifest entry a read builds."""
    ALL = "all"
    WITHOUT_COLUMN_STATS = "without column stats"  # COLUMN_STATS_IDS read as None


def _open(data: bytes, location: str) -> avro_container.Container:
    try:
        return avro_container.open_container(data)
    except DECODE_ERRORS as e:
        raise ManifestError(f"not a readable Avro file ({type(e).__name__}: {e})", location) from None


def _decode(data: bytes, container: avro_container.Container, location: str, skip=None,
            positions: avro_container.RecordPositions | None = None,
            collect: Callable[[dict], None] | None = None) -> list[dict]:
    """Raw records, the fields for which `skip(field)` holds left out; with `collect`,
    each record is given to it as soon as it is decoded, and not kept."""
    try:
        read = avro_decode.compile_reader(container.schema, skip) if skip else \
            avro_decode.compile_reader(container.schema)
        if collect is not None:
            record = read

            def read(buf, pos):
                value, pos = record(buf, pos)
                collect(value)
                return None, pos
        return avro_container.decode_blocks(data, container, read, positions)
    except DECODE_ERRORS as e:  # malformed input: bad lengths, truncation, broken codec data
        raise ManifestError(f"not a readable Avro file ({type(e).__name__}: {e})", location) from None


def read_manifest_metadata(data: bytes, location: str = "<manifest>") -> dict[str, str]:
    """The key-value metadata in a manifest's (or manifest list's) Avro header."""
    return {k: v for k, v in _open(data, location).metadata.items() if not k.startswith("avro.")}


class ManifestReader:
    """One manifest, opened once (see the module docstring). `manifest_file`, its list
    entry, supplies inherited snapshot ids and sequence numbers and the counts the
    entries are checked against. Safe to share between threads: reads of one
    manifest take turns (a full decode releases the bytes the others would read)."""

    def __init__(self, data: bytes, manifest_file: ManifestFile | None = None, location: str | None = None):
        self.location = location or (manifest_file.manifest_path if manifest_file else "<manifest>")
        self.manifest_file = manifest_file
        integrity.check_manifest_length(manifest_file, len(data), self.location)
        self._data: bytes | None = data
        self._container = _open(data, self.location)
        try:
            self._fields = _EntryFields(self._container.schema, self.location)
        except DECODE_ERRORS as e:  # a malformed schema: fields that are not records, no names
            raise ManifestError(f"not a readable manifest schema ({type(e).__name__}: {e})",
                                self.location) from None
        self._all: list[ManifestEntry] | None = None          # every entry, every field
        self._partial: list[ManifestEntry] | None = None      # every entry, without column stats
        self._positions: avro_container.RecordPositions | None = None  # where each record starts
        self._complete: dict[int, ManifestEntry] = {}         # entries decoded in full one by one
        self._index: tuple[bytes, list[tuple]] | None = None  # every entry's status and raw partition
        self._row_ids: list[int | None] | None = None         # every entry's first_row_id, inherited
        self._lock = threading.Lock()

    def read_entries(self, projection: Projection = Projection.ALL,
                     keep: Callable[[ManifestEntry], bool] | None = None) -> list[ManifestEntry]:
        with self._lock:  # one decode at a time: a full decode releases the bytes the others read
            return self._read_entries(projection, keep)

    def _read_entries(self, projection: Projection, keep) -> list[ManifestEntry]:
        if keep is None:
            if projection is Projection.ALL or self._all is not None:
                return self._every_field()
            return self._without_stats()
        cheap = self._all if self._all is not None else self._without_stats()
        chosen = [i for i, e in enumerate(cheap) if keep(e)]
        if projection is Projection.WITHOUT_COLUMN_STATS or self._all is not None:
            return [cheap[i] for i in chosen]
        return [self._entry(i) for i in chosen]

    def read_matching(self, may_match: Callable[[tuple], bool]) -> list[ManifestEntry]:
        """The live entries, every field decoded, whose partition tuple `may_match` keeps
        (see the module docstring); `may_match` is called once per distinct partition."""
        with self._lock:
            return self._read_matching(may_match)

    def _read_matching(self, may_match) -> list[ManifestEntry]:
        verdicts: dict[tuple, bool] = {}
        chosen: list[int] = []
        source = self._all if self._all is not None else self._partial
        if source is not None:  # entries built already: judged by their partitions
            for i, e in enumerate(source):
                if e.status != ManifestEntryStatus.DELETED:
                    p = e.data_file.partition
                    keep = verdicts.get(p)
                    if keep is None:
                        keep = verdicts[p] = bool(may_match(p))
                    if keep:
                        chosen.append(i)
            return [source[i] for i in chosen] if self._all is not None else [self._entry(i) for i in chosen]
        statuses, partitions = self._partition_index()
        convert = self._fields.partition_of
        for i, raw in enumerate(partitions):
            if statuses[i] != DELETED:
                keep = verdicts.get(raw)
                if keep is None:
                    keep = verdicts[raw] = bool(may_match(convert(raw)))
                if keep:
                    chosen.append(i)
        return [self._entry(i) for i in chosen]

    def _partition_index(self) -> tuple[bytes, list[tuple]]:
        if self._index is None:
            fields, location = self._fields, self.location
            positions = avro_container.RecordPositions()
            columns = statuses, partitions, record_counts, first_row_ids = bytearray(), [], [], []
            try:
                _decode(self._data, self._container, location, fields.index_leaves_out, positions,
                        fields.index_collector(*columns))
            except ManifestError:
                raise
            except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as e:
                raise ManifestError(f"record {len(statuses)}: {type(e).__name__}: {e}", location) from None
            files, rows = {s: 0 for s in ManifestEntryStatus}, {s: 0 for s in ManifestEntryStatus}
            for status, n in zip(statuses, record_counts):
                files[status] += 1
                rows[status] += n
            integrity.check_manifest_counts(self.manifest_file, files, rows, location)
            m = self.manifest_file
            if m is not None and m.first_row_id is not None and m.content == ManifestContent.DATA:
                next_id = m.first_row_id  # as _inherit_row_ids
                for i, (status, n) in enumerate(zip(statuses, record_counts)):
                    if status != DELETED and first_row_ids[i] is None:
                        first_row_ids[i] = next_id
                        next_id += n
                self._row_ids = first_row_ids
            self._index, self._positions = (bytes(statuses), partitions), positions
        return self._index

    def _build(self, records: list[dict], column_stats: bool) -> list[ManifestEntry]:
        fields, manifest_file = self._fields, self.manifest_file
        out: list[ManifestEntry] = []
        try:  # one handler for the loop: a context manager per record costs more than the record
            for r in records:
                out.append(fields.entry(r, manifest_file, column_stats))
        except ManifestError:
            raise
        except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as e:
            raise ManifestError(f"record {len(out)}: {type(e).__name__}: {e}", self.location) from None
        return out

    def _every_field(self) -> list[ManifestEntry]:
        if self._all is None:
            if self._positions is not None:  # decoded once already: decode each record again
                entries = [self._entry(i) for i in range(len(self._positions))]
            else:
                entries = self._build(_decode(self._data, self._container, self.location), True)
                integrity.check_manifest_entries(self.manifest_file, entries, self.location)
                entries = self._inherit_row_ids(entries)
            self._all = entries
            self._data = self._positions = self._partial = self._index = self._row_ids = None  # not needed now
            self._complete = {}
        return self._all

    def _without_stats(self) -> list[ManifestEntry]:
        if self._partial is None:
            positions = avro_container.RecordPositions()
            stats = self._fields.stats_fields
            records = _decode(self._data, self._container, self.location,
                              lambda f: any(f is x for x in stats), positions)
            entries = self._build(records, False)
            integrity.check_manifest_entries(self.manifest_file, entries, self.location)
            self._partial, self._positions = self._inherit_row_ids(entries), positions
        return self._partial

    def _entry(self, index: int) -> ManifestEntry:
        entry = self._complete.get(index)
        if entry is None:
            if self._fields.read_record is None:
                try:
                    self._fields.read_record = avro_decode.compile_reader(self._container.schema)
                except DECODE_ERRORS as e:
                    raise ManifestError(f"not a readable Avro file ({type(e).__name__}: {e})",
                                        self.location) from None
            block, pos = self._positions[index]
            try:
                record = self._fields.read_record(block, pos)[0]
            except DECODE_ERRORS as e:  # malformed statistics, decoded for the first time
                raise ManifestError(f"record {index}: not readable ({type(e).__name__}: {e})",
                                    self.location) from None
            entry = self._build([record], True)[0]
            # _positions came with _partial or the index
            inherited = self._partial[index].data_file.first_row_id if self._partial is not None else \
                self._row_ids[index] if self._row_ids is not None else entry.data_file.first_row_id
            if inherited != entry.data_file.first_row_id:
                entry = replace(entry, data_file=replace(entry.data_file, first_row_id=inherited))
            self._complete[index] = entry
        return entry

    def _inherit_row_ids(self, entries: list[ManifestEntry]) -> list[ManifestEntry]:
        """v3 "First Row ID Inheritance": a live data file without a first_row_id takes the
        manifest's first_row_id plus the record counts of the live files before it that
        had none (deleted entries are skipped, as Iceberg-Java does: each writes its own).
        A manifest without first_row_id (written before an upgrade to v3) assigns none."""
        m = self.manifest_file
        if m is None or m.first_row_id is None or m.content != ManifestContent.DATA:
            return entries
        next_id, out = m.first_row_id, []
        for e in entries:
            if e.status != ManifestEntryStatus.DELETED and e.data_file.first_row_id is None:
                e = replace(e, data_file=replace(e.data_file, first_row_id=next_id))
                next_id += e.data_file.record_count
            out.append(e)
        return out


def read_manifest(data: bytes, manifest_file: ManifestFile | None = None, location: str | None = None,
                  projection: Projection = Projection.ALL) -> list[ManifestEntry]:
    """Entries of a manifest (`ManifestReader(...).read_entries(projection)`), with snapshot
    ids and sequence numbers inherited from `manifest_file` (its list entry) where null
    and the entry is ADDED. A v1 manifest (sequence number 0 in its list entry) inherits
    for every entry."""
    return ManifestReader(data, manifest_file, location).read_entries(projection)



_PLAIN_LOGICAL = frozenset({None})  # partition values read as stored unless a logical type says otherwise
_STATUS = {s.value: s for s in ManifestEntryStatus}
DELETED = ManifestEntryStatus.DELETED
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
    (135, "equality_ids", "equality_ids", False, "tuple"), (140, "sort_order_id", "sort_order_id", False, None),
    (142, "first_row_id", "first_row_id", False, None),
    (143, "referenced_data_file", "referenced_data_file", False, None),
    (144, "content_offset", "content_offset", False, None),
    (145, "content_size_in_bytes", "content_size_in_bytes", False, None))


def entry_records(schema: Any, location: str) -> tuple[FieldIds, FieldIds, FieldIds]:
    """The manifest_entry, data_file and partition records of a writer schema, resolved by
    field id; a partition field without its field-id is refused."""
    entry = FieldIds(schema, location, "manifest_entry")
    file_ = FieldIds(entry.field(2, "data_file")["type"], location, "data_file")
    part = FieldIds(file_.field(102, "partition")["type"], location, "partition")
    if len(part.fields) != len(part.names):
        raise ManifestError("a partition field lacks its field-id", location, "102 partition")
    return entry, file_, part


class _EntryFields:
    """The fields of manifest_entry records of one writer schema, resolved by field id once
    (names of the ids, missing required ids refused up front); each record is then a few
    dict lookups, so planning a scan costs little beyond Avro decoding."""

    def __init__(self, schema: Any, location: str):
        entry, file_, part = entry_records(schema, location)
        part_fields = list(part.fields.values())
        self.location = location
        self.status = entry.field(0, "status")["name"]
        self.data_file = entry.field(2, "data_file")["name"]
        self.optional_entry = tuple((entry.fields[fid]["name"] if fid in entry.fields else None)
                                    for fid in (1, 3, 4))
        self.partition = file_.field(102, "partition")["name"]
        self.content = file_.fields[134]["name"] if 134 in file_.fields else None
        self.file_fields = []
        for fid, label, attr, required, kind in _FILE_FIELDS:
            if fid in file_.fields:
                self.file_fields.append((file_.fields[fid]["name"], fid, label, attr, required, kind))
            elif required:
                file_.field(fid, label)  # raises: a required id is missing from the schema
        self.file_fields_partial = [f for f in self.file_fields if f[1] not in COLUMN_STATS_IDS]
        # the Avro fields a read without column statistics steps over
        self.stats_fields = [f for fid, f in file_.fields.items() if fid in COLUMN_STATS_IDS]
        self.part_fields = [(pf["name"], pf["type"] if _needs_conversion(pf["type"]) else None)
                            for pf in part_fields]
        self.converts = any(t is not None for _, t in self.part_fields)
        self.read_record = None  # every field of one record (avro_decode), compiled when first needed
        # the partition index's read: status, data_file's partition, record_count and first_row_id
        index_ids = {(entry, 0), (entry, 2), (file_, 102), (file_, 103), (file_, 142)}
        kept = {id(rec.fields[fid]) for rec, fid in index_ids if fid in rec.fields}
        records = (branch(schema), branch(entry.field(2, "data_file")["type"]))
        left_out = {id(f) for rec in records for f in rec["fields"] if id(f) not in kept}
        self.index_leaves_out = lambda f: id(f) in left_out
        self.first_row_id = file_.fields[142]["name"] if 142 in file_.fields else None
        self.record_count = file_.fields[103]["name"]

    def index_collector(self, statuses: bytearray, partitions: list, counts: list, row_ids: list):
        """A function taking each record of the partition index's read (its status,
        raw partition tuple, record count and first_row_id appended to the lists, the
        required ones checked as `entry` checks them), so no record outlives its decoding."""
        names = [name for name, _ in self.part_fields]
        status_name, file_name, part_name = self.status, self.data_file, self.partition
        count_name, row_id_name = self.record_count, self.first_row_id

        def collect(r: dict) -> None:
            f = r.get(file_name)
            if f is None:
                self._null(2, "data_file")
            raw_part = f.get(part_name)
            if raw_part is None:
                self._null(102, "partition")
            status = r.get(status_name)
            if status is None:
                self._null(0, "status")
            n = f.get(count_name)
            if n is None:
                self._null(103, "record_count")
            check_int(n, "103 record_count", self.location)
            statuses.append(_STATUS[status])
            partitions.append(tuple([raw_part.get(name) for name in names]))
            counts.append(n)
            row_ids.append(None if row_id_name is None else f.get(row_id_name))
        return collect

    def partition_of(self, raw: tuple) -> tuple:
        """A raw partition tuple in the form DataFile.partition holds (as `entry` converts it)."""
        if not self.converts:
            return raw
        return tuple(v if t is None else from_avro_value(t, v) for (_, t), v in zip(self.part_fields, raw))

    def _null(self, fid: int, label: str):
        raise ManifestError("required field is null", self.location, f"{fid} {label}")

    def entry(self, r: dict, manifest_file: ManifestFile | None, column_stats: bool) -> ManifestEntry:
        f = r.get(self.data_file)
        if f is None:
            self._null(2, "data_file")
        raw_part = f.get(self.partition)
        if raw_part is None:
            self._null(102, "partition")
        values = {}
        for name, fid, label, attr, required, kind in (self.file_fields if column_stats else self.file_fields_partial):
            value = f.get(name)
            if value is None:
                if required:
                    self._null(fid, label)
                continue
            values[attr] = map_in(value) if kind == "map" else tuple(value) if kind == "tuple" else value
        check_int(values["record_count"], "103 record_count", self.location)
        content = 0 if self.content is None else f.get(self.content)
        data_file = DataFile(
            content=_CONTENT[0 if content is None else content],
            partition=tuple(raw_part.get(name) if t is None else from_avro_value(t, raw_part.get(name))
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
    t = branch(avro_type)
    return isinstance(t, dict) and t.get("logicalType") not in _PLAIN_LOGICAL


def read_manifest_list(data: bytes, location: str = "<manifest list>") -> list[ManifestFile]:
    """Entries of a manifest list. v1 lists (no sequence numbers) read as sequence number
    0 and content DATA; an unassigned sequence number inherits the list's own."""
    container = _open(data, location)
    records = _decode(data, container, location)
    try:
        rec = FieldIds(container.schema, location, "manifest_file")
        summary_rec = None
        if rec.has(507):  # resolved once per list, not per record
            summary_rec = FieldIds(branch(rec.field(507, "partitions")["type"])["items"], location,
                                  "field_summary")
    except DECODE_ERRORS as e:  # a malformed schema
        raise ManifestError(f"not a readable manifest list schema ({type(e).__name__}: {e})", location) from None
    own_seq = container.metadata.get("sequence-number")
    v1 = not rec.has(515)
    out: list[ManifestFile] = []
    try:
        for r in records:
            out.append(_read_manifest_file(r, rec, own_seq, v1, location, summary_rec))
    except ManifestError:
        raise
    except (ValueError, TypeError, KeyError, AttributeError, OverflowError) as e:
        # malformed values (wrong Avro types from a foreign writer, unknown enum codes)
        raise ManifestError(f"record {len(out)}: {type(e).__name__}: {e}", location) from None
    return out


def _read_manifest_file(r: dict, rec: FieldIds, own_seq: str | None, v1: bool,
                        location: str, summary_rec: "FieldIds | None" = None) -> ManifestFile:
    seq = rec.get(r, 515, "sequence_number", False)
    if seq is None or seq == -1:
        seq = 0 if v1 else _int(own_seq, location)
    min_seq = rec.get(r, 516, "min_sequence_number", False)
    if min_seq is None or min_seq == -1:
        min_seq = seq
    summaries = rec.get(r, 507, "partitions", False)
    if summaries is not None:
        s = summary_rec
        summaries = tuple(FieldSummary(
            contains_null=s.get(x, 509, "contains_null"),
            contains_nan=s.get(x, 518, "contains_nan", False),
            lower_bound=s.get(x, 510, "lower_bound", False),
            upper_bound=s.get(x, 511, "upper_bound", False)) for x in summaries)
    out = ManifestFile(
        manifest_path=rec.get(r, 500, "manifest_path"),
        manifest_length=rec.get(r, 501, "manifest_length"),
        partition_spec_id=rec.get(r, 502, "partition_spec_id"),
        content=ManifestContent(rec.get(r, 517, "content", False, 0)),
        sequence_number=seq, min_sequence_number=min_seq,
        added_snapshot_id=rec.get(r, 503, "added_snapshot_id"),
        # required in v2 (optional in v1): without them nothing read could be checked
        added_files_count=rec.get(r, 504, "added_files_count", not v1),
        existing_files_count=rec.get(r, 505, "existing_files_count", not v1),
        deleted_files_count=rec.get(r, 506, "deleted_files_count", not v1),
        added_rows_count=rec.get(r, 512, "added_rows_count", not v1),
        existing_rows_count=rec.get(r, 513, "existing_rows_count", not v1),
        deleted_rows_count=rec.get(r, 514, "deleted_rows_count", not v1),
        partitions=summaries,
        key_metadata=rec.get(r, 519, "key_metadata", False),
        first_row_id=rec.get(r, 520, "first_row_id", False))
    for name in _LIST_INTS:
        check_int(getattr(out, name), name, location)
    return out


_LIST_INTS = ("manifest_length", "partition_spec_id", "sequence_number", "min_sequence_number",
              "added_snapshot_id", "added_files_count", "existing_files_count", "deleted_files_count",
              "added_rows_count", "existing_rows_count", "deleted_rows_count")


def _int(text: str | None, location: str) -> int:
    try:
        return int(text)
    except (TypeError, ValueError):
        raise ManifestError("unassigned sequence number and no sequence-number metadata",
                            location, "515 sequence_number") from None