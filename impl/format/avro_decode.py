"""A projecting Avro decoder for manifests (Avro spec "Binary Encoding"; Iceberg spec
"Scan Planning"). avro_container.py reads the file around the values.

Planning a scan needs few of a manifest entry's fields: with no column referenced by
the filter, none of the column statistics maps. fastavro builds every value, and its
schema resolution (a reader schema that leaves fields out) resolves the schemas again
for every value, which costs more than it saves (measured by `make bench`, scan). This
decoder is compiled once per writer schema into one function per type; fields named in
`skip` are stepped over without building values (runs of int/long varints by one regex
match). Values are read raw: logical types are not applied (an Iceberg timestamp may lie
outside the years a datetime holds; manifest_reader converts what it needs), a fixed is
bytes, an enum its symbol. Decoding every field costs about what fastavro's reader does.
Malformed input raises ValueError (or IndexError, struct.error); the caller turns
those into its typed error.
"""
from __future__ import annotations

import re
import struct
from typing import Any, Callable

from icefloe.impl.format import avro_shapes

__all__ = ["compile_reader", "read_long", "Reader", "SCHEMA_DEPTH_MAX"]

SCHEMA_DEPTH_MAX = 64      # nesting bound: a recursive schema is refused
Reader = Callable[[bytes, int], tuple[Any, int]]

_DOUBLE = struct.Struct("<d").unpack_from
_FLOAT = struct.Struct("<f").unpack_from
_VARINT_RUNS: dict[int, re.Pattern] = {}


def _varint_run(count: int) -> re.Pattern:
    """A pattern matching `count` consecutive varints (each 1 to 10 bytes)."""
    pattern = _VARINT_RUNS.get(count)
    if pattern is None:
        pattern = re.compile(rb"(?:[\x80-\xff]{0,9}[\x00-\x7f]){%d}" % count, re.S)
        if len(_VARINT_RUNS) < 256:
            _VARINT_RUNS[count] = pattern
    return pattern


