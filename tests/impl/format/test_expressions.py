"""Filter expressions (impl/format/expressions.py): parsing, binding, Arrow conversion, and
the planning evaluators, which must never prune a file holding a matching row."""
from __future__ import annotations

import datetime as dt
import math
from decimal import Decimal

import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

from icefloe.impl.format import conversions, types as T
from icefloe.impl.format.evaluators import (
    ManifestEvaluator, MetricsEvaluator, PartitionEvaluator, _evaluate, _holds, metrics_might_match,
    partition_might_match, project, summaries_might_match,
)
from icefloe.impl.format.expression_parser import parse
from icefloe.impl.format.expressions import (
    AlwaysFalse, AlwaysTrue, And, BoundPredicate, ExpressionError, Not, Or, Predicate, bind, rewrite_not,
    to_arrow,
)
from icefloe.impl.format.manifest import (
    DataFile, ManifestEntry, ManifestEntryStatus, manifest_file_of, summarize_partitions,
)
from icefloe.impl.format.manifest_reader import read_manifest, read_manifest_list
from icefloe.impl.format.manifest_writer import write_manifest, write_manifest_list
from icefloe.impl.format.parquet import write_data_file
from icefloe.impl.format.partitioning import split_by_partition
from icefloe.impl.format.transforms import parse_partition_spec

SCHEMA = T.Schema((
    T.NestedField(1, "id", T.LONG, True),
    T.NestedField(2, "n", T.INT, False),
    T.NestedField(3, "x", T.DOUBLE, False),
    T.NestedField(4, "f", T.FLOAT, False),
    T.NestedField(5, "s", T.STRING, False),
    T.NestedField(6, "d", T.DATE, False),
    T.NestedField(7, "ts", T.TIMESTAMPTZ, False),
    T.NestedField(8, "price", T.DecimalType(9, 2), False),
    T.NestedField(9, "ok", T.BOOLEAN, False),
    T.NestedField(10, "st", T.StructType((T.NestedField(11, "a", T.INT, False),)), False),
))
UTC = dt.timezone.utc
small_dates = st.dates(dt.date(1960, 1, 1), dt.date(2030, 12, 31))
# Narrow ranges (around the epoch, where floor division matters) make rows share
# partitions and land next to literals; wide ones cover the rest.
VALUES = {
    "id": st.integers(-50, 50),
    # Not within a truncate width of the int minimum: truncating there leaves the int range
    # (the spec leaves that case open; Java's int arithmetic wraps around).
    "n": st.integers(-30, 30) | st.integers(-(2**31) + 100, 2**31 - 100),
    "x": st.floats(-10, 10) | st.just(math.nan) | st.just(-0.0),
    "f": st.floats(-10, 10, width=32) | st.just(math.nan),
    "s": st.text("ab\u00e9\U0010ffff", max_size=20),
    "d": st.dates(dt.date(1969, 11, 1), dt.date(1970, 3, 1)) | small_dates,
    "ts": st.datetimes(dt.datetime(1969, 12, 31, 22), dt.datetime(1970, 1, 1, 2), timezones=st.just(UTC))
    | st.datetimes(dt.datetime(1960, 1, 1), dt.datetime(2030, 1, 1), timezones=st.just(UTC)),
    "price": st.decimals(-3, 3, places=2, allow_nan=False) | st.decimals(-9999, 9999, places=2, allow_nan=False),
    "ok": st.booleans(),
    "st.a": st.integers(-5, 5),
}
COLUMN_TYPES = {"id": T.LONG, "n": T.INT, "x": T.DOUBLE, "f": T.FLOAT, "s": T.STRING, "d": T.DATE,
                "ts": T.TIMESTAMPTZ, "price": T.DecimalType(9, 2), "ok": T.BOOLEAN, "st.a": T.INT}
SPECS = ["", "n", "bucket(4, id)", "truncate(3, s)", "truncate(10, n)", "year(d)", "month(ts)",
         "day(ts)", "hour(ts)", "day(d), truncate(2, s)", "x", "truncate(100, price)", "ok, f",
         "st.a, bucket(3, s)", "month(d), bucket(2, d), id"]


@st.composite
def rows(draw):
    row = {}
    for name, values in VALUES.items():
        if name == "st.a":
            continue
        row[name] = draw(values) if name == "id" or draw(st.integers(0, 4)) else None
    row["st"] = draw(st.none() | st.fixed_dictionaries({"a": st.none() | VALUES["st.a"]}))
    return row


