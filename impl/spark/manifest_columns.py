"""Data manifests decoded straight into a plan's columns (Iceberg spec "Manifests",
"Scan Planning"; spec/PROTOCOL.md 10 "Readers"), for the native read's planner
(planning.py), on the driver or in Spark tasks.

manifest_reader.py builds a ManifestEntry and a DataFile per entry, through a decoder of
closures (a call and a dict per field): what the rest of impl needs. A plan needs few of
an entry's fields: status, data sequence number, content, path, size, record count and
partition, and with a filter the statistics of the columns the filter names. Here one
Python function per writer schema (and set of wanted statistics) is generated and
compiled: straight-line code that decodes a block's records into one tuple each,
stepping over every other field with avro_decode's skippers (runs of statistics maps in
one step), and keeping of the statistics maps only the columns the filter names. The
entries are then pruned as scan.plan_files prunes them (live, partition, column metrics:
the same evaluators, given the same statistics for the columns they look at) and the
survivors come out as lists, ready for Arrow.

The checks are manifest_reader's: fields resolved by field id (a required id missing
from the schema, or null, is a ManifestError naming the file), sequence numbers
inherited from the manifest list entry, the manifest's length and its entry counts
against the list entry (integrity.py). Tests hold its plans equal to scan.plan_files's.
"""
from __future__ import annotations

import json
import threading
from array import array
from dataclasses import dataclass
from typing import Any, Callable

from icefloe.impl.format import avro_container, avro_decode, avro_shapes, integrity
from icefloe.impl.format import expressions as E
from icefloe.impl.format import evaluators as EV
from icefloe.impl.format.avro_container import DECODE_ERRORS
from icefloe.impl.format.avro_decode import read_long
from icefloe.impl.format.avro_shapes import SHAPES_MAX
from icefloe.impl.format.field_ids import branch, from_avro_value, map_in
from icefloe.impl.format.manifest import ManifestError, ManifestFile
from icefloe.impl.format.manifest_reader import entry_records

__all__ = ["ManifestColumns", "decode_manifest", "referenced_field_ids", "STATS_IDS"]

LIVE = (0, 1)  # EXISTING, ADDED
ADDED = 1
STATUSES = (0, 1, 2)
CONTENTS = (0, 1, 2)
# The statistics maps metrics_might_match reads (column_sizes it does not)
STATS_IDS = (109, 110, 137, 125, 128)  # value, null, NaN counts; lower, upper bounds
COMPILED_MAX = 64  # a bound on the cache of compiled decoders (one per writer schema and filter columns)
_SIMPLE = {"int": "varint", "long": "varint", "string": "string", "bytes": "bytes"}


class _Stats:
    """What metrics_might_match reads of a DataFile, for the columns a filter names."""
    __slots__ = ("record_count", "value_counts", "null_value_counts", "nan_value_counts", "lower_bounds",
                 "upper_bounds")

    def __init__(self, record_count, value_counts, null_value_counts, nan_value_counts, lower_bounds,
                 upper_bounds):
        self.record_count, self.value_counts, self.null_value_counts = record_count, value_counts, null_value_counts
        self.nan_value_counts, self.lower_bounds, self.upper_bounds = nan_value_counts, lower_bounds, upper_bounds


def referenced_field_ids(expr: E.Expression) -> frozenset[int]:
    """The field ids a bound expression's predicates name."""
    out, stack = set(), [expr]
    while stack:  # bounded by the expression's size
        e = stack.pop()
        if isinstance(e, E.BoundPredicate):
            out.add(e.field.field_id)
        elif isinstance(e, (E.And, E.Or)):
            stack.extend((e.left, e.right))
        elif isinstance(e, E.Not):
            stack.append(e.child)
    return frozenset(out)


# -- the generated decoder ----------------------------------------------------------------

class _Source:
    """Python source being generated, and the objects it refers to by name."""

    def __init__(self):
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"read_long": read_long, "ValueError": ValueError}
        self.count = 0

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def bind(self, prefix: str, value: Any) -> str:
        name = self.fresh(prefix)
        self.names[name] = value
        return name

    def line(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)


