"""Scan planning with a filter (Iceberg spec "Scan Planning"; impl/table/scan.py): the
partition index path (ManifestReader.read_matching) must plan exactly what a plain
per-entry evaluation of every live entry plans, for every transform, format version,
partition spec evolution and reader cache state, and never drop a file holding a
matching row."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
from hypothesis import given, strategies as st

from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.format import expressions as E
from icefloe.impl.format.evaluators import metrics_might_match, partition_might_match, project
from icefloe.impl.format.expressions import Predicate, bind
from icefloe.impl.format.manifest import ManifestContent
from icefloe.impl.format.transforms import parse_partition_spec
from icefloe.impl.format.types import schema_from_arrow
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.table import layout_evolution as L
from icefloe.impl.table.env import Env
from icefloe.impl.table.files import LIVE, TreeReader
from icefloe.impl.table.scan import plan_files
from icefloe.impl.table.table import Table, create_table

UTC = dt.timezone.utc
ARROW_SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("cat", pa.string()),
                          pa.field("ts", pa.timestamp("us", tz="UTC")), pa.field("d", pa.date32())])
SCHEMA = schema_from_arrow(ARROW_SCHEMA)
SPECS = ["", "cat", "id", "bucket(4, id)", "truncate(2, cat)", "truncate(10, id)", "year(ts)", "month(d)",
         "day(ts)", "hour(ts)", "day(d), bucket(3, cat)", "cat, truncate(5, id)"]
ADDED_FIELDS = ["bucket(2, id)", "hour(ts)", "truncate(1, cat)", "year(d)"]
T0 = dt.datetime(1969, 12, 31, 20, tzinfo=UTC)  # around the epoch: floor division matters
VALUES = {
    "id": st.integers(-40, 40),
    "cat": st.text("abc", max_size=4),
    "ts": st.integers(-3 * 24 * 60, 3 * 24 * 60).map(lambda minutes: T0 + dt.timedelta(minutes=minutes * 37)),
    "d": st.dates(dt.date(1969, 11, 20), dt.date(1970, 2, 10)),
}


@st.composite
def batches(draw):
    n = draw(st.integers(1, 12))
    columns = {name: [draw(values) if name == "id" or draw(st.integers(0, 5)) else None for _ in range(n)]
               for name, values in VALUES.items()}
    return pa.table(columns, schema=ARROW_SCHEMA)


def literal_text(value):
    return value.isoformat() if isinstance(value, (dt.date, dt.datetime)) else value


@st.composite
def predicates(draw):
    name = draw(st.sampled_from(sorted(VALUES)))
    ops = ["=", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null"]
    if name == "cat":
        ops += ["starts_with", "not starts_with"]
    op = draw(st.sampled_from(ops))
    if op in ("is null", "is not null"):
        return Predicate(op, name)
    if op in ("in", "not in"):
        return Predicate(op, name, tuple(literal_text(draw(VALUES[name])) for _ in range(draw(st.integers(1, 3)))))
    return Predicate(op, name, (literal_text(draw(VALUES[name])),))


@st.composite
def filters(draw, depth: int = 0):
    kind = draw(st.sampled_from(["leaf", "leaf", "and", "or", "not"] if depth < 2 else ["leaf"]))
    if kind == "leaf":
        return draw(predicates())
    if kind == "not":
        return E.Not(draw(filters(depth + 1)))
    left, right = draw(filters(depth + 1)), draw(filters(depth + 1))
    return E.And(left, right) if kind == "and" else E.Or(left, right)


steps = st.one_of(batches().map(lambda b: ("append", b)), filters().map(lambda f: ("delete", f)),
                  filters().map(lambda f: ("delete merge-on-read", f)),
                  st.sampled_from(ADDED_FIELDS).map(lambda f: ("add field", f)))


def build(format_version: int, spec_text: str, history: list) -> Table:
    store, catalog = MemoryStore(), MemoryCatalog()
    spec = parse_partition_spec(spec_text, SCHEMA) if spec_text else None
    create_table(catalog, "db.t", SCHEMA, spec, "memory://w/db/t", {"format-version": str(format_version)},
                 io=store, env=Env.seeded(1, sleep_ms=lambda ms: None))
    table = Table(catalog, "db.t", store)
    for kind, arg in history:
        if kind == "append":
            table.append(arg)
        elif kind.startswith("delete"):  # merge-on-read: deletion vectors on v3, copy-on-write before
            table.delete(arg, mode="merge-on-read" if "merge" in kind and format_version == 3 else None)
        else:
            try:
                L.add_partition_field(table.metadata, arg)
            except L.LayoutEvolutionError:
                continue  # the spec has that field already
            commit = table.begin(L.SpecChange(lambda m, text=arg: L.add_partition_field(m, text), f"added {arg}"))
            commit.run()
            table.adopt(commit)
    return table


def per_entry_plan(table: Table, expr) -> list[tuple]:
    """The plan by plain evaluation: every live data entry of every manifest, decoded in
    full, judged one by one by its own spec's inclusive projection and its metrics."""
    m, snap = table.metadata, table.current_snapshot()
    bound = bind(expr, SCHEMA)
    tree = TreeReader(table.io)
    out = []
    for manifest in tree.manifests(snap):
        if manifest.content != ManifestContent.DATA:
            continue
        spec = m.spec_by_id(manifest.partition_spec_id)
        projected = project(bound, spec, SCHEMA)
        for e in tree.entries(manifest):
            f = e.data_file
            if e.status in LIVE and partition_might_match(projected, spec, f.partition) \
                    and metrics_might_match(bound, f):
                out.append((f.file_path, manifest.partition_spec_id, e.sequence_number, f))
    return sorted(out, key=lambda x: x[0])