def row_value(row: dict, name: str):
    return (row["st"] or {}).get("a") if name == "st.a" else row[name]


def nudge(value, steps: int, unit: int):
    """A value `steps` small units away (a microsecond, an hour, a day...) so that literals
    fall just beside data values and partition boundaries."""
    if isinstance(value, bool) or isinstance(value, str) or steps == 0:
        return value
    if isinstance(value, int):
        return value + steps
    if isinstance(value, dt.datetime):
        return value + steps * [dt.timedelta(microseconds=1), dt.timedelta(hours=1),
                                dt.timedelta(days=1), dt.timedelta(minutes=1)][unit]
    if isinstance(value, dt.date):
        return value + dt.timedelta(days=steps)
    if isinstance(value, Decimal):
        return value + steps * Decimal("0.01")
    return value


def literal_text(name: str, value):
    """A literal as a user would type it (dates and timestamps as ISO strings)."""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


@st.composite
def predicates(draw, data: list[dict], focus: tuple[str, ...] = ()):
    # Mostly columns the partition spec uses, so projections are exercised.
    name = draw(st.sampled_from(focus if focus and draw(st.integers(0, 3)) else sorted(VALUES)))
    t = COLUMN_TYPES[name]
    pool = [v for r in data if (v := row_value(r, name)) is not None and not (isinstance(v, float) and math.isnan(v))]

    def literal():
        if pool and draw(st.booleans()):
            v = nudge(draw(st.sampled_from(pool)), draw(st.integers(-2, 2)), draw(st.integers(0, 3)))
        else:
            v = draw(VALUES[name].filter(lambda v: not (isinstance(v, float) and math.isnan(v))))
        return literal_text(name, v)
    ops = ["=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"]
    if t in (T.FLOAT, T.DOUBLE):
        ops += ["is nan", "is not nan"]
    if t == T.STRING:
        ops += ["starts_with", "not starts_with"]
    op = draw(st.sampled_from(ops))
    if op in ("is null", "is not null", "is nan", "is not nan"):
        return Predicate(op, name)
    if op in ("in", "not in"):
        return Predicate(op, name, tuple(literal() for _ in range(draw(st.integers(1, 3)))))
    if op in ("starts_with", "not starts_with"):
        v = literal()
        return Predicate(op, name, (v[: draw(st.integers(min(1, len(v)), len(v)))],))
    return Predicate(op, name, (literal(),))


@st.composite
def filters(draw, data: list[dict], focus: tuple[str, ...] = (), depth: int = 0):
    kind = draw(st.sampled_from(["leaf", "leaf", "and", "or", "not"] if depth < 3 else ["leaf"]))
    if kind == "leaf":
        return draw(predicates(data, focus))
    if kind == "not":
        return Not(draw(filters(data, focus, depth + 1)))
    left, right = draw(filters(data, focus, depth + 1)), draw(filters(data, focus, depth + 1))
    return And(left, right) if kind == "and" else Or(left, right)


