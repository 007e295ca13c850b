"""The `format-version` option of a Spark write that creates its table (impl/spark/source.py;
issue 29 item 1): v1, v2 or v3 as asked through both write paths, anything else refused
with a typed error naming it, and never a silent change of an existing table's version."""
from __future__ import annotations

import re

import pytest

from icefloe.impl.format.metadata import UnsupportedFormatVersion
from icefloe.impl.spark import write
from spark_helpers import SCHEMA, TABLE, open_table, rows

pytestmark = pytest.mark.xdist_group("spark")


def _created(opts, version):
    return {**opts, "create-table": "true", "partition-by": "cat", "format-version": str(version)}


@pytest.mark.parametrize("path", ["native", "source"])
def test_a_write_creates_the_format_version_asked(spark, opts, path):
    """Each of v1, v2 and v3 is created as asked (not stored as a property) and written as
    that version, by the native path and the data source: a write per version, read back
    through icefloe's scan and its metadata."""
    df = spark.createDataFrame(rows(range(20)).to_pandas(), schema="id long, cat string, v double")
    for version in (1, 2, 3):
        name = f"icefloe.db.t{version}"
        if path == "native":
            write(df, name, _created(opts, version))
        else:
            df.write.format("icefloe").mode("append").options(**_created(opts, version)).save(name)
        table = open_table(opts, f"db.t{version}")
        assert table.metadata.format_version == version
        assert "format-version" not in table.metadata.properties
        snap = table.current_snapshot()
        assert snap.sequence_number == (0 if version == 1 else 1)
        assert sorted(table.scan().column("id").to_pylist()) == list(range(20))
        if version == 3:  # row lineage: the first append's rows got ids 0..19
            assert table.metadata.next_row_id == 20


@pytest.mark.parametrize("bad", ["4", "0", "v3", "2.0", "", "three"])
def test_an_unsupported_format_version_is_refused_by_name(spark, opts, bad):
    """A format-version other than 1, 2 or 3 is UnsupportedFormatVersion naming the value,
    and no table is created: a native write per value, then the catalog is asked."""
    df = spark.createDataFrame(rows(range(3)).to_pandas(), schema="id long, cat string, v double")
    with pytest.raises(UnsupportedFormatVersion, match=f"format version '?{re.escape(bad)}'? is not supported"):
        write(df, TABLE, _created(opts, bad))
    from icefloe.impl.catalog.base import NoSuchTable
    with pytest.raises(NoSuchTable):
        open_table(opts).refresh()


def test_the_data_source_refuses_an_unsupported_format_version(spark, opts):
    """The data source's write refuses format-version=5 naming it and creates nothing: a
    DataFrameWriter save, its error text, then the catalog."""
    df = spark.createDataFrame(rows(range(3)).to_pandas(), schema="id long, cat string, v double")
    with pytest.raises(Exception, match="UnsupportedFormatVersion: format-version: format version 5 is not supported"):
        df.write.format("icefloe").mode("append").options(**_created(opts, 5)).save(TABLE)
    from icefloe.impl.catalog.base import NoSuchTable
    with pytest.raises(NoSuchTable):
        open_table(opts).refresh()


def test_a_write_never_changes_an_existing_tables_version(spark, opts):
    """A v2 table written with format-version=3 is refused (UnsupportedFormatVersion naming
    both versions), and stays v2 with its rows; format-version=2 writes: a native write each."""
    df = spark.createDataFrame(rows(range(5)).to_pandas(), schema="id long, cat string, v double")
    write(df, TABLE, _created(opts, 2))
    with pytest.raises(UnsupportedFormatVersion, match="format-version=3 .* is v2"):
        write(df, TABLE, _created(opts, 3))
    table = open_table(opts)
    assert table.metadata.format_version == 2 and len(table.metadata.snapshots) == 1
    write(df, TABLE, _created(opts, 2))
    table.refresh()
    assert table.metadata.format_version == 2 and table.scan().num_rows == 10
    assert SCHEMA.names == table.scan().column_names
