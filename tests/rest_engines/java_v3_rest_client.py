"""Run under the java venv (conformance/testing/java_env.run_script): Iceberg-Java 1.10.2's REST
catalog (Spark 3.5 SQL, and its Java API through py4j) against `icefloe serve`, on default
values (spec "Default values") and row lineage ("Row Lineage"). argv: URI JAVA_ENV_DIR. Prints one JSON line: what each step
gave, an error's text where a step failed (the test decides what is expected).

Table db.ice (made by icefloe: column `region` with initial-default "eu", write-default
"n/a"): Java's view of the field's defaults, and its rows. Then Java sets defaults: on
db.ice a column `score` (initial-default 7) added by UpdateSchema.addColumn with a Literal,
its write-default changed to 8 by updateColumnDefault; Spark SQL's `ADD COLUMN ... DEFAULT`
and an INSERT that leaves `score` out (does Spark apply the write-default?); and a v3 table db.jt that Java creates, appends to and then adds `tag` (initial-default "old") to.

Row lineage: tables db.upd (updated by icefloe) and db.upg (upgraded from v2, then compacted)
read by Iceberg's generic reader (IcebergGenerics, deletes applied) with the schema
MetadataColumns.schemaWithRowLineage gives: Spark 3.5 cannot select `_row_id`, Java's core can."""
from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

sys.path.insert(0, sys.argv[2])          # conformance/testing, for java_env.spark_conf
import java_env  # noqa: E402

conf = java_env.spark_conf("r", "rest", uri=sys.argv[1], properties={"cache-enabled": "false"})
builder = SparkSession.builder
for k, v in conf.items():
    builder = builder.config(k, v)
spark = builder.getOrCreate()
jvm = spark._jvm
Types, Literal = jvm.org.apache.iceberg.types.Types, jvm.org.apache.iceberg.expressions.Literal
catalog = spark._jsparkSession.sessionState().catalogManager().catalog("r").icebergCatalog()
out = {}


def table(name):
    return catalog.loadTable(jvm.org.apache.iceberg.catalog.TableIdentifier.parse(f"db.{name}"))


def defaults(name, column):
    f = table(name).schema().findField(column)
    return None if f is None else [None if f.initialDefault() is None else str(f.initialDefault()),
                                   None if f.writeDefault() is None else str(f.writeDefault())]


def step(key, fn):
    try:
        out[key] = fn()
    except Exception as e:  # noqa: BLE001 - the error is the result
        out[key] = {"error": str(e)[:1500]}


def rows(sql):
    return [list(r) for r in spark.sql(sql).collect()]


step("ice_defaults", lambda: defaults("ice", "region"))
step("ice_format_version", lambda: table("ice").operations().current().formatVersion())
step("ice_rows", lambda: rows("SELECT id, region FROM r.db.ice ORDER BY id"))
step("ice_rows_row_based", lambda: (spark.conf.set("spark.sql.iceberg.vectorization.enabled", "false"),
                                    rows("SELECT id, region FROM r.db.ice ORDER BY id"))[1])
spark.conf.unset("spark.sql.iceberg.vectorization.enabled")
step("java_add_column", lambda: table("ice").updateSchema()
     .addColumn("score", Types.IntegerType.get(), "added by Java", Literal.of(7)).commit() or "committed")
step("java_update_default", lambda: table("ice").updateSchema()
     .updateColumnDefault("score", Literal.of(8)).commit() or "committed")
step("score_defaults", lambda: defaults("ice", "score"))
step("sql_default", lambda: spark.sql("ALTER TABLE r.db.ice ADD COLUMN bonus int DEFAULT 3").collect() and None
     or defaults("ice", "bonus"))
step("java_insert", lambda: spark.sql("INSERT INTO r.db.ice (id, s, region) VALUES (40, 'j', 'x')").collect()
     and None or "committed")
step("ice_rows_after", lambda: rows("SELECT id, region, score FROM r.db.ice ORDER BY id"))
spark.sql("CREATE TABLE r.db.jt (id bigint) USING iceberg TBLPROPERTIES ('format-version'='3')")
spark.sql("INSERT INTO r.db.jt VALUES (1), (2)")
step("jt_add_column", lambda: table("jt").updateSchema()
     .addColumn("tag", Types.StringType.get(), "added by Java", Literal.of("old")).commit() or "committed")
step("jt_defaults", lambda: defaults("jt", "tag"))
step("jt_rows", lambda: rows("SELECT id, tag FROM r.db.jt ORDER BY id"))


def lineage(name):
    t = table(name)
    schema = jvm.org.apache.iceberg.MetadataColumns.schemaWithRowLineage(t.schema())
    rows_read = jvm.org.apache.iceberg.data.IcebergGenerics.read(t).project(schema).build()
    got, it = [], rows_read.iterator()
    while it.hasNext():
        r = it.next()
        got.append([r.getField("id"), r.getField("_row_id"), r.getField("_last_updated_sequence_number")])
    rows_read.close()
    return sorted(got)


step("upd_lineage", lambda: lineage("upd"))
step("upg_lineage", lambda: lineage("upg"))
print(json.dumps(out, default=str), flush=True)
spark.stop()