def to_table(data: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(data, schema=T.schema_to_arrow(SCHEMA))


def internal_row(row: dict, name: str):
    v = row_value(row, name)
    if isinstance(v, dt.datetime):
        return conversions.datetime_to_micros(v)
    if isinstance(v, dt.date):
        return (v - conversions.EPOCH_DATE).days
    if isinstance(v, float) and COLUMN_TYPES[name] == T.FLOAT:
        return float(pa.scalar(v, pa.float32()).as_py())
    return v


@st.composite
def scenarios(draw):
    data = draw(st.lists(rows(), min_size=1, max_size=30))
    spec_text = draw(st.sampled_from(SPECS))
    focus = tuple(SCHEMA.column_name(f.source_id) for f in parse_partition_spec(spec_text, SCHEMA).fields)
    return data, draw(filters(data, focus)), spec_text, draw(st.integers(1, 10))


@given(scenarios())
def test_pruning_never_drops_a_file_with_a_matching_row(scenario):
    """Goal: the metrics, partition and manifest-summary evaluators are conservative.
    Method: Hypothesis rows, filters and specs; split and write real Parquet files, then for
    every file that holds a matching row (by Arrow evaluation) require each evaluator to
    say "might match", also for the manifest summarising all files."""
    data, expr, spec_text, row_group_rows = scenario
    spec = parse_partition_spec(spec_text, SCHEMA)
    bound = bind(expr, SCHEMA)
    projected = project(bound, spec, SCHEMA)
    files = []
    for partition, part in split_by_partition(to_table(data), spec, SCHEMA):
        _, df = write_data_file(part, SCHEMA, f"f{len(files)}", partition, row_group_rows_max=row_group_rows)
        files.append((df, part.filter(to_arrow(bound)).num_rows))
    all_summaries = summarize_partitions([df.partition for df, _ in files],
                                         T.StructType(tuple(f for f in _ptype(spec).fields)))
    for df, matches in files:
        if matches:
            assert metrics_might_match(bound, df), (df, bound)
            assert partition_might_match(projected, spec, df.partition), (df.partition, projected)
            own = summarize_partitions([df.partition], _ptype(spec))
            assert summaries_might_match(projected, spec, SCHEMA, own), (own, projected)
            assert summaries_might_match(projected, spec, SCHEMA, all_summaries)


@st.composite
def single_row_scenarios(draw):
    row = draw(rows())
    spec_text = draw(st.sampled_from([s for s in SPECS if s]))
    focus = tuple(SCHEMA.column_name(f.source_id) for f in parse_partition_spec(spec_text, SCHEMA).fields)
    return row, draw(filters([row], focus)), spec_text


@given(single_row_scenarios())
def test_projection_holds_for_the_partition_of_every_matching_row(scenario):
    """Goal: inclusive projection is implied by the row filter, for every transform.
    Method: one Hypothesis row and a filter with literals beside its values; when the row
    matches (Python evaluation of the Not-free form), its partition tuple (scalar
    Transform.apply) must satisfy the projection."""
    row, expr, spec_text = scenario
    spec = parse_partition_spec(spec_text, SCHEMA)
    nnf = rewrite_not(bind(expr, SCHEMA))
    names = {p.field.field_id: ".".join(p.path) for p in _leaves(nnf)}
    if not _evaluate(nnf, lambda p: _holds(p.op, internal_row(row, names[p.field.field_id]), p.literals)):
        return
    partition = tuple(pf.transform.apply(internal_row(row, SCHEMA.column_name(pf.source_id)),
                                         SCHEMA.find_type(pf.source_id)) for pf in spec.fields)
    projected = project(nnf, spec, SCHEMA)
    assert partition_might_match(projected, spec, partition), (partition, projected)
    assert summaries_might_match(projected, spec, SCHEMA, summarize_partitions([partition], _ptype(spec)))


def _ptype(spec):
    from icefloe.impl.format.transforms import partition_type
    return partition_type(spec, SCHEMA)


@given(scenarios())
def test_arrow_filter_agrees_with_row_semantics_and_rewrite_not(scenario):
    """Goal: one semantics: Arrow's filter, the Not-free rewrite under Arrow, and a plain
    Python evaluation of the rewrite per row select the same rows. Method: Hypothesis rows
    and filters; compare the three row sets."""
    data, expr, _, _ = scenario
    bound = bind(expr, SCHEMA)
    nnf = rewrite_not(bound)
    table = to_table(data).append_column("row", pa.array(range(len(data)), pa.int64()))
    by_arrow = table.filter(to_arrow(bound)).column("row").to_pylist()
    assert table.filter(to_arrow(nnf)).column("row").to_pylist() == by_arrow
    names = {fid: ".".join(path) for fid, path in ((p.field.field_id, p.path) for p in _leaves(nnf))}

    def leaf_on(row):
        return lambda p: _holds(p.op, internal_row(row, names[p.field.field_id]), p.literals)
    by_python = [i for i, row in enumerate(data) if _evaluate(nnf, leaf_on(row))]
    assert by_python == by_arrow


def _leaves(e):
    if isinstance(e, (And, Or)):
        yield from _leaves(e.left)
        yield from _leaves(e.right)
    elif isinstance(e, Not):
        yield from _leaves(e.child)
    elif isinstance(e, BoundPredicate):
        yield e


# -- the evaluators do prune ---------------------------------------------------------------

def _file(**stats) -> DataFile:
    return DataFile("f", "PARQUET", (), 10, 100, **stats)


def test_metrics_evaluator_prunes_on_bounds_and_counts():
    """Goal: the metrics evaluator rules out files when the statistics prove it. Method:
    a file with id in [10, 20], no nulls, x all NaN, s in [abc, abd]; check each verdict."""
    lb = {1: conversions.to_bytes(T.LONG, 10), 5: b"abc"}
    ub = {1: conversions.to_bytes(T.LONG, 20), 5: b"abd"}
    df = _file(value_counts={1: 10, 3: 10, 5: 10, 2: 10}, null_value_counts={1: 0, 3: 0, 5: 0, 2: 10},
               nan_value_counts={3: 10}, lower_bounds=lb, upper_bounds=ub)
    verdicts = {text: MetricsEvaluator(parse(text), SCHEMA).might_match(df) for text in [
        "id < 10", "id <= 10", "id > 20", "id >= 20", "id = 21", "id in (1, 30)", "id in (1, 15)",
        "id is null", "id is not null", "x is nan", "x is not nan", "x < 0", "x != 1",
        "n = 1", "n is null", "n != 1", "s starts_with 'ab'", "s starts_with 'b'", "s = 'abz'",
        "not id < 10", "not (id >= 10 and id <= 20)", "id > 20 or s = 'abc'"]}
    assert verdicts == {
        "id < 10": False, "id <= 10": True, "id > 20": False, "id >= 20": True, "id = 21": False,
        "id in (1, 30)": False, "id in (1, 15)": True, "id is null": False, "id is not null": True,
        "x is nan": True, "x is not nan": False, "x < 0": False, "x != 1": True,
        "n = 1": False, "n is null": True, "n != 1": False, "s starts_with 'ab'": True,
        "s starts_with 'b'": False, "s = 'abz'": False, "not id < 10": True,
        "not (id >= 10 and id <= 20)": False, "id > 20 or s = 'abc'": True}
    assert MetricsEvaluator(parse("id < 10"), SCHEMA).might_match(_file()) is True  # no stats: might


def test_partition_projection_and_manifest_pruning():
    """Goal: inclusive projection through day/bucket/truncate prunes partitions and
    manifests, end to end through written and re-read manifest lists. Method: three files
    in different days and buckets; evaluate filters against tuples and summaries."""
    spec = parse_partition_spec("day(ts), bucket(4, id), truncate(2, s)", SCHEMA)
    day = 19_723  # 2024-01-01
    files = [DataFile(f"f{i}", "PARQUET", (day + i, i, "ab"), 1, 1) for i in range(3)]
    entries = [ManifestEntry(ManifestEntryStatus.ADDED, f) for f in files]
    data = write_manifest(entries, SCHEMA, spec)
    mf = manifest_file_of(entries, SCHEMA, spec, manifest_path="m", manifest_length=len(data), added_snapshot_id=1)
    (listed,) = read_manifest_list(write_manifest_list([mf], 1, None, 1))
    check = {
        "ts >= '2024-01-02T00:00:00+00:00'": ([False, True, True], True),
        "ts < '2024-01-02'": ([True, False, False], True),
        "ts > '2024-01-03T23:59:59.999999'": ([False, False, False], False),
        "ts < '2023-12-31T10:00:00'": ([False, False, False], False),
        "s = 'abc' and s starts_with 'abc'": ([True, True, True], True),
        "s = 'xyz'": ([False, False, False], False),
        "s starts_with 'b'": ([False, False, False], False),
        "s is null": ([False, False, False], False),
        "not (s is not null)": ([False, False, False], False),
        "s != 'ab'": ([True, True, True], True),
    }
    for text, (expected, manifest) in check.items():
        evaluator = PartitionEvaluator(parse(text), spec, SCHEMA)
        assert [evaluator.might_match(f.partition) for f in files] == expected, text
        assert ManifestEvaluator(parse(text), spec, SCHEMA).might_match(listed) == manifest, text
    bucket = spec.fields[1].transform.apply(7, T.LONG)
    assert PartitionEvaluator(parse("id = 7"), spec, SCHEMA).might_match((day, bucket, "ab"))
    assert not PartitionEvaluator(parse("id = 7"), spec, SCHEMA).might_match((day, (bucket + 1) % 4, "ab"))
    assert PartitionEvaluator(parse("id != 7"), spec, SCHEMA).might_match((day, (bucket + 1) % 4, "ab"))


# -- parsing and binding -------------------------------------------------------------------

def test_parse_builds_the_expected_tree():
    """Goal: precedence, literal forms, quoting and flipped comparisons parse as intended.
    Method: compare parse output with hand-built trees."""
    P = Predicate
    cases = {
        "id > 5 and cat = 'x' or ts >= '2024-01-01'":
            Or(And(P(">", "id", (5,)), P("=", "cat", ("x",))), P(">=", "ts", ("2024-01-01",))),
        "a = 1 or b = 2 and c = 3": Or(P("=", "a", (1,)), And(P("=", "b", (2,)), P("=", "c", (3,)))),
        "not (a <> -1.50)": Not(P("!=", "a", (Decimal("-1.50"),))),
        "a NOT IN (1, 2) AND b IS NOT NULL": And(P("not in", "a", (1, 2)), P("is not null", "b")),
        "\"odd name\" == 'it''s'": P("=", "odd name", ("it's",)),
        "`s.t` starts_with 'p' and s.t not starts_with 'q'":
            And(P("starts_with", "s.t", ("p",)), P("not starts_with", "s.t", ("q",))),
        "3 <= a": P(">=", "a", (3,)),
        "x is nan or x is not nan": Or(P("is nan", "x"), P("is not nan", "x")),
        "ok = true and false": And(P("=", "ok", (True,)), AlwaysFalse()),
        "starts_with(s, 'ab')": P("starts_with", "s", ("ab",)),
        "((true))": AlwaysTrue(),
    }
    for text, tree in cases.items():
        assert parse(text) == tree, text


@pytest.mark.parametrize("text, position", [
    ("id >", 4), ("id = = 1", 5), ("(id = 1", 7), ("", 0), ("id = 1 )", 7), ("id § 1", 3),
    ("id in ()", 7), ("id is 5", 6), ("'a' starts_with s", 4), ("and", 0), ("id = 'unterminated", 5),
    ("(" * 500 + "id = 1" + ")" * 500, None),
])
def test_parse_errors_are_typed_with_a_position(text, position):
    """Goal: bad filter text raises ExpressionError pointing at the problem. Method: a
    table of malformed inputs with the expected character offset."""
    with pytest.raises(ExpressionError) as info:
        parse(text)
    if position is not None:
        assert info.value.position == position, str(info.value)


@pytest.mark.parametrize("text", [
    "nope = 1", "id = 'x'", "id = 1.5", "n = 3000000000", "x = 'a'", "s is nan", "id starts_with 'a'",
    "d = '2024-13-01'", "ts = 'yesterday'", "price = 1.234", "price = 12345678.9", "ok = 1", "st = 1",
])
def test_bind_errors_are_typed(text):
    """Goal: names and literals that do not fit the schema raise ExpressionError. Method:
    bind a table of ill-typed filters."""
    with pytest.raises(ExpressionError):
        bind(parse(text), SCHEMA)


def test_bind_converts_literals_to_internal_values():
    """Goal: literals become the internal values the evaluators compare. Method: bind
    one filter per type and inspect the bound literal."""
    def lit(text):
        return bind(parse(text), SCHEMA).literals
    assert lit("d = '2024-01-02'") == (19_724,)
    assert lit("ts >= '2024-01-01'") == (1_704_067_200_000_000,)
    assert lit("ts >= '2024-01-01T01:00:00+01:00'") == (1_704_067_200_000_000,)
    assert lit("price = 1.5") == (Decimal("1.50"),)
    assert lit("f < 0.1") == (float(pa.scalar(0.1, pa.float32()).as_py()),)
    assert lit("id in (3, 1, 3)") == (1, 3)
    assert bind(parse("id in (4)"), SCHEMA).op == "="
    assert bind(parse("st.a = 2"), SCHEMA).path == ("st", "a")
    with pytest.raises(ExpressionError):
        rewrite_not(parse("id = 1"))  # unbound


TOKENS = ["id", "s", "x", "st.a", "nope", "=", "!=", "<", ">=", "(", ")", ",", "and", "or", "not", "in",
          "is", "null", "nan", "starts_with", "'a'", "'2024-01-01'", "1", "-2.5", "true", "\"q\"", "§", "'"]


@given(st.lists(st.sampled_from(TOKENS), max_size=12) | st.text(max_size=30).map(lambda t: [t]))
def test_arbitrary_text_parses_and_binds_or_raises_expression_error(tokens):
    """Goal: no input makes parse or bind raise anything but ExpressionError. Method:
    Hypothesis token soups and raw text; parse, bind, convert to Arrow."""
    try:
        to_arrow(rewrite_not(bind(parse(" ".join(tokens)), SCHEMA)))
    except ExpressionError:
        pass


@given(scenarios())
def test_planned_scan_returns_exactly_the_matching_rows(scenario):
    """Goal: planning with all three evaluators over written-and-reread manifests, then
    reading the surviving files with the row filter, returns exactly the rows a direct
    filter returns. Method: Hypothesis rows, filter and spec through split, Parquet, two
    manifests, a manifest list; compare row multisets."""
    from icefloe.impl.format.parquet import read_data_file

    data, expr, spec_text, row_group_rows = scenario
    spec = parse_partition_spec(spec_text, SCHEMA)
    table = to_table(data)
    blobs, entries = {}, []
    for partition, part in split_by_partition(table, spec, SCHEMA):
        path = f"mem://d{len(blobs)}.parquet"
        blobs[path], df = write_data_file(part, SCHEMA, path, partition, row_group_rows_max=row_group_rows)
        entries.append(ManifestEntry(ManifestEntryStatus.ADDED, df))
    manifests = []
    for i, chunk in enumerate([entries[::2], entries[1::2]]):
        path = f"mem://m{i}.avro"
        blobs[path] = write_manifest(chunk, SCHEMA, spec)
        manifests.append(manifest_file_of(chunk, SCHEMA, spec, manifest_path=path,
                                          manifest_length=len(blobs[path]), added_snapshot_id=5))
    listed = read_manifest_list(write_manifest_list(manifests, 5, None, 1))

    manifest_eval = ManifestEvaluator(expr, spec, SCHEMA)
    partition_eval = PartitionEvaluator(expr, spec, SCHEMA)
    metrics_eval = MetricsEvaluator(expr, SCHEMA)
    row_filter = to_arrow(bind(expr, SCHEMA))
    got = []
    for m in listed:
        if not manifest_eval.might_match(m):
            continue
        for e in read_manifest(blobs[m.manifest_path], m):
            if partition_eval.might_match(e.data_file.partition) and metrics_eval.might_match(e.data_file):
                got += read_data_file(blobs[e.data_file.file_path], SCHEMA, row_filter=row_filter).to_pylist()
    expected = table.filter(row_filter).to_pylist()

    def key(row):
        return repr(sorted(row.items()))
    assert sorted(map(key, got)) == sorted(map(key, expected))


@given(st.lists(st.one_of(st.none(), st.integers(-50, 50)), max_size=40),
       st.lists(st.integers(-60, 60), min_size=1, max_size=60), st.sampled_from(["in", "not in"]))
def test_long_in_lists_keep_the_semantics_of_a_chain(values, literals, op):
    """Goal: an in / not in list longer than IN_CHAIN_MAX (one is_in) filters exactly as the
    chain of = / != (null rows unknown, so dropped by either). Method: random columns with
    nulls and literal lists, each compared with the row-by-row meaning."""
    from icefloe.impl.format.expressions import Predicate, bind, to_arrow
    schema = T.Schema((T.NestedField(1, "x", T.LONG, False),))
    rows = pa.table({"x": pa.array(values, pa.int64())})
    got = rows.filter(to_arrow(bind(Predicate(op, "x", tuple(literals)), schema))).column("x").to_pylist()
    wanted = [v for v in values if v is not None and ((v in literals) == (op == "in"))]
    assert got == wanted


def test_an_in_list_of_twenty_thousand_values_filters_without_crashing():
    """Goal: a long in list is one is_in, not 20,000 nested ORs (whose evaluation overflowed
    Arrow's C++ stack: a segfault). Method: filter 100,000 rows by 20,000 values."""
    from icefloe.impl.format.expressions import Predicate, bind, to_arrow
    schema = T.Schema((T.NestedField(1, "x", T.LONG, False),))
    rows = pa.table({"x": pa.array(range(100_000), pa.int64())})
    expr = to_arrow(bind(Predicate("in", "x", tuple(range(0, 100_000, 5))), schema))
    assert rows.filter(expr).num_rows == 20_000
