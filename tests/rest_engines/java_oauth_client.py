"""Run under the java venv (conformance/testing/java_env.run_script): Iceberg-Java 1.10.2's
REST catalog through Spark 3.5 against `icefloe serve` over https with OAuth2 client
credentials. argv: URI TRUSTSTORE WAREHOUSE_UNUSED WRITER_CREDENTIAL READER_CREDENTIAL.
Prints one JSON line: what each step gave (rows read, the refusal's exception classes)."""
from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

sys.path.insert(0, sys.argv[6])          # conformance/testing, for java_env.spark_conf
import java_env  # noqa: E402

uri, truststore, _, writer, reader = sys.argv[1:6]
trust = f"-Djavax.net.ssl.trustStore={truststore} -Djavax.net.ssl.trustStorePassword=changeit " \
        "-Djavax.net.ssl.trustStoreType=PKCS12"
conf = {}
for name, credential in (("w", writer), ("r", reader)):
    conf.update(java_env.spark_conf(name, "rest", uri=uri, properties={
        "credential": credential, "oauth2-server-uri": uri + "/v1/oauth/tokens", "rest.auth.type": "oauth2",
        "scope": "catalog", "cache-enabled": "false"}))
conf["spark.driver.extraJavaOptions"] = trust
builder = SparkSession.builder
for k, v in conf.items():
    builder = builder.config(k, v)
spark = builder.getOrCreate()
out = {}


def classes(e) -> list:
    text = str(e)
    return [w for w in ("ForbiddenException", "NotAuthorizedException", "NoSuchTableException") if w in text]


spark.sql("CREATE NAMESPACE IF NOT EXISTS w.db")
spark.sql("CREATE TABLE w.db.jt (id BIGINT) USING iceberg")
spark.sql("INSERT INTO w.db.jt VALUES (1), (2), (3)")
out["writer_rows"] = spark.sql("SELECT count(*) FROM w.db.jt").collect()[0][0]
out["reader_rows"] = spark.sql("SELECT count(*) FROM r.db.jt").collect()[0][0]
try:
    spark.sql("INSERT INTO r.db.jt VALUES (4)")
    out["reader_insert"] = "committed"
except Exception as e:  # noqa: BLE001 - the refusal's classes are the result
    out["reader_insert"] = classes(e)
try:
    spark.sql("CREATE VIEW w.db.jv AS SELECT id FROM w.db.jt WHERE id > 1")
    out["view_rows"] = spark.sql("SELECT count(*) FROM w.db.jv").collect()[0][0]
    spark.sql("CREATE OR REPLACE VIEW w.db.jv AS SELECT id FROM w.db.jt WHERE id > 2")
    out["replaced_view_rows"] = spark.sql("SELECT count(*) FROM w.db.jv").collect()[0][0]
    out["reader_view_rows"] = spark.sql("SELECT count(*) FROM r.db.jv").collect()[0][0]
    out["views"] = [r[1] for r in spark.sql("SHOW VIEWS IN w.db").collect()]
    spark.sql("DROP VIEW w.db.jv")
    out["views_after_drop"] = [r[1] for r in spark.sql("SHOW VIEWS IN w.db").collect()]
except Exception as e:  # noqa: BLE001 - reported, the test decides
    out["view_error"] = str(e)[:2000]
out["final_rows"] = spark.sql("SELECT count(*) FROM w.db.jt").collect()[0][0]
print(json.dumps(out), flush=True)
spark.stop()