def _kind(t: Any) -> str | None:
    """'varint', 'string' or 'bytes' for a plain Avro int/long/string/bytes (logical types
    are read raw, as avro_decode reads them), else None."""
    if isinstance(t, str):
        return _SIMPLE.get(t)
    if isinstance(t, dict) and isinstance(t.get("type"), str):
        return _SIMPLE.get(t["type"])
    return None


def _null_union(t: Any) -> tuple[int, int, Any] | None:
    """(byte of the null branch, byte of the other, the other) for a [null, X] union."""
    if isinstance(t, list) and len(t) == 2 and "null" in t:
        i = t.index("null")
        return 2 * i, 2 * (1 - i), t[1 - i]
    return None


def _varint(src: _Source, d: int, target: str) -> None:
    """A zig-zag varint: one and two bytes inline (counts, sizes, sequence numbers), longer
    ones by avro_decode.read_long."""
    src.line(d, "b = buf[p]")
    src.line(d, "if b < 128:")
    src.line(d + 1, f"{target} = (b >> 1) ^ -(b & 1)")
    src.line(d + 1, "p += 1")
    src.line(d, "elif buf[p + 1] < 128:")
    src.line(d + 1, "b = (b & 127) | (buf[p + 1] << 7)")
    src.line(d + 1, f"{target} = (b >> 1) ^ -(b & 1)")
    src.line(d + 1, "p += 2")
    src.line(d, "else:")
    src.line(d + 1, f"{target}, p = read_long(buf, p)")


def _simple(src: _Source, d: int, kind: str, target: str) -> None:
    if kind == "varint":
        _varint(src, d, target)
        return
    _varint(src, d, "n")
    src.line(d, "e = p + n")
    src.line(d, "if n < 0 or e > size:")
    src.line(d + 1, "raise ValueError('a length outside the data')")
    src.line(d, f"{target} = buf[p:e]" + (".decode('utf-8')" if kind == "string" else ""))
    src.line(d, "p = e")


def _skip_simple(src: _Source, d: int, kind: str) -> None:
    if kind != "varint":
        _simple(src, d, "varint", "n")
        src.line(d, "p += n")
        src.line(d, "if n < 0 or p > size:")
        src.line(d + 1, "raise ValueError('a length outside the data')")
        return
    src.line(d, "e = p + 10")
    src.line(d, "while buf[p] >= 128:")
    src.line(d + 1, "p += 1")
    src.line(d, "p += 1")
    src.line(d, "if p > e:")
    src.line(d + 1, "raise ValueError('a varint longer than 10 bytes')")


def _union_open(src: _Source, d: int, null_byte: int, other_byte: int, on_null: str, then: bool = True) -> None:
    """A [null, X] union's branch byte: `on_null` for null, an error for a byte of neither
    branch, then (with `then`) an `else:` whose block the caller writes at depth d + 1."""
    src.line(d, "b = buf[p]")
    src.line(d, "p += 1")
    src.line(d, f"if b == {null_byte}:")
    src.line(d + 1, on_null)
    src.line(d, f"elif b != {other_byte}:")
    src.line(d + 1, "raise ValueError('a union branch byte out of range')")
    if then:
        src.line(d, "else:")


def _value(src: _Source, d: int, t: Any, target: str) -> None:
    """Decode a value of `t` into `target` (raw, as avro_decode reads it)."""
    kind = _kind(t)
    if kind is not None:
        _simple(src, d, kind, target)
        return
    union = _null_union(t)
    if union is not None and _kind(union[2]) is not None:
        _union_open(src, d, union[0], union[1], f"{target} = None")
        _simple(src, d + 1, _kind(union[2]), target)
        return
    reader = src.bind("rd", avro_decode.compile_reader(t))
    src.line(d, f"{target}, p = {reader}(buf, p)")


