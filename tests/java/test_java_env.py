"""The java venv and its worker: Iceberg-Java 1.10.2 on Spark 3.5.9 runs here, writes and
reads a table, tags commits, reports Java's exception chain, and reads a table straight
from its metadata file (what the other suites use to check Java reads their tables)."""
from __future__ import annotations

import glob

import pytest

from icefloe.conformance.testing import java_env


def test_spark_conf_names_one_iceberg_catalog_of_each_type():
    """Goal: the conf recipe is the verified one. Method: build each type, check the keys."""
    rest = java_env.spark_conf("r", "rest", uri="http://127.0.0.1:9", properties={"header.X-W": "1"})
    assert rest["spark.sql.catalog.r"] == java_env.SPARK_CATALOG_CLASS
    assert rest["spark.sql.catalog.r.type"] == "rest" and rest["spark.sql.catalog.r.uri"] == "http://127.0.0.1:9"
    assert rest["spark.sql.catalog.r.header.X-W"] == "1"
    assert rest["spark.jars"].endswith(java_env.RUNTIME_JAR_NAME)
    assert java_env.environment()["SPARK_LOCAL_IP"] == "127.0.0.1"
    with pytest.raises(ValueError):
        java_env.spark_conf("r", "rest")
    with pytest.raises(ValueError):
        java_env.spark_conf("x", "glue", uri="u")


def test_worker_runs_iceberg_java_1_10_2_on_spark_3_5_9(java_worker):
    """Goal: `make java-venv` gives the reference engine. Method: the worker's versions."""
    assert java_worker.versions["spark"] == java_env.SPARK_VERSION
    assert java_env.ICEBERG_VERSION in java_worker.versions["iceberg"]


def test_commit_properties_reach_snapshot_summaries(java_worker):
    """Goal: a DELETE (no write options in SQL) can carry the suite's op id. Method: run it
    under commit properties, read the summaries back."""
    java_worker.sql("CREATE NAMESPACE IF NOT EXISTS h.env")
    java_worker.sql("CREATE TABLE h.env.tagged (id string NOT NULL) USING iceberg "
                    "TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read')")
    java_worker.call("append", table="h.env.tagged", values=["a", "b"],
                     options={"snapshot-property.op": "1.1"})
    java_worker.sql("DELETE FROM h.env.tagged WHERE id = 'a'", properties={"op": "1.2"})
    rows = java_worker.sql("SELECT operation, summary['op'], summary['added-delete-files'] "
                           "FROM h.env.tagged.snapshots ORDER BY committed_at")
    assert rows == [["append", "1.1", None], ["delete", "1.2", "1"]]   # merge-on-read: a delete file
    assert java_worker.sql("SELECT id FROM h.env.tagged") == [["b"]]


def test_java_errors_name_their_class_chain(java_worker):
    """Goal: the adapter can tell Java's exceptions apart. Method: a missing table."""
    with pytest.raises(java_env.JavaError) as caught:
        java_worker.sql("SELECT * FROM h.env.no_such_table")
    assert caught.value.caused_by("AnalysisException")


def test_reads_a_table_straight_from_its_metadata_file(java_worker, java_warehouse):
    """Goal: other suites can ask Iceberg-Java to read a table they wrote. Method: write with
    Java, load the newest metadata JSON by path, at the current and the first snapshot."""
    java_worker.sql("CREATE NAMESPACE IF NOT EXISTS h.env")
    java_worker.sql("CREATE TABLE h.env.bypath (id string NOT NULL) USING iceberg")
    java_worker.call("append", table="h.env.bypath", values=["x"])
    java_worker.call("append", table="h.env.bypath", values=["y"])
    first = java_worker.sql("SELECT snapshot_id FROM h.env.bypath.snapshots ORDER BY committed_at")[0][0]
    location = sorted(glob.glob(f"{java_warehouse}/env/bypath/metadata/v*.metadata.json"))[-1]
    assert sorted(java_worker.call("load", location=location)) == [["x"], ["y"]]
    assert java_worker.call("load", location=location, snapshot_id=first) == [["x"]]


def test_a_worker_that_cannot_start_says_why():
    """Goal: a worker whose Spark cannot start raises WorkerDied carrying its log's tail (the
    reason), not an error of the harness reading a log it already closed. Method: start one
    with a master URL Spark cannot parse."""
    with pytest.raises(java_env.WorkerDied) as died:
        java_env.JavaWorker({"spark.master": "no-such-master://x"})
    assert "did not start" in str(died.value) and "Master must either be" in str(died.value), str(died.value)[-2000:]
