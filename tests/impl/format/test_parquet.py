"""Parquet data files (impl/format/parquet.py): footer metrics against pyarrow, field-id
projection on read, bound truncation, splitting rows by partition."""
from __future__ import annotations

import datetime as dt
import io
import math

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, strategies as st

from icefloe.impl.format import conversions, types as T
from icefloe.impl.format.parquet import (
    BOUND_TRUNCATE_LENGTH, DataFileError, read_data_file, truncate_lower, truncate_upper, write_data_file,
)
from icefloe.impl.format.partitioning import (
    DATA_FILES_MAX_DEFAULT, DATA_FILES_MAX_PROPERTY, TooManyFiles, data_files_max, partition_of_row,
    split_by_partition,
)
from icefloe.impl.format.transforms import parse_partition_spec

SCHEMA = T.Schema((
    T.NestedField(1, "id", T.LONG, True),
    T.NestedField(2, "n", T.INT, False),
    T.NestedField(3, "x", T.DOUBLE, False),
    T.NestedField(4, "s", T.STRING, False),
    T.NestedField(5, "d", T.DATE, False),
    T.NestedField(6, "ts", T.TIMESTAMPTZ, False),
    T.NestedField(7, "price", T.DecimalType(12, 2), False),
    T.NestedField(8, "b", T.BINARY, False),
    T.NestedField(9, "ok", T.BOOLEAN, False),
    T.NestedField(10, "f", T.FLOAT, False),
))
PRIMITIVE_IDS = range(1, 11)

texts = st.text(st.characters(codec="utf-8"), max_size=20) | st.sampled_from(
    ["", "a" * 17, "\U0010ffff" * 18, "z\U0010ffff" * 9, "\ud7ff" * 17])
rows = st.fixed_dictionaries({
    "id": st.integers(-(2**63), 2**63 - 1),
    # Not within a truncate width of the int minimum (its truncation leaves the int range;
    # test_split_reports_out_of_range_partition_values covers that case).
    "n": st.none() | st.integers(-(2**31) + 100, 2**31 - 1),
    "x": st.none() | st.floats(width=64),
    "s": st.none() | texts,
    "d": st.none() | st.dates(),
    "ts": st.none() | st.datetimes(timezones=st.just(dt.timezone.utc)),
    "price": st.none() | st.decimals(min_value=-10**9, max_value=10**9, places=2, allow_nan=False),
    "b": st.none() | st.binary(max_size=20) | st.just(b"\xff" * 17),
    "ok": st.none() | st.booleans(),
    "f": st.none() | st.floats(width=32),
})