def _skip(src: _Source, d: int, fields: list[dict]) -> None:
    """Step over a run of fields: a few plain values inline; anything else (the statistics
    maps) by a pattern learned from the records (_ShapeSkipper)."""
    if not fields:
        return
    if all(_kind(f.get("type")) or (_null_union(f.get("type")) and _kind(_null_union(f.get("type"))[2]))
           for f in fields):  # a few plain values: inline, cheaper than a call
        for f in fields:
            union = _null_union(f.get("type"))
            if union is None:
                _skip_simple(src, d, _kind(f.get("type")))
                continue
            src.line(d, "b = buf[p]")
            src.line(d, "p += 1")
            src.line(d, f"if b == {union[1]}:")
            _skip_simple(src, d + 1, _kind(union[2]))
            src.line(d, f"elif b != {union[0]}:")
            src.line(d + 1, "raise ValueError('a union branch byte out of range')")
        return
    record = {"type": "record", "name": "skipped", "fields": fields}
    skip = src.bind("sk", _ShapeSkipper(record))
    src.line(d, f"p = {skip}(buf, p)")


# Runs of fields are stepped over by regular expressions learned from the records
# themselves (impl/format/avro_shapes.py, whose walker writes a record's shape down as a
# pattern). The first record of a shape (which union branches, how many items in each
# block) is stepped over by avro_decode's skipper, and its shape learned, kept only if the
# pattern ends where the skipper ended on that record. A match on a later record is that
# record's one parse: the C regex engine steps over it, no Python per item. Records of
# other shapes take the skipper (up to SHAPES_MAX shapes learned per run, so a manifest of
# mixed shapes never compiles per record). Not avro_shapes.learned_skipper itself: this
# one is called once per record on the planner's hot path and returns a bare position.


class _ShapeSkipper:
    """Steps over one run of fields (see above); `skip(buf, p)` -> the position after it."""

    def __init__(self, record: dict):
        self.record = record
        self.skipper = avro_decode.compile_reader(record, skipping=True)
        self.patterns: list = []
        self.learned = 0
        self.lock = threading.Lock()

    def __call__(self, buf: bytes, p: int) -> int:
        for match in self.patterns:
            m = match(buf, p)
            if m is not None:
                return m.end()
        end = self.skipper(buf, p)[1]
        if self.learned < SHAPES_MAX:
            self._learn(buf, p, end)
        return end

    def _learn(self, buf: bytes, p: int, end: int) -> None:
        match = avro_shapes.learned_match(self.record, buf, p, end)  # None: not learnable, counted all the same
        with self.lock:
            if self.learned >= SHAPES_MAX:
                return
            self.learned += 1
            if match is not None:
                self.patterns = self.patterns + [match]


def _stats_map(src: _Source, d: int, t: Any, wanted: frozenset[int], target: str) -> None:
    """Decode an optional array of {key: int, value: long|bytes} records (a statistics map)
    into `target`: a dict of the `wanted` keys only, or None."""
    union = _null_union(t)
    array = union[2] if union else None
    item = array.get("items") if isinstance(array, dict) and array.get("type") == "array" else None
    fields = item.get("fields") if isinstance(item, dict) and item.get("type") == "record" else None
    kinds = [(f.get("name"), _kind(f.get("type"))) for f in fields or ()]
    if not (len(kinds) == 2 and {n for n, _ in kinds} == {"key", "value"} and dict(kinds)["key"] == "varint"
            and dict(kinds)["value"] in ("varint", "bytes")):
        reader = src.bind("rd", avro_decode.compile_reader(t))
        keep = src.bind("keep", wanted)
        src.line(d, f"{target}, p = {reader}(buf, p)")
        src.line(d, f"{target} = None if {target} is None else "
                    f"{{k: v for k, v in map_in({target}).items() if k in {keep}}}")
        src.names["map_in"] = map_in
        return
    keep = src.bind("keep", wanted)
    _union_open(src, d, union[0], union[1], f"{target} = None")
    d += 1
    src.line(d, f"{target} = {{}}")
    src.line(d, "while True:")
    _varint(src, d + 1, "c")
    src.line(d + 1, "if c == 0:")
    src.line(d + 2, "break")
    src.line(d + 1, "if c < 0:")
    src.line(d + 2, "c = -c")
    _varint(src, d + 2, "n")
    src.line(d + 1, "if c > size - p:")
    src.line(d + 2, "raise ValueError('a block of more items than bytes')")
    src.line(d + 1, "for _ in range(c):")
    for name, kind in kinds:
        _simple(src, d + 2, kind, "k" if name == "key" else "v")
    src.line(d + 2, f"if k in {keep}:")
    src.line(d + 3, f"{target}[k] = v")


