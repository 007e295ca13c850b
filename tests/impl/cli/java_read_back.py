"""Run by the java venv's interpreter (conformance.testing.java_env.run_script): what
Iceberg-Java 1.10.2 (on Spark 3.5.9) reads from a table's metadata file. Prints one JSON
object: Java's parse of the current schema (field ids, names, types), the rows of the
current snapshot, the rows of an older snapshot, and the rows a filter selects.

    java_read_back.py SPARK_CONF_JSON METADATA_LOCATION OLD_SNAPSHOT_ID FILTER
"""
import datetime
import decimal
import json
import sys

from pyspark.sql import SparkSession


def plain(value):
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    return value


def rows(frame):
    return [{k: plain(v) for k, v in r.asDict().items()} for r in frame.collect()]


def main(conf_json, location, old_snapshot_id, row_filter):
    builder = SparkSession.builder.appName("icefloe-java-read-back")
    for key, value in json.loads(conf_json).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    jvm = spark._jvm
    io = jvm.org.apache.iceberg.hadoop.HadoopFileIO(spark._jsc.hadoopConfiguration())
    metadata = jvm.org.apache.iceberg.TableMetadataParser.read(io, location)
    schema = [{"id": f.fieldId(), "name": f.name(), "type": f.type().toString(), "required": f.isRequired()}
              for f in metadata.schema().columns()]
    out = {"schema": schema, "last_column_id": metadata.lastColumnId(),
           "rows": rows(spark.read.format("iceberg").load(location)),
           "old_rows": rows(spark.read.format("iceberg").option("snapshot-id", old_snapshot_id).load(location)),
           "filtered": rows(spark.read.format("iceberg").load(location).where(row_filter))}
    print("RESULT " + json.dumps(out))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:5])