def planned(tree: TreeReader, table: Table, expr) -> list[tuple]:
    tasks = plan_files(tree, table.metadata, table.current_snapshot(), expr, SCHEMA)
    return sorted(((t.data_file.file_path, t.spec_id, t.data_sequence_number, t.data_file) for t in tasks),
                  key=lambda x: x[0])


@given(st.sampled_from([1, 2, 3]), st.sampled_from(SPECS), st.lists(steps, min_size=1, max_size=5),
       st.lists(filters(), min_size=1, max_size=3))
def test_a_filtered_plan_is_the_per_entry_plan_in_every_cache_state(format_version, spec_text, history, exprs):
    """Goal: the filtered plan (partition index, then full decode of the kept entries) plans
    exactly the files a plain per-entry evaluation plans (partition by its spec's
    inclusive projection, then metrics), a subset of the unfiltered plan, whatever the
    reader had decoded before; and its rows are exactly the matching rows. Method:
    Hypothesis tables (v1-v3, every transform, appends, deletes rewriting files or
    writing deletion vectors, added partition fields),
    filters; plan on a fresh reader, again after an unfiltered plan, again after a full
    read; compare with the reference and the unfiltered plan, and rows with Arrow's filter."""
    table = build(format_version, spec_text, history)
    unfiltered = {t.data_file.file_path for t in table.plan_files()}
    for expr in exprs:
        expected = per_entry_plan(table, expr)
        assert {x[0] for x in expected} <= unfiltered
        tree = TreeReader(table.io)
        assert planned(tree, table, expr) == expected  # the partition index
        plan_files(tree, table.metadata, table.current_snapshot())  # entries without column statistics
        assert planned(tree, table, expr) == expected
        for manifest in tree.manifests(table.current_snapshot()):  # every field of every entry
            tree.entries(manifest)
        assert planned(tree, table, expr) == expected
        arrow_filter = E.to_arrow(bind(expr, SCHEMA))
        key = lambda r: repr(sorted(r.items()))  # noqa: E731
        assert sorted(map(key, table.scan(expr).to_pylist())) == \
            sorted(map(key, table.scan().filter(arrow_filter).to_pylist()))


def test_a_filtered_plan_builds_only_the_entries_it_keeps():
    """Goal: a partition filter makes planning do less, not more: no entry outside the
    kept partitions is built (what the bench measures as time, checked here as work).
    Method: 3 appends of 40 partitions each; plan `cat = 'p7'` on a fresh reader; every
    manifest reader holds a partition index and exactly the kept entries, decoded one by
    one, and no list of all entries."""
    store, catalog = MemoryStore(), MemoryCatalog()
    create_table(catalog, "db.t", SCHEMA, parse_partition_spec("cat", SCHEMA), "memory://w/db/t", {}, io=store,
                 env=Env.seeded(1, sleep_ms=lambda ms: None))
    table = Table(catalog, "db.t", store)
    for commit in range(3):
        table.append(pa.table({"id": [commit * 40 + p for p in range(40)], "cat": [f"p{p}" for p in range(40)],
                               "ts": [None] * 40, "d": [None] * 40}, schema=ARROW_SCHEMA))
    tree = TreeReader(table.io)
    tasks = plan_files(tree, table.metadata, table.current_snapshot(), "cat = 'p7'", SCHEMA)
    assert sorted(t.data_file.partition for t in tasks) == [("p7",)] * 3
    readers = list(tree._manifests.values())
    assert len(readers) == 3
    for reader in readers:
        assert reader._all is None and reader._partial is None and reader._index is not None
        assert len(reader._index[1]) == 40 and len(reader._complete) == 1
