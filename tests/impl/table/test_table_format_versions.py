"""Tables of format v1, v2 and v3 through the Table API (issue 29 item 1): created at the
version asked, read and written as that version, upgraded one step at a time, and what a
version cannot do refused by name."""
from __future__ import annotations

import io
import json

import fastavro
import pytest

from icefloe.impl.format.metadata import UnsupportedFormatVersion
from icefloe.impl.format.manifest import DataFile, DataFileContent
from icefloe.impl.outcomes import InvalidArgument, require_committed
from icefloe.impl.table.table import Table, create_table

from table_helpers import FAST_RETRY, SCHEMA, ids_of, memory_stack, rows


def _create(stack, version, name="t", partition=None):
    from icefloe.impl.format.transforms import parse_partition_spec
    spec = parse_partition_spec(partition, SCHEMA) if partition else None
    return create_table(stack.catalog, f"db.{name}", SCHEMA, spec, f"{stack.root}/db/{name}", FAST_RETRY,
                        io=stack.io, env=stack.env(), format_version=version)


def _avro_ids(data: bytes) -> set[int]:
    schema = fastavro.reader(io.BytesIO(data)).writer_schema
    return {f.get("field-id") for f in schema["fields"]} - {None}


@pytest.mark.parametrize("version", [1, 2, 3])
def test_a_table_is_written_and_read_at_the_version_it_was_created_with(version):
    """Goal: create v1/v2/v3, append, delete (copy-on-write): every metadata file, list and
    manifest is of that version and the rows read back. Method: a partitioned table, two
    appends and a delete, then inspect what a fresh handle reads and the files' schemas."""
    stack = memory_stack()
    table = _create(stack, version, partition="cat")
    require_committed(table.append(rows([1, 2, 3], ["a", "b", "a"])))
    require_committed(table.append(rows([4], "c")))
    require_committed(table.delete("id = 3"))
    again = Table(stack.catalog, "db.t", stack.io)
    assert again.metadata.format_version == version and ids_of(again.scan()) == [1, 2, 4]
    doc = json.loads(stack.io.get(again.metadata_location))
    assert doc["format-version"] == version and "format-version" not in doc["properties"]
    snap = again.current_snapshot()
    listed = _avro_ids(stack.io.get(snap.manifest_list))
    manifest = again.tree.manifests(snap)[0]
    entry_ids = _avro_ids(stack.io.get(manifest.manifest_path))
    if version == 1:
        assert [s.sequence_number for s in again.history()] == [0, 0, 0]
        assert "last-sequence-number" not in doc and all("sequence-number" not in s for s in doc["snapshots"])
        assert {515, 516, 517, 520}.isdisjoint(listed) and {3, 4}.isdisjoint(entry_ids)
    else:
        assert [s.sequence_number for s in again.history()] == [1, 2, 3]
        assert {515, 516, 517} <= listed and (520 in listed) == (version == 3)
    if version == 3:
        assert doc["next-row-id"] == again.metadata.next_row_id >= 4
        assert all("first-row-id" in s and "added-rows" in s for s in doc["snapshots"])
    else:
        assert "next-row-id" not in doc


def test_the_format_version_property_is_the_version_and_is_not_stored():
    """Goal: `format-version` given as a create property picks the version and is not kept
    as a property; setting it later is refused by name. Method: create with it, set it."""
    stack = memory_stack()
    table = create_table(stack.catalog, "db.t", SCHEMA, None, f"{stack.root}/db/t",
                         {"format-version": "3", "k": "v"}, io=stack.io, env=stack.env())
    assert table.metadata.format_version == 3 and dict(table.metadata.properties) == {"k": "v"}
    with pytest.raises(InvalidArgument, match="format-version is not a table property"):
        table.set_properties({"format-version": "2"})
    for bad in ("4", "0", "x"):
        with pytest.raises(UnsupportedFormatVersion, match="not supported"):
            create_table(stack.catalog, f"db.bad{bad}", SCHEMA, None, f"{stack.root}/db/bad{bad}",
                         {"format-version": bad}, io=stack.io, env=stack.env())
    assert not list(stack.io.list(f"{stack.root}/db/bad"))


def test_upgrade_goes_one_step_up_never_down_and_keeps_the_rows():
    """Goal: v1 -> v2 -> v3 by upgrade only; a skip or a downgrade is refused; a v2 table
    stays v2 through writes. Method: upgrade a v1 table with data step by step."""
    stack = memory_stack()
    table = _create(stack, 1)
    require_committed(table.append(rows([1, 2])))
    with pytest.raises(UnsupportedFormatVersion, match="one version at a time"):
        table.upgrade_format_version(3)
    require_committed(table.upgrade_format_version(2))
    assert table.metadata.format_version == 2
    require_committed(table.append(rows([3])))
    assert table.metadata.format_version == 2 and ids_of(table.scan()) == [1, 2, 3]
    assert table.upgrade_format_version(2).attempts == 0  # already there: nothing to do
    with pytest.raises(UnsupportedFormatVersion, match="downgrade"):
        table.upgrade_format_version(1)
    require_committed(table.upgrade_format_version(3))
    assert table.metadata.format_version == 3 and table.metadata.next_row_id == 0
    require_committed(table.append(rows([4])))
    assert ids_of(Table(stack.catalog, "db.t", stack.io).scan()) == [1, 2, 3, 4]


def test_what_a_version_cannot_hold_is_refused_by_name():
    """Goal: delete files on v1, position delete files on v3, DVs or merge-on-read deletes
    before v3 are UnsupportedFormatVersion naming the version. Method: try each."""
    stack = memory_stack()
    v1 = _create(stack, 1, "a")
    require_committed(v1.append(rows([1])))
    pos = DataFile(f"{stack.root}/db/a/data/d.parquet", "PARQUET", (), 1, 10, DataFileContent.POSITION_DELETES)
    with pytest.raises(UnsupportedFormatVersion, match="v1"):
        v1.add_delete_files([pos])
    v2 = _create(stack, 2, "b")
    require_committed(v2.append(rows([1])))
    with pytest.raises(UnsupportedFormatVersion, match="need format v3; this table is v2"):
        v2.delete("id = 1", mode="merge-on-read")
    v3 = _create(stack, 3, "c")
    require_committed(v3.append(rows([1])))
    with pytest.raises(UnsupportedFormatVersion, match="must not be added to a v3 table"):
        v3.add_delete_files([pos])
    with pytest.raises(InvalidArgument, match="delete mode"):
        v3.delete("id = 1", mode="sideways")