def read_long(buf: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint (int and long alike)."""
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos
    n, shift = b & 0x7F, 7
    while True:
        b = buf[pos]
        pos += 1
        n |= (b & 0x7F) << shift
        if b < 0x80:
            return (n >> 1) ^ -(n & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def _length(buf: bytes, pos: int) -> tuple[int, int]:
    n, pos = read_long(buf, pos)
    if n < 0 or pos + n > len(buf):
        raise ValueError(f"length {n} outside the data")
    return pos + n, pos


def _bytes(buf, pos):
    end, pos = _length(buf, pos)
    return buf[pos:end], end


def _string(buf, pos):
    end, pos = _length(buf, pos)
    return buf[pos:end].decode("utf-8"), end


def _skip_bytes(buf, pos):
    n = buf[pos]
    if n < 0x80:  # lengths up to 63 (one byte) and up to 8191 (two: file paths) inline
        pos += 1
    elif buf[pos + 1] < 0x80:
        n = (n & 0x7F) | (buf[pos + 1] << 7)
        pos += 2
    else:
        return None, _length(buf, pos)[0]
    if n & 1 or pos + (n >> 1) > len(buf):
        raise ValueError(f"length {(n >> 1) ^ -(n & 1)} outside the data")
    return None, pos + (n >> 1)


def _null(buf, pos):
    return None, pos


def _boolean(buf, pos):
    b = buf[pos]
    if b > 1:
        raise ValueError(f"boolean byte {b}")
    return b == 1, pos + 1


def _double(buf, pos):
    return _DOUBLE(buf, pos)[0], pos + 8


def _float(buf, pos):
    return _FLOAT(buf, pos)[0], pos + 4


def _skip_varint(buf, pos):
    start = pos
    while buf[pos] >= 0x80:
        pos += 1
        if pos - start > 9:
            raise ValueError("varint longer than 10 bytes")
    return None, pos + 1


def _skip_varints(buf: bytes, pos: int, count: int) -> int:
    match = _varint_run(count).match(buf, pos)
    if match is None:
        raise ValueError("truncated varints")
    return match.end()


_READ = {"null": _null, "boolean": _boolean, "int": read_long, "long": read_long, "float": _float,
         "double": _double, "bytes": _bytes, "string": _string}
_SKIP = {"null": _null, "boolean": _boolean, "int": _skip_varint, "long": _skip_varint, "float": _float,
         "double": _double, "bytes": _skip_bytes, "string": _skip_bytes}


def _varint_count(t: Any, depth: int = 0) -> int | None:
    """How many varints (and nothing else) a value of `t` is, if that is fixed."""
    if depth > SCHEMA_DEPTH_MAX:
        raise ValueError("schema nested too deeply (recursive?)")
    if t in ("int", "long"):
        return 1
    if isinstance(t, dict):
        kind = t.get("type")
        if isinstance(kind, (dict, list)) or kind in ("int", "long"):
            return _varint_count(kind, depth + 1)
        if kind == "record":
            counts = [_varint_count(f.get("type"), depth + 1) for f in t.get("fields", [])]
            return sum(counts) if counts and None not in counts else None
    return None


def _flat_ops(t: Any, depth: int = 0) -> str | None:
    """A value of `t` as a fixed sequence of varints ("v") and length-prefixed bytes
    ("b"), if it is one: stepped over in one loop instead of one call per field."""
    if depth > SCHEMA_DEPTH_MAX:
        raise ValueError("schema nested too deeply (recursive?)")
    if t in ("int", "long"):
        return "v"
    if t in ("bytes", "string"):
        return "b"
    if isinstance(t, dict):
        kind = t.get("type")
        if isinstance(kind, (dict, list)) or kind in ("int", "long", "bytes", "string"):
            return _flat_ops(kind, depth + 1)
        if kind == "record":
            ops = [_flat_ops(f.get("type"), depth + 1) for f in t.get("fields", [])]
            return "".join(ops) if ops and None not in ops else None
    return None


def _skip_ops(buf: bytes, pos: int, ops: str, times: int) -> int:
    end = len(buf)
    for _ in range(times):
        for op in ops:
            start = pos
            while buf[pos] >= 0x80:
                pos += 1
            pos += 1
            if pos - start > 10:
                raise ValueError("varint longer than 10 bytes")
            if op == "b":
                n, _ = read_long(buf, start)
                if n < 0 or pos + n > end:
                    raise ValueError(f"length {n} outside the data")
                pos += n
    return pos


def compile_reader(schema: Any, skip: Callable[[dict], bool] = lambda field: False, *,
                   skipping: bool = False, depth: int = 0) -> Reader:
    """A reader of values of `schema` (named references already expanded). A record
    field for which `skip(field)` holds is stepped over and left out of the dict."""
    if depth > SCHEMA_DEPTH_MAX:
        raise ValueError("schema nested too deeply (recursive?)")
    table = _SKIP if skipping else _READ
    if isinstance(schema, str):
        if schema not in table:
            raise ValueError(f"unknown Avro type {schema!r}")
        return table[schema]
    if isinstance(schema, list):
        return _union([compile_reader(b, skip, skipping=skipping, depth=depth + 1) for b in schema])
    if not isinstance(schema, dict):
        raise ValueError(f"not an Avro schema: {schema!r}")
    kind = schema.get("type")
    if isinstance(kind, (dict, list)):
        return compile_reader(kind, skip, skipping=skipping, depth=depth + 1)
    if kind in ("record", "error"):
        return _record(schema, skip, skipping, depth)
    if kind == "array":
        return _blocks(schema.get("items"), skip, skipping, depth, keyed=False)
    if kind == "map":
        return _blocks(schema.get("values"), skip, skipping, depth, keyed=True)
    if kind == "fixed":
        return _fixed(schema["size"])
    if kind == "enum":
        return _enum(list(schema["symbols"]))
    return compile_reader(kind, skip, skipping=skipping, depth=depth + 1)


def _union(branches: list[Reader]) -> Reader:
    count = len(branches)
    if count == 2:
        first, second = branches

        def union2(buf, pos):
            b = buf[pos]
            if b == 0:
                return first(buf, pos + 1)
            if b == 2:
                return second(buf, pos + 1)
            raise ValueError(f"union branch byte {b} of 2 branches")
        return union2

    def union(buf, pos):
        i, pos = read_long(buf, pos)
        if not 0 <= i < count:
            raise ValueError(f"union branch {i} of {count}")
        return branches[i](buf, pos)
    return union


def _optional_array_shape(t: Any, depth: int) -> tuple[int, str] | None:
    """(branch number of the array, its items' flat ops) for an optional array of flat
    items, the shape of the column statistics maps (arrays of key/value records)."""
    if not (isinstance(t, list) and len(t) == 2 and "null" in t):
        return None
    branch = 1 - t.index("null")
    array = t[branch]
    if not (isinstance(array, dict) and array.get("type") == "array"):
        return None
    ops = _flat_ops(array.get("items"), depth + 1)
    return (branch, ops) if ops else None


def _skip_run(shapes: list[tuple[int, str]]) -> Reader:
    """One step over consecutive optional arrays of flat items (the statistics maps),
    instead of several calls per field."""
    shapes = [(branch * 2, ops, len(ops) if set(ops) == {"v"} else 0) for branch, ops in shapes]

    def skip_run(buf, pos):
        for array_byte, ops, varints in shapes:
            b = buf[pos]
            pos += 1
            if b != array_byte:
                if b == 2 - array_byte:  # the null branch
                    continue
                raise ValueError(f"union branch byte {b} of 2 branches")
            while True:
                n = buf[pos]
                if n < 0x80:
                    n, pos = (n >> 1) ^ -(n & 1), pos + 1
                else:
                    n, pos = read_long(buf, pos)
                if n == 0:
                    break
                if n < 0:
                    n = -n
                    size, pos = read_long(buf, pos)
                    if 0 <= size <= len(buf) - pos:
                        pos += size
                        continue
                if n > len(buf) - pos:
                    raise ValueError(f"block of {n} items exceeds the data")
                pos = _skip_varints(buf, pos, n * varints) if varints else _skip_ops(buf, pos, ops, n)
        return None, pos
    return skip_run


def _is_text(t: Any) -> bool:
    """A required string or bytes value (a file path): its length varies from value to
    value, so it is stepped over by itself rather than in a learned run. An optional one
    (key_metadata, referenced_data_file) is usually null or alike in one manifest."""
    if isinstance(t, dict) and isinstance(t.get("type"), str):
        t = t["type"]
    return t in ("string", "bytes")


def _unwrap_optional(t: Any) -> Any:
    if isinstance(t, list) and len(t) == 2 and "null" in t:
        return t[1 - t.index("null")]
    return t


def _learned_runs(steps: list[tuple]) -> list[tuple[str | None, Reader, bool]]:
    """Consecutive left-out steps (other than text fields) merged into one learned skipper
    (avro_shapes.py): one regular expression match per value instead of a call per field."""
    out: list[tuple[str | None, Reader, bool]] = []
    group: list[tuple] = []

    def flush():
        if len(group) > 1 or (group and _varint_count(_unwrap_optional(group[0][3][0])) != 1):
            fns = [fn for _, fn, _, _, _ in group]

            def fallback(buf, pos):
                for fn in fns:
                    pos = fn(buf, pos)[1]
                return None, pos
            out.append((None, avro_shapes.learned_skipper([t for g in group for t in g[3]], fallback), True))
        else:
            out.extend((name, fn, leave_out) for name, fn, leave_out, _, _ in group)
        group.clear()
    for step in steps:
        name, fn, leave_out, types, text = step
        if leave_out and not text:
            group.append(step)
            continue
        flush()
        out.append((name, fn, leave_out))
    flush()
    return out


def _record(schema: dict, skip, skipping: bool, depth: int) -> Reader:
    steps: list[tuple] = []  # (name, reader, left out, the types it steps over, a text field)
    run: list[tuple[int, str]] = []
    run_types: list[Any] = []
    for f in schema.get("fields", []):
        leave_out = skipping or skip(f)
        shape = _optional_array_shape(f.get("type"), depth) if leave_out else None
        if shape is not None:
            run.append(shape)
            run_types.append(f.get("type"))
            continue
        if run:
            steps.append((None, _skip_run(run), True, run_types, False))
            run, run_types = [], []
        steps.append((f["name"], compile_reader(f.get("type"), skip, skipping=leave_out, depth=depth + 1),
                      leave_out, [f.get("type")], _is_text(f.get("type"))))
    if run:
        steps.append((None, _skip_run(run), True, run_types, False))
    fields = _learned_runs(steps) if not skipping else [(name, fn, out) for name, fn, out, _, _ in steps]
    if skipping or (fields and all(out for _, _, out in fields)):
        steps = [fn for _, fn, _ in fields]

        def skip_record(buf, pos):
            for fn in steps:
                pos = fn(buf, pos)[1]
            return None, pos
        return skip_record
    if not any(out for _, _, out in fields):
        kept = [(name, fn) for name, fn, _ in fields]

        def record(buf, pos):
            out = {}
            for name, fn in kept:
                out[name], pos = fn(buf, pos)
            return out, pos
        return record

    def projected(buf, pos):
        out = {}
        for name, fn, leave_out in fields:
            value, pos = fn(buf, pos)
            if not leave_out:
                out[name] = value
        return out, pos
    return projected


def _blocks(item_schema: Any, skip, skipping: bool, depth: int, keyed: bool) -> Reader:
    item = compile_reader(item_schema, skip, skipping=skipping, depth=depth + 1)
    varints = _varint_count(item_schema, depth + 1) if skipping and not keyed else None
    ops = _flat_ops(item_schema, depth + 1) if skipping and not keyed and not varints else None

    def blocks(buf, pos):
        out = None if skipping else ({} if keyed else [])
        while True:
            n = buf[pos]
            if n < 0x80:  # the usual one-byte count
                n, pos = (n >> 1) ^ -(n & 1), pos + 1
            else:
                n, pos = read_long(buf, pos)
            if n == 0:
                return out, pos
            if n < 0:  # a block with its byte size: skippable in one step
                n = -n
                size, pos = read_long(buf, pos)
                if skipping and 0 <= size <= len(buf) - pos:
                    pos += size
                    continue
            if n > len(buf) - pos:
                raise ValueError(f"block of {n} items exceeds the data")
            if varints:
                pos = _skip_varints(buf, pos, n * varints)
            elif ops:
                pos = _skip_ops(buf, pos, ops, n)
            elif keyed:
                for _ in range(n):
                    end, pos = _length(buf, pos)
                    key = buf[pos:end].decode("utf-8")
                    value, pos = item(buf, end)
                    if out is not None:
                        out[key] = value
            elif out is None:
                for _ in range(n):
                    pos = item(buf, pos)[1]
            else:
                for _ in range(n):
                    value, pos = item(buf, pos)
                    out.append(value)
    return blocks


def _fixed(size: int) -> Reader:
    if not isinstance(size, int) or size < 0:
        raise ValueError(f"fixed size {size!r}")

    def fixed(buf, pos):
        end = pos + size
        if end > len(buf):
            raise ValueError("fixed value past the end of the data")
        return buf[pos:end], end
    return fixed


def _enum(symbols: list[str]) -> Reader:
    def enum(buf, pos):
        i, pos = read_long(buf, pos)
        if not 0 <= i < len(symbols):
            raise ValueError(f"enum index {i} of {len(symbols)}")
        return symbols[i], pos
    return enum