@dataclass
class _Layout:
    """Where the fields a plan needs sit in one writer schema (by field id), and what the
    post-processing must still convert or check."""
    partition_conversions: list  # per partition field: its Avro type when from_avro_value applies, else None
    record_count_checked: bool   # record_count decoded as a varint (an int by construction)
    path_bytes: bool             # file_path decoded as its UTF-8 bytes (else as the reader's str)
    stats: tuple[int, ...] = ()  # the statistics maps decoded, in tuple order after the fixed fields


def _record(src: _Source, d: int, schema: Any, actions: dict[str, Callable[[int, Any], None]],
            required: str, label: str) -> None:
    """Inline a record's fields: `actions[name](depth, type)` for the wanted ones, runs of
    the others stepped over at once."""
    union = _null_union(schema)
    if union is not None:
        _union_open(src, d, union[0], union[1], f"raise MissingField({required!r}, {label!r})", then=False)
        schema = union[2]
    skipped: list[dict] = []
    for f in schema["fields"]:
        action = actions.get(f["name"])
        if action is None:
            skipped.append(f)
            continue
        _skip(src, d, skipped)
        skipped = []
        action(d, f.get("type"))
    _skip(src, d, skipped)


class MissingField(Exception):
    """A required field's value is null (turned into ManifestError naming the file)."""

    def __init__(self, field_id: str, label: str):
        super().__init__(field_id, label)
        self.field_id, self.label = field_id, label


def _compile(schema: Any, stats_ids: frozenset[int], location: str) -> tuple[Callable, _Layout]:
    """The block decoder of one manifest_entry writer schema: `read(buf, p, count, out)`
    appends (status, sequence number, content, file path, record count, file size,
    partition values, statistics maps...) per record and returns the end position."""
    entry, file_, part = entry_records(schema, location)
    part_fields = list(part.fields.values())
    entry.field(0, "status")
    for fid, label in ((100, "file_path"), (101, "file_format"), (103, "record_count"),
                       (104, "file_size_in_bytes")):
        file_.field(fid, label)
    src = _Source()
    src.names["MissingField"] = MissingField

    def required_value(var: str, fid: int, label: str):
        def act(d: int, t: Any) -> None:
            if var == "fp" and _kind(t) == "string":  # kept as UTF-8 bytes: checked per manifest, Arrow's form
                t = "bytes"
            _value(src, d, t, var)
            if _null_union(t) is not None or _kind(t) is None:
                src.line(d, f"if {var} is None:")
                src.line(d + 1, f"raise MissingField({str(fid)!r}, {label!r})")
        return act

    def optional_value(var: str):
        return lambda d, t: _value(src, d, t, var)

    def check_only(fid: int, label: str):  # file_format: not needed, but null is an error
        def act(d: int, t: Any) -> None:
            if _kind(t) is not None:
                _skip(src, d, [{"name": label, "type": t}])
            else:
                required_value("ff", fid, label)(d, t)
        return act

    stats = tuple(fid for fid in STATS_IDS if fid in file_.fields) if stats_ids else ()
    part_vars = [f"pv{i}" for i in range(len(part_fields))]
    part_actions = {f["name"]: optional_value(v) for f, v in zip(part_fields, part_vars)}
    file_actions = {file_.fields[100]["name"]: required_value("fp", 100, "file_path"),
                    file_.fields[101]["name"]: check_only(101, "file_format"),
                    file_.fields[103]["name"]: required_value("rc", 103, "record_count"),
                    file_.fields[104]["name"]: required_value("fs", 104, "file_size_in_bytes"),
                    file_.fields[102]["name"]: lambda d, t: _record(src, d, t, part_actions, "102", "partition")}
    if 134 in file_.fields:
        file_actions[file_.fields[134]["name"]] = optional_value("ct")
    for fid in stats:
        file_actions[file_.fields[fid]["name"]] = (lambda var: lambda d, t: _stats_map(src, d, t, stats_ids, var))(
            f"s{fid}")
    entry_actions = {entry.fields[0]["name"]: required_value("st", 0, "status"),
                     entry.fields[2]["name"]: lambda d, t: _record(src, d, t, file_actions, "2", "data_file")}
    if 3 in entry.fields:
        entry_actions[entry.fields[3]["name"]] = optional_value("sq")

    src.line(0, "def read(buf, p, count, out):")
    src.line(1, "size = len(buf)")
    src.line(1, "ct = sq = None")
    src.line(1, "for _ in range(count):")
    _record(src, 2, schema, entry_actions, "2", "manifest_entry")
    part_tuple = "(" + "".join(f"{v}, " for v in part_vars) + ")"
    stats_vars = "".join(f", s{fid}" for fid in stats)
    src.line(2, f"out((st, sq, ct, fp, rc, fs, {part_tuple}{stats_vars}))")
    src.line(1, "return p")
    namespace = dict(src.names)
    exec(compile("\n".join(src.lines), f"<manifest decoder {location}>", "exec"), namespace)  # noqa: S102
    conversions = [f["type"] if _needs_conversion(f["type"]) else None for f in part_fields]
    rc_type = file_.fields[103].get("type")
    return namespace["read"], _Layout(conversions, _kind(rc_type) == "varint",
                                      _kind(file_.fields[100].get("type")) == "string", stats)


