"""Delete files as another engine writes them (Iceberg spec "Position Delete Files",
"Equality Delete Files"): Parquet with the reserved field ids, committed by a row delta."""
from __future__ import annotations

import io
import uuid

import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.impl.format.manifest import DataFile, DataFileContent
from icefloe.impl.format.parquet import data_file_metrics
from icefloe.impl.format.types import FIELD_ID_KEY, LONG, NestedField, STRING, Schema


def _field(name, type_, fid):
    return pa.field(name, type_, nullable=False, metadata={FIELD_ID_KEY: str(fid).encode()})


POSITION_SCHEMA = pa.schema([_field("file_path", pa.string(), 2147483546), _field("pos", pa.int64(), 2147483545)])
POSITION_ICEBERG = Schema((NestedField(2147483546, "file_path", STRING, True),
                           NestedField(2147483545, "pos", LONG, True)))


def position_delete_file(table, deletes: list[tuple[str, int]], partition: tuple = ()) -> DataFile:
    """Write a position delete file under the table's data/ and describe it."""
    data = pa.table({"file_path": [p for p, _ in deletes], "pos": [n for _, n in deletes]}, schema=POSITION_SCHEMA)
    out = io.BytesIO()
    pq.write_table(data, out)
    raw = out.getvalue()
    location = f"{table.location}/data/pos-deletes-{uuid.uuid4()}.parquet"
    table.io.put_if_absent(location, raw)
    metrics = data_file_metrics(raw, POSITION_ICEBERG, data)
    metrics.pop("record_count")
    return DataFile(location, "PARQUET", partition, len(deletes), len(raw),
                    content=DataFileContent.POSITION_DELETES, **metrics)


def equality_delete_file(table, column: str, values: list, partition: tuple = ()) -> DataFile:
    schema = table.metadata.schema()
    f = schema.field_by_name(column)
    arrow = pa.schema([pa.field(column, pa.array(values).type, metadata={FIELD_ID_KEY: str(f.field_id).encode()})])
    data = pa.table({column: values}, schema=arrow)
    out = io.BytesIO()
    pq.write_table(data, out)
    raw = out.getvalue()
    location = f"{table.location}/data/eq-deletes-{uuid.uuid4()}.parquet"
    table.io.put_if_absent(location, raw)
    return DataFile(location, "PARQUET", partition, len(values), len(raw),
                    content=DataFileContent.EQUALITY_DELETES, equality_ids=(f.field_id,))


def data_file(table, data: pa.Table, partition: tuple = ()) -> DataFile:
    """Write a data file under the table's data/ as another engine would, and describe it
    (for a row delta that adds data and deletes of it in one commit)."""
    from icefloe.impl.format.parquet import write_data_file
    location = f"{table.location}/data/mor-{uuid.uuid4()}.parquet"
    raw, described = write_data_file(data, table.metadata.schema(), location, partition)
    table.io.put_if_absent(location, raw)
    return described
