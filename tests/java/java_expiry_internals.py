"""Run by the java venv's interpreter (conformance.testing.java_env.run_script): finding J5 of
docs/verdicts.md inside one JVM, no Spark session, no REST server (Iceberg-Java 1.10.2's
core classes over its InMemoryCatalog):

    python java_expiry_internals.py <runtime jar>

A table with snapshots S1 <- S2 (main at S2); an expiry keeping the last one plans to
remove S1; then main is rolled back to S1. Prints one JSON object:
  request       the commit request Java's REST client builds for that plan
                (RESTTableOperations: UpdateRequirements.forUpdateTable + the changes);
  server        what Iceberg-Java's own REST server handler (CatalogHandlers.updateTable,
                as RESTCatalogAdapter and servers built on it run it) makes of that
                request on the rolled-back table: refs, current snapshot, snapshots;
  second_plan   the same RemoveSnapshots planning again (what its retry after a
                CommitFailedException does): the error it raises;
  window        with retainLast(2), S3 <- S2 <- U1 and main rolled back to S2 between
                the two plans: the first plan, the second (the union), and a fresh
                RemoveSnapshots' plan on the same table.
"""
from __future__ import annotations

import json
import sys


def main(jar: str) -> int:
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway
    jvm = launch_gateway(SparkConf().set("spark.driver.extraClassPath", jar)).jvm
    ice = jvm.org.apache.iceberg
    catalog = ice.inmemory.InMemoryCatalog()
    catalog.initialize("mem", jvm.java.util.HashMap())
    ident = ice.catalog.TableIdentifier.parse("db.t")
    catalog.createNamespace(ident.namespace())
    fields = jvm.java.util.ArrayList()
    fields.add(ice.types.Types.NestedField.required(1, "id", ice.types.Types.StringType.get()))
    table = catalog.createTable(ident, ice.Schema(fields))
    for name in ("a", "b"):
        data_file = ice.DataFiles.builder(ice.PartitionSpec.unpartitioned()).withPath(f"/tmp/j5/{name}.parquet") \
            .withFileSizeInBytes(10).withRecordCount(1).withFormat("parquet").build()
        table.newFastAppend().appendFile(data_file).commit()
    table.refresh()
    s2 = table.currentSnapshot().snapshotId()
    s1 = table.currentSnapshot().parentId()

    expiry = table.expireSnapshots().expireOlderThan(2 ** 62).retainLast(1)
    planned_on = table.operations().current()
    removed = [s.snapshotId() for s in expiry.apply()]                  # RemoveSnapshots.internalApply
    ids = jvm.java.util.HashSet()
    for sid in removed:
        ids.add(jvm.java.lang.Long.valueOf(str(sid)))
    changes = ice.TableMetadata.buildFrom(planned_on).removeSnapshots(ids).build().changes()
    request = jvm.org.apache.iceberg.rest.requests.UpdateTableRequest(
        ice.UpdateRequirements.forUpdateTable(planned_on, changes), changes)
    request_json = json.loads(jvm.org.apache.iceberg.rest.requests.UpdateTableRequestParser.toJson(request))

    table.manageSnapshots().rollbackTo(s1).commit()                        # lands before the expiry's commit
    response = jvm.org.apache.iceberg.rest.CatalogHandlers.updateTable(catalog, ident, request)
    after = response.tableMetadata()
    current = after.currentSnapshot()
    server = {"refs": {str(k): after.refs().get(k).snapshotId() for k in after.refs().keySet()},
              "current_snapshot_id": None if current is None else current.snapshotId(),
              "snapshots": [s.snapshotId() for s in after.snapshots()],
              "reloaded_current_snapshot_id": (lambda c: None if c is None else c.snapshotId())(
                  catalog.loadTable(ident).currentSnapshot())}

    # The same RemoveSnapshots planning again, on a second table rolled back the same way:
    # what its retry does after a CommitFailedException (idsToRemove keeps the first plan).
    ident2 = ice.catalog.TableIdentifier.parse("db.t2")
    table2 = catalog.createTable(ident2, ice.Schema(fields))
    for name in ("c", "d"):
        data_file = ice.DataFiles.builder(ice.PartitionSpec.unpartitioned()).withPath(f"/tmp/j5/{name}.parquet") \
            .withFileSizeInBytes(10).withRecordCount(1).withFormat("parquet").build()
        table2.newFastAppend().appendFile(data_file).commit()
    table2.refresh()
    t1 = table2.currentSnapshot().parentId()
    expiry2 = table2.expireSnapshots().expireOlderThan(2 ** 62).retainLast(1)
    first = [s.snapshotId() for s in expiry2.apply()]
    table2.manageSnapshots().rollbackTo(t1).commit()
    try:
        second = {"removes": [s.snapshotId() for s in expiry2.apply()]}
    except Exception as e:  # noqa: BLE001 - the answer is the error
        java = getattr(e, "java_exception", None)
        second = {"error": java.getClass().getName() if java is not None else type(e).__name__,
                  "message": str(java.getMessage()) if java is not None else str(e)}

    # With a retention window (retainLast(2)) the re-plan is the union of both plans: main
    # S3 <- S2 <- U1, the first plan removes U1; main rolled back to S2 keeps U1 within its
    # last two, and the second plan removes it anyway (with S3, which no ref holds now).
    ident3 = ice.catalog.TableIdentifier.parse("db.t3")
    table3 = catalog.createTable(ident3, ice.Schema(fields))
    for name in ("e", "f", "g"):
        data_file = ice.DataFiles.builder(ice.PartitionSpec.unpartitioned()).withPath(f"/tmp/j5/{name}.parquet") \
            .withFileSizeInBytes(10).withRecordCount(1).withFormat("parquet").build()
        table3.newFastAppend().appendFile(data_file).commit()
    table3.refresh()
    u3 = table3.currentSnapshot().snapshotId()
    u2 = table3.currentSnapshot().parentId()
    u1 = table3.snapshot(u2).parentId()
    expiry3 = table3.expireSnapshots().expireOlderThan(2 ** 62).retainLast(2)
    window_first = [s.snapshotId() for s in expiry3.apply()]
    table3.manageSnapshots().rollbackTo(u2).commit()
    window_second = sorted(s.snapshotId() for s in expiry3.apply())
    fresh = sorted(s.snapshotId() for s in table3.expireSnapshots().expireOlderThan(2 ** 62).retainLast(2).apply())
    print(json.dumps({"s1": s1, "s2": s2, "planned_removal": removed, "request": request_json, "server": server,
                      "t1": t1, "first_plan": first, "second_plan": second,
                      "window": {"u1": u1, "u2": u2, "u3": u3, "first_plan": window_first,
                                 "second_plan": window_second, "fresh_plan": fresh}}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
