"""Deletion vectors in the native read (Iceberg spec "Deletion Vectors", "Scan Planning";
spec/PROTOCOL.md 10 "Readers"): which planned data file has a live DV, and its deleted
positions as (file number, row position) pairs for the row-index anti-join of
native_read.py.

- A DV applies to a data file by impl/table/deletes.py's `deletion_vector_applies` (the
  data file it references, its sequence number >= the file's), as icefloe's scan attaches
  it (scan.attach_deletes): two that apply to one file are a corrupt table. Where one
  applies, the position delete files the planner attached to that file are dropped: the
  DV holds every position they held (spec "Deletion Vectors"), and scan ignores them too.
- The positions are read on the driver by `DeleteReader.dv_positions` (the one Puffin
  reader, impl/format/puffin.py), never parsed a second way; more than
  DRIVER_DV_POSITIONS_MAX of them is NotNative, so `read()` falls back to the Python data
  source, which applies each DV per file inside scan.read_task.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.impl.format.integrity import CorruptMetadata
from icefloe.impl.io.locations import comparable_location
from icefloe.impl.table.deletes import DeleteReader, deletion_vector_applies
from icefloe.impl.spark.transforms_sql import NotNative

DV_COLUMN = "deletion_vector"  # plan column: index into the plan's delete refs of the DV that applies, or null
DRIVER_DV_POSITIONS_MAX = 32_000_000  # DV positions decoded on the driver for one read (12 bytes each); more: NotNative
BITSET_WORDS_MAX = 1 << 18  # bigints of the bitset literal of one read (16.7 M rows of files with deletes; 10 M rows: 1.4 s, anti-joined 4.3 s); more: a join


class _Path:
    """What deletion_vector_applies reads of a data file: its path."""
    __slots__ = ("file_path",)

    def __init__(self, file_path: str):
        self.file_path = file_path


def _basename(location: str) -> str:
    return location.rsplit("/", 1)[-1]


def attach(plan: pa.Table, deletes: list) -> pa.Table:
    """`plan` (planning.PLAN_SCHEMA) with a DV_COLUMN, and the DVs taken out of its
    position_deletes lists (emptied where a DV applies). Only the files whose name is the
    name of a file some DV references are looked at one by one: equal locations end in
    equal names (comparable_location never rewrites a path's last segment)."""
    if DV_COLUMN in plan.column_names:
        return plan
    dvs: dict[str, list[int]] = {}
    for i, (_, _, d, _) in enumerate(deletes):
        if d.is_deletion_vector:
            dvs.setdefault(comparable_location(d.referenced_data_file or ""), []).append(i)
    found = [None] * plan.num_rows
    if not dvs:
        return plan.append_column(DV_COLUMN, pa.array(found, pa.int32()))
    names = pc.replace_substring_regex(plan.column("file_path"), pattern="^.*/", replacement="")
    candidates = pc.is_in(names, value_set=pa.array(sorted({_basename(p) for p in dvs}), pa.string()))
    rows = np.flatnonzero(candidates.to_numpy(zero_copy_only=False))
    paths = plan.column("file_path").take(rows).to_pylist()
    sequence_numbers = plan.column("data_sequence_number").take(rows).to_pylist()
    for k, path, seq in zip(rows.tolist(), paths, sequence_numbers):
        data = _Path(path)
        applying = [i for i in dvs.get(comparable_location(path), ())
                    if deletion_vector_applies(deletes[i][0], deletes[i][2], seq, data)]
        if len(applying) > 1:
            raise CorruptMetadata(path, f"{len(applying)} live deletion vectors apply to this data file; "
                                  "the spec allows one")
        found[k] = applying[0] if applying else None
    positions = plan.column("position_deletes").to_pylist()
    for k, listed in enumerate(positions):
        if listed:
            kept = [] if found[k] is not None else [i for i in listed if not deletes[i][2].is_deletion_vector]
            positions[k] = kept or None
    i = plan.schema.get_field_index("position_deletes")
    plan = plan.set_column(i, plan.schema.field(i), pa.array(positions, plan.schema.field(i).type))
    return plan.append_column(DV_COLUMN, pa.array(found, pa.int32()))


def positions_count(deletes: list, dv_list: list) -> int:
    """The deleted positions the DVs of `dv_list` (DV_COLUMN values) hold, by their entries."""
    return sum(deletes[i][2].record_count for i in dv_list if i is not None)


def read_positions(reader: DeleteReader, deletes: list, dv_list: list) -> dict[int, np.ndarray]:
    """k -> the positions (int64) the DV of the k-th planned file deletes, for each file
    with a DV. Read once here, on the driver."""
    if positions_count(deletes, dv_list) > DRIVER_DV_POSITIONS_MAX:
        raise NotNative(f"the deletion vectors hold more than {DRIVER_DV_POSITIONS_MAX} positions "
                        "(DRIVER_DV_POSITIONS_MAX) to read on the driver; read with format('icefloe')")
    return {k: reader.dv_positions(deletes[i][2]).astype(np.int64, copy=False)
            for k, i in enumerate(dv_list) if i is not None}


def numbered(positions: dict[int, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(file numbers int32, positions int64) pairs of {k: positions}, for an anti-join."""
    if not positions:
        return np.empty(0, np.int32), np.empty(0, np.int64)
    return (np.concatenate([np.full(len(p), k, dtype=np.int32) for k, p in positions.items()]),
            np.concatenate(list(positions.values())))


def bitset_words(rows: int) -> int:
    return -(-rows // 64)


def bitset_literal(positions: dict[int, np.ndarray], rows: list[int], spark=None):
    """The deleted positions of several files as one bitset (one bigint per 64 rows of each
    file, the files' words one after another), a Spark Column, and each file's first word
    in it: {k: positions} of files of `rows[k]` rows. Positions past a file's rows are
    ignored (as DeleteReader.apply ignores them)."""
    offsets, chunks, at = {}, [], 0
    for k, found in sorted(positions.items()):
        bits = np.zeros(64 * bitset_words(rows[k]), dtype=bool)  # (packbits: ~40% under bitwise_or.at)
        bits[found[(found >= 0) & (found < rows[k])]] = True
        words = np.packbits(bits, bitorder="little").view("<i8").astype(np.int64, copy=False)
        offsets[k], at = at, at + len(words)
        chunks.append(words)
    words = np.concatenate(chunks) if chunks else np.empty(0, np.int64)
    packed = _packed_literal(spark, words) if spark is not None else None
    return (_folded_literal(words) if packed is None else packed), offsets


def _folded_literal(words: np.ndarray):
    """`words` as one string literal split and cast, which Spark's optimizer folds into an
    array literal of boxed longs (an array() of a literal per word costs py4j a call per
    word, and the literal spelled in SQL costs Spark's parser ~2 us a character)."""
    from pyspark.sql import functions as F
    return F.split(F.lit(",".join(map(str, words.tolist()))), ",").cast("array<bigint>")


def _packed_literal(spark, words: np.ndarray):
    """`words` as an array<bigint> literal of Spark's own packed kind (UnsafeArrayData: one
    byte block), built in the JVM from their bytes (_packed_from_file; else a byte string
    through py4j) in ~8-12 py4j calls. The folded literal's
    boxed longs are serialized into the stage's tasks and read back per task, ~25 ms a
    million rows of files with deletes. None where this Spark lacks the classes used
    (then _folded_literal: the same values)."""
    from pyspark.sql.column import Column
    try:
        jvm, gateway = spark._jvm, spark.sparkContext._gateway
        packed = _packed_from_file(jvm, gateway, words)
        if packed is None:
            buffer = jvm.java.nio.ByteBuffer.wrap(bytearray(words.astype("<i8").tobytes()))
            packed = _unsafe_longs(jvm, gateway, buffer, len(words))
        types = jvm.org.apache.spark.sql.types.DataTypes
        literal = jvm.org.apache.spark.sql.catalyst.expressions.Literal(
            packed, types.createArrayType(types.LongType, False))
        return Column(jvm.org.apache.spark.sql.classic.ExpressionUtils.column(literal))
    except Exception:  # noqa: BLE001 (any py4j failure: the folded literal holds the same words)
        return None


def _packed_from_file(jvm, gateway, words: np.ndarray):
    """`words` as an UnsafeArrayData of longs, their bytes handed to the driver's JVM (on
    this machine) through a temporary file read there into a long[]: ~12 ms for 1.25 MB
    (10^7 rows of files with deletes), where py4j carries them as a byte string in ~24 ms
    (a byte[] returned to Python would be copied back). None on any failure (then that
    byte string)."""
    import os
    import tempfile
    nio = jvm.java.nio
    try:
        handle, where = tempfile.mkstemp(prefix="icefloe-bitset-", suffix=".bin")
    except OSError:
        return None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(words.astype("<i8").tobytes())
        buffer = nio.ByteBuffer.allocate(8 * len(words))
        source = jvm.java.io.RandomAccessFile(where, "r")
        try:
            channel = source.getChannel()
            while buffer.hasRemaining() and channel.read(buffer) >= 0:
                pass
        finally:
            source.close()
        if buffer.hasRemaining():
            return None
        buffer.flip()
        return _unsafe_longs(jvm, gateway, buffer, len(words))
    except Exception:  # noqa: BLE001 (any failure: the byte string through py4j, the same words)
        return None
    finally:
        os.unlink(where)


def _unsafe_longs(jvm, gateway, buffer, n: int):
    """The `n` little-endian longs of a JVM ByteBuffer as an UnsafeArrayData."""
    array = gateway.new_array(gateway.jvm.long, n)
    buffer.order(jvm.java.nio.ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(array)
    return jvm.org.apache.spark.sql.catalyst.expressions.UnsafeArrayData.fromPrimitiveArray(array)


def kept_by_bitset(row_index: str, bits, word: str, rows: str):
    """A Spark Column, true for a row whose row index (SQL `row_index`) is not among its
    file's deleted positions in `bits` (bitset_literal): its file's first word (0-based) is
    the row's column `word`, and the bitset covers the first `rows` rows of its file
    (columns that linked_files.py gives every row of a file alike). A file with `rows` 0
    keeps every row, and so does a row past its file's rows (a file longer than its entry
    says: the word it would read is the next file's), as DeleteReader.apply does."""
    from pyspark.sql import functions as F
    # `get` (0-based, null out of bounds) and a shift and a mask: cheaper per row than
    # try_element_at and bit_get, which check their arguments per row
    at = F.expr(f"if({row_index} < {rows}, {word} + cast(shiftright({row_index}, 6) as int), -1)")
    found = F.coalesce(F.call_function("get", bits, at), F.lit(0).cast("bigint"))
    bit = F.call_function("shiftright", found, F.expr(f"cast({row_index} & 63 as int)"))
    return bit.bitwiseAND(F.lit(1).cast("bigint")) == 0


ROW_INDEX_COLUMN = "_tmp_metadata_row_index"  # Spark's ParquetFileFormat.ROW_INDEX_TEMPORARY_COLUMN_NAME
_PROBED: dict[str, bool] = {}  # Spark application id -> did the probe pass


def internal_row_index(spark) -> bool:
    """Whether this Spark's Parquet reader fills a read-schema column named ROW_INDEX_COLUMN
    with each row's index in its file, as it fills `_metadata.row_index` (Spark 3.4+ reads
    that field through this internal column; the filter then reads a long, not a field of
    the `_metadata` struct Spark builds per row). Internal to Spark, so probed once per
    application (0.4 s warm, 1.7 s as the application's first Parquet read) on two files written here: one of 1,250,000 rows in 13 row groups
    (12.5 MB uncompressed: split in two tasks under Spark's default split sizing with two
    cores; a file under ~8 MB is not split there) and one of 7 rows after it; the column
    must hold 0..n-1 in each file, exactly. Any failure: False (`_metadata.row_index`)."""
    from pyspark.sql import types as ST
    key = spark.sparkContext.applicationId
    if key not in _PROBED:
        import shutil
        import tempfile
        import pyarrow.parquet as pq
        where = tempfile.mkdtemp(prefix="icefloe-row-index-")
        try:
            for name, n, group in (("a.parquet", 1_250_000, 100_000), ("b.parquet", 7, 3)):
                pq.write_table(pa.table({"x": np.arange(n, dtype=np.int64)}), f"{where}/{name}",
                               row_group_size=group, compression="none")
            schema = ST.StructType([ST.StructField("x", ST.LongType()), ST.StructField(ROW_INDEX_COLUMN, ST.LongType())])
            got = (spark.read.schema(schema).parquet(f"{where}/a.parquet", f"{where}/b.parquet")
                   .selectExpr("count(*)", f"count_if({ROW_INDEX_COLUMN} is null or {ROW_INDEX_COLUMN} != x)")
                   .collect()[0])
            _PROBED[key] = tuple(got) == (1_250_007, 0)
        except Exception:  # noqa: BLE001 (any failure: Spark's public `_metadata.row_index`)
            _PROBED[key] = False
        finally:
            shutil.rmtree(where, ignore_errors=True)
    return _PROBED[key]


def holds_row_index_column(paths: list[str], names) -> bool:
    """Whether a table column (`names`) or a top-level column of one of the Parquet files
    `paths` (local) is named ROW_INDEX_COLUMN (case-insensitively, as Spark matches names).
    Spark 4.3's vectorized reader then returns the file's column as `_metadata.row_index`
    too (it reads that field through this column), whether columns are matched by field id
    or by name, and refuses `_metadata.row_index` beside a table column of that name: the
    merge-on-read refuses such files (NotNative) rather than read another column as the
    row index (tests/spark/test_spark_mor_read.py). A footer read per file, on the driver's
    footer threads (footers.driver_pool)."""
    import pyarrow.parquet as pq
    from icefloe.impl.io.locations import local_path
    from icefloe.impl.spark.footers import driver_pool
    if any(n.lower() == ROW_INDEX_COLUMN for n in names):
        return True

    def holds(path: str) -> bool:
        return any(n.lower() == ROW_INDEX_COLUMN for n in pq.read_schema(local_path(path)).names)
    return any(list(driver_pool().map(holds, paths)))  # (every footer read before any() returns)