def to_table(records: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(records, schema=T.schema_to_arrow(SCHEMA))


def expected_bounds(column: pa.ChunkedArray, t: T.IcebergType):
    """Lower/upper bound from the data itself, as the spec defines them (no NaN)."""
    if t in (T.FLOAT, T.DOUBLE):
        column = pc.filter(column, pc.invert(pc.is_nan(column)))
    column = column.drop_null()
    if len(column) == 0:
        return None, None
    mm = pc.min_max(column).as_py()
    lo, hi = mm["min"], mm["max"]
    if t == T.DATE:
        lo, hi = (lo - conversions.EPOCH_DATE).days, (hi - conversions.EPOCH_DATE).days
    if t == T.TIMESTAMPTZ:
        lo, hi = conversions.datetime_to_micros(lo), conversions.datetime_to_micros(hi)
    if t in (T.STRING, T.BINARY):
        lo, hi = truncate_lower(lo), truncate_upper(hi)
    return lo, hi


@given(st.lists(rows, min_size=1, max_size=25), st.integers(1, 25))
def test_metrics_equal_what_pyarrow_computes(records, row_group_rows):
    """Goal: footer-derived metrics equal counts and min/max computed by pyarrow compute.
    Method: Hypothesis rows over every primitive kind (NaN, nulls, long and maximal
    strings), written in random row-group sizes; compare every metric per column."""
    table = to_table(records)
    data, df = write_data_file(table, SCHEMA, "mem://f.parquet", row_group_rows_max=row_group_rows)
    assert (df.record_count, df.file_size_in_bytes, df.file_format) == (len(records), len(data), "PARQUET")
    md = pq.ParquetFile(io.BytesIO(data)).metadata
    assert len(df.split_offsets) == md.num_row_groups and list(df.split_offsets) == sorted(df.split_offsets)
    assert df.split_offsets[0] == 4  # the first row group starts right after the magic
    assert set(df.column_sizes) == set(PRIMITIVE_IDS) and all(v > 0 for v in df.column_sizes.values())
    for fid in PRIMITIVE_IDS:
        f = SCHEMA.find_field(fid)
        column = table.column(f.name)
        assert df.value_counts[fid] == len(records)
        assert df.null_value_counts[fid] == column.null_count
        if f.type in (T.FLOAT, T.DOUBLE):
            assert df.nan_value_counts[fid] == (pc.sum(pc.is_nan(column)).as_py() or 0)
        lo, hi = expected_bounds(column, f.type)
        got_lo = df.lower_bounds.get(fid)
        got_hi = df.upper_bounds.get(fid)
        assert (None if got_lo is None else conversions.from_bytes(f.type, got_lo)) == lo
        assert (None if got_hi is None else conversions.from_bytes(f.type, got_hi)) == hi


@given(texts | st.binary(max_size=40))
def test_truncated_bounds_enclose_the_value(value):
    """Goal: truncated bounds stay valid bounds and short. Method: for random strings and
    bytes (incl. maximal code points), check lower <= value <= upper and lengths."""
    lo, hi = truncate_lower(value), truncate_upper(value)
    assert lo <= value and len(lo) <= BOUND_TRUNCATE_LENGTH
    if len(value) <= BOUND_TRUNCATE_LENGTH:
        assert hi == value
    elif hi is not None:
        assert hi > value and len(hi) <= BOUND_TRUNCATE_LENGTH
        if isinstance(hi, str):
            hi.encode("utf-8")  # never a lone surrogate
    else:
        assert set(value[:BOUND_TRUNCATE_LENGTH]) == ({0xFF} if isinstance(value, bytes) else {"\U0010ffff"})


@given(st.lists(rows, max_size=30))
def test_read_round_trip(records):
    """Goal: reading gives back the written rows. Method: write then read_data_file;
    compare Python values (NaN compared as NaN)."""
    table = to_table(records)
    data, _ = write_data_file(table, SCHEMA, "f")
    back = read_data_file(data, SCHEMA)
    assert back.schema.equals(T.schema_to_arrow(SCHEMA), check_metadata=True)

    def norm(v):
        return "NaN" if isinstance(v, float) and math.isnan(v) else v
    assert [{k: norm(v) for k, v in r.items()} for r in back.to_pylist()] == \
        [{k: norm(v) for k, v in r.items()} for r in table.to_pylist()]


def test_read_matches_columns_by_field_id():
    """Goal: reading goes by field id: renamed columns, reordered columns, promoted types and
    nested structs map, absent optional columns are null. Method: write a file under one
    schema, read under an evolved one with the same ids."""
    written = T.Schema((
        T.NestedField(1, "a", T.INT, True),
        T.NestedField(2, "loc", T.StructType((T.NestedField(3, "lat", T.FLOAT, False),)), False),
        T.NestedField(4, "tags", T.ListType(5, T.STRING, False), False),
    ))
    table = pa.Table.from_pylist([{"a": 1, "loc": {"lat": 1.5}, "tags": ["x", None]},
                                  {"a": 2, "loc": None, "tags": None}], schema=T.schema_to_arrow(written))
    data, _ = write_data_file(table, written, "f")
    evolved = T.Schema((
        T.NestedField(4, "labels", T.ListType(5, T.STRING, False), False),
        T.NestedField(9, "new", T.STRING, False),
        T.NestedField(1, "renamed", T.LONG, True),
        T.NestedField(2, "place", T.StructType((T.NestedField(3, "latitude", T.DOUBLE, False),
                                                T.NestedField(8, "lon", T.DOUBLE, False))), False),
    ))
    back = read_data_file(data, evolved)
    assert back.to_pylist() == [
        {"labels": ["x", None], "new": None, "renamed": 1, "place": {"latitude": 1.5, "lon": None}},
        {"labels": None, "new": None, "renamed": 2, "place": None}]
    assert back.schema.field("renamed").type == pa.int64()
    with pytest.raises(DataFileError, match="required"):
        read_data_file(data, T.Schema((T.NestedField(7, "must", T.LONG, True),)))


def test_read_rejects_garbage_and_files_without_field_ids():
    """Goal: unreadable input is a typed DataFileError. Method: read junk bytes, and a
    Parquet file written by plain pyarrow (no field ids)."""
    with pytest.raises(DataFileError, match="not a readable"):
        read_data_file(b"PAR1 junk", SCHEMA, "s3://b/x.parquet")
    out = io.BytesIO()
    pq.write_table(pa.table({"id": [1, 2]}), out)
    with pytest.raises(DataFileError, match="field ids"):
        read_data_file(out.getvalue(), SCHEMA)


def test_write_rejects_nulls_in_required_column_and_unknown_columns():
    """Goal: input that would be stored wrongly is refused before writing. Method: write a
    table whose `id` (required) holds a null, and one with a column not in the schema."""
    table = pa.table({"id": pa.array([1, None], pa.int64())})
    with pytest.raises(DataFileError, match="required"):
        write_data_file(table, SCHEMA, "f")
    with pytest.raises(DataFileError, match="not in schema"):
        write_data_file(pa.table({"id": [1], "extra": [2]}), SCHEMA, "f")


def test_foreign_millisecond_timestamps_read_as_micros_without_bounds():
    """Goal: a file from another writer with millisecond timestamps reads correctly and
    yields no (wrong-unit) bounds. Method: write such a file with plain pyarrow and field
    ids, read it and compute its metrics."""
    schema = T.Schema((T.NestedField(1, "ts", T.TIMESTAMPTZ, False),))
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=dt.timezone.utc)
    field = pa.field("ts", pa.timestamp("ms", tz="UTC"), metadata={b"PARQUET:field_id": b"1"})
    out = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([{"ts": when}], schema=pa.schema([field])), out)
    assert read_data_file(out.getvalue(), schema).column("ts").to_pylist() == [when]
    from icefloe.impl.format.parquet import data_file_metrics
    metrics = data_file_metrics(out.getvalue(), schema)
    assert metrics["value_counts"] == {1: 1} and metrics["lower_bounds"] == {} == metrics["upper_bounds"]


