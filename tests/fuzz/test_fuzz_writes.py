"""Hostile row filters into writes (issue 14 item 7: no partial write). Method: Hypothesis
filter texts (mutations of a valid filter, token soups) given to Table.delete on an
in-memory table; a typed error must leave the store exactly as it was, and a commit must
remove exactly the rows the filter matches (Arrow's evaluation of the same filter)."""
from __future__ import annotations

import pyarrow as pa
from hypothesis import example, given, settings, strategies as st

import fuzz_targets as F
from mutations import EXAMPLES, mutated
from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.format.expression_parser import parse
from icefloe.impl.format.expressions import ExpressionError, bind, to_arrow
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.outcomes import Committed, IcefloeError
from icefloe.impl.table.table import Table, create_table

_tokens = st.sampled_from(["id", "cat", "amount", "and", "or", "not", "(", ")", "=", "<", ">", "!=", "in",
                           "is", "null", "nan", ",", "'a'", "'d'", "2", "3.5", "-1", "true"])
filters = st.one_of(mutated(b"id > 2 or cat in ('a', 'b')"),
                    st.lists(_tokens, min_size=1, max_size=12).map(lambda ts: " ".join(ts).encode()))


def _table() -> Table:
    store, catalog = MemoryStore(), MemoryCatalog()
    create_table(catalog, "db.t", F.SCHEMA, F.SPEC, location="memory://w/db/t", io=store)
    table = Table(catalog, "db.t", store)
    assert isinstance(table.append(F.ROWS), Committed)
    return table


def _objects(table: Table) -> list[str]:
    return [info.location for info in table.io.list("memory://w/db/t")]


@settings(max_examples=EXAMPLES)
@given(filters)
@example(b"id > 2 or cat in ('\xff\x01', 'b')")  # found: a lone surrogate reached Arrow as a string literal
def test_delete_with_a_hostile_filter_commits_exactly_or_writes_nothing(data):
    F.COUNTS["writes"] += 1
    table = _table()
    text = F._text(data)
    before, rows = _objects(table), table.scan()
    try:
        outcome = table.delete(text)
    except IcefloeError:
        assert _objects(table) == before
        return
    if not isinstance(outcome, Committed):
        assert _objects(table) == before  # a Conflict cleans up what it wrote
        return
    matched = rows.filter(to_arrow(bind(parse(text), F.SCHEMA))).num_rows  # true only; unknown stays
    assert table.scan().num_rows == rows.num_rows - matched


def test_the_filter_strategy_reaches_commits_and_errors():
    """Goal: the write fuzz is not vacuous: some generated filters commit, some are typed
    errors. Method: two fixed filters through the same path."""
    table = _table()
    assert isinstance(table.delete("id = 2"), Committed) and table.scan().num_rows == 3
    try:
        table.delete("id = = 2")
    except ExpressionError:
        pass
    else:
        raise AssertionError("a malformed filter was accepted")
    assert pa.types.is_int64(table.scan().schema.field("id").type)