def _needs_conversion(avro_type: Any) -> bool:
    t = branch(avro_type)
    return isinstance(t, dict) and t.get("logicalType") is not None


_compiled: dict[tuple[bytes, frozenset[int]], tuple[Callable, _Layout]] = {}
_compiled_lock = threading.Lock()


def _decoder(schema_text: bytes, stats_ids: frozenset[int], location: str) -> tuple[Callable, _Layout]:
    key = (schema_text, stats_ids)
    with _compiled_lock:
        found = _compiled.get(key)
    if found is None:
        try:
            schema = avro_container.expand_names(json.loads(schema_text))
            found = _compile(schema, stats_ids, location)
        except ManifestError:
            raise
        except DECODE_ERRORS + (json.JSONDecodeError, AttributeError) as e:
            raise ManifestError(f"not a readable manifest schema ({type(e).__name__}: {e})", location) from None
        with _compiled_lock:
            if len(_compiled) >= COMPILED_MAX:
                _compiled.pop(next(iter(_compiled)))
            _compiled[key] = found
    return found


def _records(data: bytes, stats_ids: frozenset[int], location: str) -> tuple[list[tuple], _Layout]:
    """Every record of a manifest as the generated decoder's tuples."""
    try:
        if data[:4] != avro_container.MAGIC:
            raise ValueError("not an Avro container file (bad magic)")
        meta, pos = avro_container._header_map(data, 4)
        sync = data[pos:pos + avro_container.SYNC_SIZE]
        if len(sync) != avro_container.SYNC_SIZE or "avro.schema" not in meta:
            raise ValueError("a header without its schema or sync marker")
        text = {k: v.decode("utf-8") for k, v in meta.items()}  # as open_container requires
        codec = text.get("avro.codec", "null") or "null"
        decompress = avro_container._decompressor(codec)
    except DECODE_ERRORS as e:
        raise ManifestError(f"not a readable Avro file ({type(e).__name__}: {e})", location) from None
    read, layout = _decoder(meta["avro.schema"], stats_ids, location)
    container = avro_container.Container(None, {}, sync, codec, pos + avro_container.SYNC_SIZE)
    out: list[tuple] = []
    try:
        for count, block, _ in avro_container._raw_blocks(data, container):
            block = decompress(block)
            if count > len(block):
                raise ValueError(f"block of {count} records in {len(block)} bytes")
            if read(block, 0, count, out.append) != len(block):
                raise ValueError("a block with bytes after its records")
    except MissingField as e:
        raise ManifestError("required field is null", location, f"{e.field_id} {e.label}") from None
    except DECODE_ERRORS as e:
        raise ManifestError(f"record {len(out)}: not readable ({type(e).__name__}: {e})", location) from None
    return out, layout