SPECS = ["", "s", "bucket(4, id)", "truncate(2, s), year(d)", "month(ts), n", "day(ts), bucket(3, s)",
         "hour(ts)", "truncate(10, price), ok", "x", "truncate(5, n), day(d), b"]


@given(st.lists(rows, max_size=30), st.sampled_from(SPECS))
def test_split_by_partition_groups_rows_by_their_transformed_values(records, spec_text):
    """Goal: every row lands in exactly one group whose tuple is its own partition value, and
    partition_of_row (the native Spark write's one-row rule) gives each row that tuple too.
    Method: Hypothesis rows and specs; recompute each row's tuple with the scalar
    Transform.apply and compare with its group's tuple and with partition_of_row."""
    spec = parse_partition_spec(spec_text, SCHEMA)
    table = to_table(records)
    groups = split_by_partition(table, spec, SCHEMA)
    assert sum(t.num_rows for _, t in groups) == len(records)
    keys = [p for p, _ in groups]
    norm = [tuple("NaN" if isinstance(v, float) and math.isnan(v) else v for v in k) for k in keys]
    assert len(set(norm)) == len(norm)
    for partition, part in groups:
        for row in part.to_pylist():
            expect = []
            for pf in spec.fields:
                source = SCHEMA.find_field(pf.source_id)
                v = row[source.name]
                if isinstance(v, dt.datetime):
                    v = conversions.datetime_to_micros(v)
                elif isinstance(v, dt.date):
                    v = (v - conversions.EPOCH_DATE).days
                expect.append(pf.transform.apply(v, source.type))
            same = [a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))
                    for a, b in zip(expect, partition)]
            assert all(same), (expect, partition)
        for i in range(part.num_rows):
            alone = partition_of_row(part.slice(i, 1), spec, SCHEMA)
            assert [a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))
                    for a, b in zip(alone, partition)] == [True] * len(partition), (alone, partition)
    if records and spec.fields:
        assert isinstance(groups[0][0], tuple) and len(groups[0][0]) == len(spec.fields)


