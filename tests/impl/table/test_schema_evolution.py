"""Schema changes as commits (impl/table/schema_evolution.py): field ids, schema reuse,
and how they race with other writers."""
from __future__ import annotations

import pyarrow as pa
import pytest

from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.format import types as T
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.outcomes import Committed, Conflict
from icefloe.impl.table import producer as P, schema_evolution as SE
from icefloe.impl.table.env import Env
from icefloe.impl.table.table import create_table

SCHEMA = T.Schema((T.NestedField(1, "id", T.LONG, True), T.NestedField(2, "cat", T.STRING, False)),
                  identifier_field_ids=(1,))


def _table():
    return create_table(MemoryCatalog(), "db.t", SCHEMA, location="mem://w/db/t", io=MemoryStore(), env=Env.seeded(3))


def _run(table, op):
    commit = table.begin(op)
    commit.run()
    return table.adopt(commit)


def test_ids_are_never_reused_and_an_identical_schema_is_reused():
    """Goal: a new column takes last-column-id + 1 even after a drop; returning to an
    earlier set of columns reuses that schema's id (as Java does). Method: add, drop,
    add again, rename there and back."""
    t = _table()
    assert isinstance(_run(t, SE.add_column_change("x", "int")), Committed)
    assert t.metadata.schema().find_field("x").field_id == 3
    _run(t, SE.drop_column_change("x"))
    assert t.metadata.schema().fields == SCHEMA.fields and t.metadata.current_schema_id == 0
    _run(t, SE.add_column_change("x", "int"))
    assert t.metadata.schema().find_field("x").field_id == 4 and t.metadata.last_column_id == 4
    schemas = len(t.metadata.schemas)
    _run(t, SE.rename_column_change("cat", "category"))
    _run(t, SE.rename_column_change("category", "cat"))
    assert len(t.metadata.schemas) == schemas + 1 and t.metadata.schema().find_field("cat").field_id == 2


def test_identifier_fields_and_nested_paths():
    """Goal: an identifier field cannot be dropped; struct fields evolve by dotted path.
    Method: drop the identifier (refused, typed), add a struct column's child."""
    t = _table()
    with pytest.raises(SE.SchemaEvolutionError, match="identifier"):
        _run(t, SE.drop_column_change("id"))
    s = t.metadata.schema()
    nested = T.Schema((*s.fields, T.NestedField(3, "addr", T.StructType((T.NestedField(4, "city", T.STRING, False),)),
                                                False)), 0, s.identifier_field_ids)
    new, last = SE.add_column(nested, 4, "addr.zip", "string")
    assert new.find_field("addr.zip").field_id == 5 and last == 5
    assert SE.rename_column(new, "addr.zip", "postcode").find_field("addr.postcode").field_id == 5
    with pytest.raises(SE.SchemaEvolutionError, match="not a struct"):
        SE.add_column(nested, 4, "cat.zip", "string")


def test_a_concurrent_schema_change_conflicts_and_a_concurrent_append_does_not():
    """Goal: a schema change commits on a base whose schema is what it was made from.
    Method: step two schema changes past planning, commit one, the other ends Conflict
    (validation); then an append planned before a schema change lands after it and both
    stay (the append's rows read with the new column as null)."""
    t = _table()
    a, b = t.begin(SE.add_column_change("x", "int")), t.begin(SE.add_column_change("y", "int"))
    a.step(), b.step()
    assert isinstance(a.run(), Committed)
    outcome = b.run()
    assert isinstance(outcome, Conflict) and "schema changed concurrently" in outcome.reason
    t.refresh()
    append = t.begin(P.FastAppend(pa.table({"id": pa.array([1], pa.int64()), "cat": ["a"]})))
    append.step()
    assert isinstance(_run(t, SE.add_column_change("z", "string")), Committed)
    assert isinstance(append.run(), Committed)
    t.refresh()
    assert t.metadata.schema().field_by_name("z") is not None
    assert t.scan().to_pylist() == [{"id": 1, "cat": "a", "x": None, "z": None}]