# -- one manifest's part of a plan ----------------------------------------------------------

class ManifestColumns:
    """The planned data files of some manifests, one item per file: paths as UTF-8 bytes
    and counts in machine arrays, so that Arrow takes them as buffers (no Python object
    per value on the way, and no pandas import: pyarrow's conversion of lists loads it)."""

    def __init__(self):
        self.file_path: list[bytes] = []
        self.file_size_in_bytes = array("q")
        self.record_count = array("q")
        self.data_sequence_number: list[int | None] = []
        self.spec_id = array("i")
        self.partition: list[tuple] = []

    def __len__(self) -> int:
        return len(self.file_path)

    def paths(self) -> list[str]:
        return [p.decode("utf-8") for p in self.file_path]


def decode_manifest(data: bytes, manifest: ManifestFile, partition_eval: EV.PartitionEvaluator | None,
                    metrics_expr: E.Expression | None, stats_ids: frozenset[int], out: ManifestColumns) -> None:
    """Append to `out` the live data files of one data manifest that may hold rows
    matching the filter: `partition_eval` and `metrics_expr` (bound, NOT rewritten; None
    for no filter), `stats_ids` the columns it names. As scan.plan_files: no statistics
    decoded without a filter; with one, those of the named columns only."""
    location = manifest.manifest_path
    integrity.check_manifest_length(manifest, len(data), location)
    records, layout = _records(data, stats_ids if metrics_expr is not None else frozenset(), location)
    files, rows = {0: 0, 1: 0, 2: 0}, {0: 0, 1: 0, 2: 0}
    inherited = manifest.sequence_number
    inherit_all = inherited == 0  # a v1 manifest: every entry inherits
    conversions = layout.partition_conversions if any(layout.partition_conversions) else None
    spec_id = manifest.partition_spec_id
    paths, sizes, counts = out.file_path, out.file_size_in_bytes, out.record_count
    seqs, specs, partitions = out.data_sequence_number, out.spec_id, out.partition
    for i, r in enumerate(records):
        status, seq, content, path, record_count, size, partition = r[:7]
        if status not in STATUSES or (content is not None and content not in CONTENTS):
            raise ManifestError(f"record {i}: status {status!r} or content {content!r} is not the spec's",
                                location)
        if not layout.record_count_checked and (not isinstance(record_count, int) or isinstance(record_count, bool)):
            raise ManifestError(f"{type(record_count).__name__} where the spec has an int", location,
                                "103 record_count")
        files[status] += 1
        rows[status] += record_count
        if status not in LIVE:
            continue
        if conversions is not None:
            partition = tuple(v if t is None else from_avro_value(t, v) for t, v in zip(conversions, partition))
        if metrics_expr is None:
            if record_count == 0:
                continue
        else:
            if not partition_eval.might_match(partition):
                continue
            maps = dict(zip(layout.stats, r[7:]))
            stats = _Stats(record_count, maps.get(109), maps.get(110), maps.get(137), maps.get(125), maps.get(128))
            if not EV.metrics_might_match(metrics_expr, stats):
                continue
        if seq is None and (status == ADDED or inherit_all):
            seq = inherited
        if not layout.path_bytes:
            path = path.encode("utf-8")
        paths.append(path)
        sizes.append(size)
        counts.append(record_count)
        seqs.append(seq)
        specs.append(spec_id)
        partitions.append(partition)
    integrity.check_manifest_counts(manifest, files, rows, location)
    _check_paths(records, layout, location)


def _check_paths(records: list[tuple], layout: _Layout, location: str) -> None:
    """Every entry's path is UTF-8, as manifest_reader requires when it decodes them: one
    decode of all of them, joined by a byte no UTF-8 sequence continues with."""
    if not layout.path_bytes:
        return
    try:
        b"\x00".join([r[3] for r in records]).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ManifestError(f"a file path is not UTF-8 ({e})", location) from None