def test_pyiceberg_data_files_read_and_measure_like_pyiceberg(tmp_path):
    """Goal: Parquet written by another writer (pyiceberg) reads by field id, and our footer
    metrics agree with the metrics pyiceberg recorded for it. Method: append a table with a
    long string column through a SqlCatalog; read each data file with read_data_file and
    data_file_metrics; compare with pyiceberg's scan and its DataFile."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=f"file://{tmp_path}/wh")
    catalog.create_namespace("ns")
    schema = T.Schema((T.NestedField(1, "id", T.LONG, False), T.NestedField(2, "s", T.STRING, False),
                       T.NestedField(3, "x", T.DOUBLE, False), T.NestedField(4, "d", T.DATE, False)))
    rows = pa.Table.from_pylist(
        [{"id": i, "s": None if i % 3 == 0 else f"{'long-' * i}{i}", "x": float(i) / 3 if i % 4 else None,
          "d": dt.date(2024, 1, 1 + i)} for i in range(12)],
        schema=pa.schema([pa.field(f.name, T.type_to_arrow(f.type)) for f in schema.fields]))
    table = catalog.create_table("ns.t", schema=rows.schema)
    table.append(rows)
    # pyiceberg assigned its own ids; project the file onto the table's schema by those ids.
    from pyiceberg.io.pyarrow import schema_to_pyarrow
    ours = T.schema_from_arrow(schema_to_pyarrow(table.schema()))
    (task,) = list(table.scan().plan_files())
    data = open(task.file.file_path.removeprefix("file://"), "rb").read()
    back = read_data_file(data, ours, task.file.file_path)
    assert back.to_pylist() == table.scan().to_arrow().to_pylist()
    from icefloe.impl.format.parquet import data_file_metrics
    metrics = data_file_metrics(data, ours)
    theirs = task.file
    assert metrics["record_count"] == theirs.record_count
    assert metrics["value_counts"] == theirs.value_counts
    assert metrics["null_value_counts"] == theirs.null_value_counts
    assert metrics["lower_bounds"] == theirs.lower_bounds
    assert metrics["upper_bounds"] == theirs.upper_bounds


def test_split_reports_out_of_range_partition_values():
    """Goal: a transform result outside its type is a typed error, not an Arrow one. Method:
    truncate(5) of the smallest int (its truncation is below the int range)."""
    table = to_table([{"id": 1, "n": -(2**31)}])
    with pytest.raises(DataFileError, match="n_trunc"):
        split_by_partition(table, parse_partition_spec("truncate(5, n)", SCHEMA), SCHEMA)


@given(st.integers(0, 100_000), st.integers(0, 255))
@example(cut=3898, xor=128)  # once broke a column name's UTF-8 (pyarrow 26's layout)
def test_truncated_or_corrupted_parquet_raises_data_file_error(cut, xor):
    """Goal: broken Parquet bytes give DataFileError (or, if still decodable, a table of
    the schema), never another exception. Method: cut a valid file and flip a byte."""
    data, _ = write_data_file(to_table([{"id": i, "s": f"v{i}"} for i in range(20)]), SCHEMA, "f")
    broken = bytearray(data[: cut % len(data) + 1] if cut % 2 else data)
    broken[cut % len(broken)] ^= xor
    try:
        table = read_data_file(bytes(broken), SCHEMA)
    except DataFileError:
        return
    assert table.schema.names == [f.name for f in SCHEMA.fields]


def test_a_split_into_more_files_than_allowed_is_refused_with_the_count():
    """Goal: a write whose partition spec would make more data files than the table allows
    is refused before any file is built, naming how many (issue 14 item 6). Method: split
    100 rows with one partition per row under limits 99 and 100; read the property."""
    rows = pa.table({"id": pa.array(range(100), pa.int64())})
    schema = T.schema_from_arrow(rows.schema)
    spec = parse_partition_spec("id", schema)
    with pytest.raises(TooManyFiles, match="would create 100 data files") as info:
        split_by_partition(rows, spec, schema, files_max=99)
    assert (info.value.files, info.value.files_max) == (100, 99)
    assert len(split_by_partition(rows, spec, schema, files_max=100)) == 100
    assert data_files_max({}) == DATA_FILES_MAX_DEFAULT == 10_000
    assert data_files_max({DATA_FILES_MAX_PROPERTY: "5"}) == 5
    with pytest.raises(DataFileError, match=DATA_FILES_MAX_PROPERTY):
        data_files_max({DATA_FILES_MAX_PROPERTY: "lots"})
