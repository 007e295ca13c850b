"""Iceberg-Java 1.10.2 (the reference engine) as a black-box engine, through Spark 3.5.9
(the contract: icefloe.conformance.adapter).

Spark 3.5 cannot live in the main venv (PySpark 4), so the adapter drives one long-lived
worker process of `.venv-java` (conformance.testing.java_env.JavaWorker, script
engines/java_worker.py) by JSON lines, shared by every table of a run. Each writer has its
own Spark catalog (`c<n>w<writer>`), an Iceberg SparkCatalog of type `rest` on the
harness's catalog URI whose requests carry the writer's identity in a header
(`WRITER_HEADER`, the writer's access key), so faults at the REST server's commit endpoint
can target one writer. Without a REST URI (developing without a server) the catalogs are
of type `hadoop` on a local warehouse. Catalog caching is off: every statement loads the
table afresh, as a new Spark job would.

Operations, each in the writer's catalog, tagged with the suite's op id (a snapshot
property, or Iceberg's CommitMetadata commit properties for SQL). The row-level ones are
Spark statements, since Spark's integration chooses what they validate; an append has
nothing to choose and goes straight to the core API (java_tables):
  append     `table.newAppend().appendFile(f).set(op id).commit()`: the AppendFiles that
             Spark's batch append commits (SparkWrite.BatchAppend), one data file
             written by Iceberg's generic Parquet writer; with table_api=False (engine
             `engine_spark_io`) DataFrameWriterV2 `append()`;
  overwrite  `MERGE INTO t USING <rows> ON t.id = s.id WHEN NOT MATCHED THEN INSERT *
             WHEN NOT MATCHED BY SOURCE AND <filter> THEN DELETE` (a row-level operation:
             copy-on-write or merge-on-read by the table's write.merge.mode, validated at
             serializable isolation, as Iceberg checks MERGE);
  delete     `DELETE FROM t WHERE <filter> AND length(id) >= 0` (write.delete.mode): a
             row-level delete, validated at serializable isolation; without the conjunct
             Spark deletes whole files by metadata, unvalidated (ROW_LEVEL). Merge-on-read:
             `MERGE INTO t USING <ids> s ON t.id = s.id WHEN MATCHED THEN DELETE`, the same
             position deletes, validated as a MERGE (no concurrent delete of its rows);
             Iceberg's merge-on-read DELETE does not check concurrent deletes
             (SparkPositionDeltaWrite validates deleted files and conflicting delete files
             for UPDATE and MERGE only) and commits over an overwrite that hid its rows
             (observation J6): engine `engine_mor_plain_delete`;
  rewrite    Iceberg's rewrite_data_files Spark action (what `CALL system.rewrite_data_files`
             runs; the procedure cannot tag its snapshot), option min-input-files=2: every
             file of the table is small, so each is a candidate and the one group is
             rewritten when it holds two or more, as the model's compaction; with
             rewrite-all Java also rewrites a lone file into one, where the model's is a
             no-op (ci at e5407fe, random example: delete, then rewrite of the one file left);
  rollback   main set to the target by Iceberg-Java's REST TableOperations commit
             (SetSnapshotRef, AssertRefSnapshotId), retried while main's head is still
             where the operation read it: the spec's rollback (spec/PROTOCOL.md). Java's
             own `CALL system.rollback_to_snapshot` re-checks only ancestry on a retry and
             moves main back over commits made meanwhile (finding J2): engine
             `engine_procedure_rollback`;
  expire     `Table.expireSnapshots().retainLast(n)` of Java's core API (the Spark procedure
             commits the same update but lists files with Spark jobs, ~10 s a call here),
             each attempt planned afresh on the table as loaded then and its commit request
             asserting the head of every ref it planned on (java_worker.RefAssertingOperations),
             retried after a 409: the spec's expiry (spec/PROTOCOL.md 7.3, 11). Java's own
             request asserts nothing but the table's uuid, so the server applies its first
             plan to whatever the table has become (observation J4), and its retry keeps
             the ids earlier attempts planned, refusing itself when a rollback made one
             main's head again (finding J5): engine `engine_plain_expire`.
The table's row-level mode (`MODE`: copy-on-write or merge-on-read) is the engine's:
engines `java` and `java-mor`.

Outcomes: Java's exception chain names them: CommitStateUnknownException -> Unknown;
CommitFailedException or ValidationException -> Conflict; anything else is the engine's
failure. Attempts are Java's own (commit.retry.num-retries = attempts_max - 1): a commit's
from its CommitReport (each writer's REST catalog reports to an InMemoryMetricsReporter);
Java reports none for a rollback or expiry (counted one), nor for a failed commit: a
CommitFailedException comes after every retry (attempts_max), an unknown state ends the
first attempt it meets (counted one, a lower bound when 409s came before it); a no-op
(nothing committed) counts zero. A lost answer to the commit request surfaces in Java
1.10.2 as its untyped RESTException (docs/verdicts.md): reported Unknown.

Reads, Iceberg-Java's own, each one worker request and one loadTable, no Spark job
(java_tables, docs/verdicts.md "A Java verdict's time"): current (main's head and its rows
from one load), at-snapshot (`IcebergGenerics.read(t).useSnapshot(s)`: Iceberg's scan
planning, its generic Parquet reader, deletes and deletion vectors applied by its
DeleteFilter, the `_file` column), incremental (`newIncrementalAppendScan()
.fromSnapshotExclusive(s)`, what Spark's `start-snapshot-id` read option plans). With
table_api=False each is a Spark read as before (`VERSION AS OF`, the read option). The
adapter's bookkeeping (main's head, the snapshot an op id tags, data files' record counts,
the current metadata file) asks the same Table API.

Format: v2 tables (`java`, `java-mor`), or v3 (`java-v3`, `java-mor-v3`: row lineage on,
merge-on-read deletes written as deletion vectors), each engine declaring its version in
its capabilities. Files read and the
history: a data file is named by its path while all its rows are live; once a delete
file (merge-on-read) hides some, by its path and the rows still live, so a merge-on-read
delete shows as the file's removal and a new version, as a copy-on-write one does.
"""
from __future__ import annotations

import dataclasses
import hashlib
import threading
from pathlib import Path

from icefloe.conformance import adapter as A
from icefloe.conformance.engines.metadata_json import local_path, read_metadata
from icefloe.conformance.testing import java_env

WRITER_HEADER = "X-Icefloe-Writer"
IN_MEMORY_REPORTER = "org.apache.iceberg.metrics.InMemoryMetricsReporter"
COPY_ON_WRITE, MERGE_ON_READ = "copy-on-write", "merge-on-read"
NAMESPACE = "db"
READER = 0
EXPIRE_OLDER_THAN_MS = 2 ** 62        # every snapshot is old enough: retain_last decides
# A conjunct Iceberg cannot turn into a filter of its own: the DELETE stays a row-level
# operation validated at the table's isolation level, not a metadata-only delete
# (SparkTable.deleteWhere: newDelete().deleteFromRowFilter, unvalidated, re-applied to the
# new base on a retry; docs/verdicts.md, observation J1).
ROW_LEVEL = f" AND length({A.COLUMN}) >= 0"
# The model's compaction rewrites a partition's files into one when it has two or more, and
# is a no-op otherwise: Java's planner selects every file below its minimum size (all of
# the suite's files) and rewrites a group of at least min-input-files of them.
REWRITE_OPTIONS = {"min-input-files": "2"}
# Iceberg-Java's validation of a row delta whose starting snapshot is no longer an ancestor
# of main's head (SnapshotUtil: "Snapshot S is not an ancestor of H").
NOT_AN_ANCESTOR = "is not an ancestor of"


class UnsupportedOperation(A.EngineSpecError):
    """The suite asked for something this engine's capabilities do not declare."""


CAPABILITIES = A.Capabilities(
    operations=frozenset({A.APPEND, A.OVERWRITE, A.DELETE, A.REWRITE, A.ROLLBACK, A.EXPIRE}),
    mode=A.BLACK_BOX, faults=frozenset(), swap_over_s3=False,
    reads=frozenset({A.READ_CURRENT, A.READ_AT, A.READ_INCREMENTAL}), isolation=A.SERIALIZABLE,
    stores=frozenset({"rest"}), transport=frozenset({A.TRANSPORT_REST}))   # its commits held and faulted at icefloe serve


def capabilities(mode: str, format_version: int) -> A.Capabilities:
    """What the engine declares: CAPABILITIES on a v2 table; on format v3 the same
    operations on v3 tables, and what Iceberg-Java 1.10.2 does there in the v3 phase's
    vocabulary: append, rewrite, and its delete (a deletion vector under merge-on-read,
    the data file rewritten under copy-on-write), two DVs for one data file settled by
    conflict (its row delta's validateNoConflictingDeleteFiles). The v3 phase steps a
    commit phase by phase, so for this black-box engine its families are out of reach
    (conformance.v3.phase says so in verdict.json); `_row_id` reads are not declared."""
    if format_version == 2:
        return CAPABILITIES
    row_delete = A.ROW_DELETE if mode == MERGE_ON_READ else A.COW_DELETE
    return dataclasses.replace(CAPABILITIES, format_versions=frozenset({3}),
                               v3_operations=frozenset({A.APPEND, A.REWRITE, row_delete}),
                               dv_policy=A.DV_CONFLICT if mode == MERGE_ON_READ else None)


# -- one worker per process, one catalog per writer ---------------------------------------------

_catalogs: dict = {}            # (worker, kind, uri or warehouse, writer) -> catalog name
_catalogs_lock = threading.Lock()


def worker() -> java_env.JavaWorker:
    return java_env.shared_worker()


def catalog_for(ctx: A.TableContext, writer: int) -> str:
    """Writer `writer`'s Spark catalog for ctx's catalog (configured once per worker)."""
    rest = bool(ctx.catalog_uri and ctx.catalog_uri.startswith(("http://", "https://")))
    where = ctx.catalog_uri if rest else local_path(ctx.warehouse)
    w = worker()
    key = (id(w), "rest" if rest else "hadoop", where, writer)
    with _catalogs_lock:
        name = _catalogs.get(key)
        if name is None:
            name = _catalogs[key] = f"c{len(_catalogs) + 1}w{writer}"
            props = {"cache-enabled": "false", f"header.{WRITER_HEADER}": str(writer)}
            if rest:
                props["metrics-reporter-impl"] = IN_MEMORY_REPORTER     # Java's own attempt count
                java_env.add_catalog(w, name, "rest", uri=ctx.catalog_uri, properties=props)
            else:
                java_env.add_catalog(w, name, "hadoop", warehouse=f"file://{where}", properties=props)
    return name


def sql_string(value: str) -> str:
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def condition(where, column: str = A.COLUMN) -> str:
    if where is None:
        return "true"
    if not where:
        return "false"
    return f"{column} IN ({', '.join(sql_string(v) for v in sorted(where))})"


def rows_source(values) -> str:
    """A relation of one string column holding `values` (none: an empty relation)."""
    return (" UNION ALL ".join(f"SELECT {sql_string(v)} AS {A.COLUMN}" for v in sorted(values))
            or f"SELECT CAST(NULL AS STRING) AS {A.COLUMN} WHERE false")


def outcome_of_error(e: java_env.JavaError, attempts_max: int):
    """Java's exception -> the suite's outcome, or None (not a commit outcome: a failure)."""
    reason = f"{e.classes[0].rsplit('.', 1)[-1] if e.classes else '?'}: {e.message}"[:500]
    if e.caused_by("CommitStateUnknownException"):
        return A.Unknown(reason, 1)
    if e.caused_by("RESTException") or e.caused_by("SocketException") or e.caused_by("NoHttpResponseException"):
        # A commit whose answer never came (the connection dropped): Java 1.10.2 raises its
        # generic RESTException, untyped, and keeps its files; the state is unknown.
        return A.Unknown(f"untyped transport failure at the commit: {reason}", 1)
    if e.caused_by("CommitFailedException") or e.caused_by("ValidationException"):
        return A.Conflict(reason, attempts_max)
    if e.caused_by("IllegalArgumentException") and NOT_AN_ANCESTOR in e.message:
        # Observation J7 (docs/verdicts.md): a merge-on-read row delta retried after a
        # concurrent rollback took its starting snapshot off main fails its validation with
        # an untyped IllegalArgumentException, before any commit request: not applied.
        return A.Conflict(f"untyped validation failure: {reason}", attempts_max)
    return None


class JavaCommit:
    """A BlackBoxCommit: `run()` performs the whole operation in the worker."""

    def __init__(self, handle: "JavaTable", writer: int, op: A.OpSpec):
        self.handle, self.writer, self.op = handle, writer, op
        # main's head where the operation starts (a spec rollback holds while it is still there)
        self.start_head = handle.current_snapshot_id() if op.kind == A.ROLLBACK and handle.spec_rollback else None

    def run(self) -> A.Outcome:
        op, h = self.op, self.handle
        table = h.table_name(self.writer)
        props = {A.OP_ID_PROPERTY: op.op_id}
        w = worker()
        try:
            if op.kind == A.APPEND and h.table_api:
                w.call("table_append", table=table, column=A.COLUMN, values=list(op.rows), properties=props)
            elif op.kind == A.APPEND:
                w.call("append", table=table, values=list(op.rows),
                       options={f"snapshot-property.{A.OP_ID_PROPERTY}": op.op_id})
            elif op.kind == A.OVERWRITE:
                w.sql(f"MERGE INTO {table} t USING ({rows_source(op.rows)}) s ON t.{A.COLUMN} = s.{A.COLUMN} "
                      f"WHEN NOT MATCHED THEN INSERT * "
                      f"WHEN NOT MATCHED BY SOURCE AND {condition(op.where, 't.' + A.COLUMN)} THEN DELETE",
                      props)
            elif op.kind == A.DELETE and op.where and h.mode == MERGE_ON_READ and h.row_level_delete \
                    and h.mor_delete_by_merge:
                # (an empty or absent id set goes to DELETE below: a MERGE from an empty source
                # still commits an empty row delta, where the model's delete of nothing is a no-op)
                w.sql(f"MERGE INTO {table} t USING ({rows_source(op.where)}) s ON t.{A.COLUMN} = s.{A.COLUMN} "
                      f"WHEN MATCHED THEN DELETE", props)
            elif op.kind == A.DELETE:
                row_level = ROW_LEVEL if op.where and h.row_level_delete else ""
                w.sql(f"DELETE FROM {table} WHERE {condition(op.where)}{row_level}", props)
            elif op.kind == A.REWRITE:
                if op.where is not None:
                    raise UnsupportedOperation("Java adapter: a rewrite of the whole table only")
                if h.mode == MERGE_ON_READ and len(h.read_current().files) < 2:
                    # Fewer than two files with a live row: the model's compaction is a no-op.
                    # Java's planner also counts a data file whose every row a position delete
                    # hides (what a merge-on-read DELETE of a whole file leaves) and would
                    # rewrite the pair (docs/verdicts.md, the adapter's operations).
                    return A.Committed(None, 0)
                w.call("rewrite", table=table, options=REWRITE_OPTIONS, properties=props)
            elif op.kind == A.ROLLBACK and h.spec_rollback:
                if int(op.target_snapshot_id) == self.start_head:
                    return A.Committed(None, 0)                  # main is there already: a no-op
                attempts, location = w.call("set_main", table=table, target=int(op.target_snapshot_id),
                                            expected_head=self.start_head, attempts=h.ctx.commit_attempts_max)[0]
                return A.Committed(None, int(attempts), metadata_location=location)
            elif op.kind == A.ROLLBACK:
                w.sql(f"CALL {h.catalog(self.writer)}.system.rollback_to_snapshot({sql_string(h.ident)}, "
                      f"{int(op.target_snapshot_id)})", props)
            elif op.kind == A.EXPIRE:
                sent = w.call("expire", table=table, older_than_ms=EXPIRE_OLDER_THAN_MS, retain_last=op.retain_last,
                              assert_refs=h.spec_expire, attempts=h.ctx.commit_attempts_max)
                if sent:                         # the spec's expiry says how many requests it sent
                    attempts, location = sent[0]
                    return A.Committed(None, int(attempts), metadata_location=location or h._head()[1])
            else:
                raise UnsupportedOperation(f"Java adapter: no {op.kind!r}")
        except java_env.JavaError as e:
            outcome = outcome_of_error(e, h.ctx.commit_attempts_max)
            if outcome is None:
                raise A.EngineFailure(e) from e      # Java's own error, no outcome: judged, not ours
            return outcome
        return h.committed(op, self.writer)


class JavaTable:
    """The TableHandle over Iceberg-Java."""

    def __init__(self, ctx: A.TableContext, mode: str, row_level_delete: bool = True, spec_rollback: bool = True,
                 spec_expire: bool = True, mor_delete_by_merge: bool = True, table_api: bool = True):
        self.ctx, self.mode, self.row_level_delete, self.spec_rollback = ctx, mode, row_level_delete, spec_rollback
        self.spec_expire, self.mor_delete_by_merge, self.table_api = spec_expire, mor_delete_by_merge, table_api
        self.ident = ctx.identifier
        self.rest = (ctx.catalog_uri or "").startswith(("http://", "https://"))
        self._records: dict = {}                       # snapshot id -> SnapshotRecord
        self._record_counts: dict = {}                 # data file path -> rows written in it
        self._live: dict = {}                          # snapshot id -> files live in it (as read)
        if not self.rest:
            Path(local_path(ctx.warehouse)).mkdir(parents=True, exist_ok=True)
        w = worker()
        namespace, name = self.ident.rsplit(".", 1)
        retries = max(0, ctx.commit_attempts_max - 1)
        props = {"format-version": str(ctx.format_version), "commit.retry.num-retries": retries,
                 "commit.retry.min-wait-ms": 0, "commit.retry.max-wait-ms": 0, "write.delete.mode": mode,
                 "write.update.mode": mode, "write.merge.mode": mode, "write.delete.isolation-level": "serializable",
                 "write.merge.isolation-level": "serializable"}
        if table_api:
            w.call("create", catalog=self.catalog(READER), namespace=namespace, name=name, column=A.COLUMN,
                   properties={k: str(v) for k, v in props.items()})
        else:
            w.sql(f"CREATE NAMESPACE IF NOT EXISTS {self.catalog(READER)}.{namespace}")
            w.sql(f"CREATE TABLE {self.table_name(READER)} ({A.COLUMN} string NOT NULL) USING iceberg "
                  f"TBLPROPERTIES ({', '.join(f'{sql_string(k)}={sql_string(v)}' for k, v in props.items())})")

    def catalog(self, writer: int) -> str:
        return catalog_for(self.ctx, writer)

    def table_name(self, writer: int) -> str:
        return f"{self.catalog(writer)}.{self.ident}"

    # -- writers ---------------------------------------------------------------------------

    def begin(self, writer: int, op: A.OpSpec) -> JavaCommit:
        if op.kind not in CAPABILITIES.operations:
            raise UnsupportedOperation(f"Java adapter: no {op.kind!r} (see its capabilities)")
        return JavaCommit(self, writer, op)

    def committed(self, op: A.OpSpec, writer: int) -> A.Committed:
        """The outcome of an operation Java reported done: its snapshot, by op id (none for
        a rollback or expiry, which make none: their metadata file instead; none either for
        a no-op), and the attempts of Java's CommitReport (a rollback or expiry reports
        none: one is counted)."""
        if op.kind in (A.ROLLBACK, A.EXPIRE):
            # No snapshot: it lands as the metadata file it wrote, the table's current one
            # now (the lockstep holds every other writer's commit while this one ends).
            return A.Committed(None, 1, metadata_location=self._head()[1])
        (tagged, report), = worker().call("committed", table=self.table_name(READER), catalog=self.catalog(writer),
                                          property=A.OP_ID_PROPERTY, value=op.op_id)
        if tagged is None:
            return A.Committed(None, 0)      # nothing to do: no commit
        sid = int(tagged)
        attempts = 1
        if self.rest and report and int(report[0][0]) == sid:
            attempts = int(report[0][1])
        return A.Committed(sid, attempts)

    # -- readers ---------------------------------------------------------------------------

    def _head(self) -> tuple:
        """(main's head snapshot id or None, the current metadata file), as the catalog
        loads the table now (Iceberg's Table API: no Spark job)."""
        head, location = worker().call("head", table=self.table_name(READER))[0]
        return (None if head is None else int(head)), location

    def current_snapshot_id(self) -> int | None:
        return self._head()[0]

    def read_current(self) -> A.ReadResult:
        if self.table_api:
            (sid, _, (rows, record_counts)), = worker().call("current_rows", table=self.table_name(READER),
                                                             column=A.COLUMN)
            if sid is None:
                return A.ReadResult(None, (), frozenset())
            return self._read_result(int(sid), rows, record_counts)
        sid = self.current_snapshot_id()
        if sid is None:
            return A.ReadResult(None, (), frozenset())
        return self.read_at(sid)

    def read_at(self, snapshot_id: int) -> A.ReadResult:
        """The snapshot's rows, each with its data file: Iceberg-Java's generic reader
        (worker op "rows": scan planning, deletes applied, no Spark job), or with
        table_api=False a Spark SQL `VERSION AS OF` query."""
        if self.table_api:
            return self._read_result(snapshot_id, *worker().call(
                "rows", table=self.table_name(READER), snapshot_id=int(snapshot_id), column=A.COLUMN))
        rows = worker().sql(f"SELECT _file, {A.COLUMN} FROM {self.table_name(READER)} VERSION AS OF {int(snapshot_id)}")
        return self._read_result(snapshot_id, rows)

    def _read_result(self, snapshot_id: int, rows, record_counts=()) -> A.ReadResult:
        self._record_counts.update((path, int(n)) for path, n in record_counts)
        files = self._live[snapshot_id] = self._file_names(rows, snapshot_id)
        return A.ReadResult(snapshot_id, tuple(sorted(r[1] for r in rows)), files)

    def read_incremental(self, since_snapshot_id: int) -> A.ReadResult:
        if int(since_snapshot_id) == self.current_snapshot_id():
            # Nothing was appended since main's head; Java's incremental append scan refuses
            # a start equal to its end (IllegalArgumentException "... is not a parent
            # ancestor of end snapshot": observation J3 of docs/verdicts.md, pinned by
            # tests/java/test_java_observations.py), so the adapter answers the empty read.
            return A.ReadResult(None, (), None)
        if self.table_api:
            rows = worker().call("appended", table=self.table_name(READER), since=int(since_snapshot_id),
                                 column=A.COLUMN)
            return A.ReadResult(None, tuple(sorted(r[1] for r in rows)), None)
        rows = worker().call("read", table=self.table_name(READER), columns=[A.COLUMN],
                             options={"start-snapshot-id": str(int(since_snapshot_id))})
        return A.ReadResult(None, tuple(sorted(r[0] for r in rows)), None)

    def _file_names(self, rows, snapshot_id: int) -> frozenset:
        """Data files as the reader saw them: path, or path#live-rows once deletes hide some
        (a file's rows written: from the snapshot's scan plan, once per file)."""
        live: dict = {}
        for path, row in rows:
            live.setdefault(path, []).append(row)
        unknown = [p for p in live if p not in self._record_counts]
        if unknown:
            self._record_counts.update(
                (r[0], int(r[1])) for r in worker().call("data_files", table=self.table_name(READER),
                                                         snapshot_id=int(snapshot_id)))
        out = set()
        for path, vals in live.items():
            full = self._record_counts.get(path)
            out.add(path if full == len(vals) else
                    f"{path}#{hashlib.sha1(','.join(sorted(vals)).encode()).hexdigest()[:10]}")
        return frozenset(out)

    # -- history ---------------------------------------------------------------------------------

    def history(self) -> A.TableHistory:
        location = self._head()[1]
        return A.history_from_metadata_log(location, read_metadata(location), read_metadata, self._snapshot_record)

    def _files_live(self, snapshot_id) -> frozenset | None:
        """The files live in a snapshot, as read when it was retained (every head is read
        after the step that made it; an expired snapshot cannot be read any more)."""
        if snapshot_id is None:
            return frozenset()
        if snapshot_id not in self._live:
            try:
                self.read_at(snapshot_id)
            except java_env.JavaError:
                return None                        # expired before anyone read it
        return self._live[snapshot_id]

    def _snapshot_record(self, s) -> A.SnapshotRecord:
        if s.snapshot_id not in self._records:
            live = self._files_live(s.snapshot_id)
            parent = s.parent_snapshot_id
            before = self._files_live(parent)
            known = live is not None and before is not None
            live = live or frozenset()
            added = live - before if known else frozenset()
            removed = before - live if known else frozenset()
            self._records[s.snapshot_id] = A.SnapshotRecord(
                s.snapshot_id, parent, s.summary.get("operation", ""), live, added, removed, None,
                s.summary.get(A.OP_ID_PROPERTY))
        return self._records[s.snapshot_id]

    def remove_orphans(self, older_than_ms: int) -> list:
        raise UnsupportedOperation("the Java adapter does not declare orphan removal")

    def close(self) -> None:
        pass     # the worker outlives tables; its catalogs are reused


class JavaEngine:
    def __init__(self, mode: str = COPY_ON_WRITE, row_level_delete: bool = True, spec_rollback: bool = True,
                 spec_expire: bool = True, mor_delete_by_merge: bool = True, format_version: int = 2,
                 table_api: bool = True):
        if mode not in (COPY_ON_WRITE, MERGE_ON_READ):
            raise A.EngineSpecError(f"mode must be {COPY_ON_WRITE} or {MERGE_ON_READ}, not {mode!r}")
        if format_version not in (2, 3):
            raise A.EngineSpecError(f"format_version must be 2 or 3, not {format_version!r}")
        self.mode, self.row_level_delete, self.spec_rollback = mode, row_level_delete, spec_rollback
        self.spec_expire, self.mor_delete_by_merge = spec_expire, mor_delete_by_merge
        self.format_version, self.table_api = format_version, table_api
        self.capabilities = capabilities(mode, format_version)
        self.name = (("java" if mode == COPY_ON_WRITE else "java-mor") + ("" if row_level_delete else "-metadata-delete")
                     + ("" if spec_rollback else "-procedure-rollback") + ("" if spec_expire else "-plain-expire")
                     + ("" if mor_delete_by_merge or mode == COPY_ON_WRITE else "-plain-delete")
                     + ("" if format_version == 2 else f"-v{format_version}") + ("" if table_api else "-spark-io"))

    def create_table(self, ctx: A.TableContext) -> JavaTable:
        if ctx.format_version not in self.capabilities.format_versions:
            raise UnsupportedOperation(f"{self.name} creates format v{self.format_version} tables, not the "
                                       f"v{ctx.format_version} table the suite asked for")
        return JavaTable(ctx, self.mode, self.row_level_delete, self.spec_rollback, self.spec_expire,
                         self.mor_delete_by_merge, self.table_api)


def engine() -> JavaEngine:
    """`icefloe conform --engine java`: Iceberg-Java 1.10.2, copy-on-write (needs `make java-venv`)."""
    return JavaEngine(COPY_ON_WRITE)


def engine_mor() -> JavaEngine:
    """`icefloe conform --engine java-mor`: the same, merge-on-read."""
    return JavaEngine(MERGE_ON_READ)


def engine_v3() -> JavaEngine:
    """`icefloe conform --engine java-v3`: copy-on-write on format v3 tables (row lineage
    on; its deletes rewrite data files)."""
    return JavaEngine(COPY_ON_WRITE, format_version=3)


def engine_mor_v3() -> JavaEngine:
    """`icefloe conform --engine java-mor-v3`: merge-on-read on format v3 tables, its
    deletes deletion vectors (one Puffin blob per data file, a new DV replacing the old)."""
    return JavaEngine(MERGE_ON_READ, format_version=3)


def engine_mor_v3_no_incremental() -> JavaEngine:
    """`--engine icefloe.conformance.engines.java_engine:engine_mor_v3_no_incremental`:
    java-mor-v3 declaring no incremental read, so that its verdict goes past J8 (an
    overwrite that only adds rows is labelled `overwrite` and Java's incremental append scan
    leaves it out: docs/verdicts.md) and judges every other property on v3 with DVs."""
    engine = JavaEngine(MERGE_ON_READ, format_version=3)
    engine.capabilities = dataclasses.replace(engine.capabilities, reads=frozenset({A.READ_CURRENT, A.READ_AT}))
    engine.name += "-no-incremental"
    return engine


def engine_spark_io() -> JavaEngine:
    """`--engine icefloe.conformance.engines.java_engine:engine_spark_io`: copy-on-write with
    the adapter's appends and snapshot reads as Spark jobs (DataFrameWriterV2 append, SQL
    `VERSION AS OF`), the path before java_tables (docs/verdicts.md: what a verdict's time
    went to); everything judged is the same."""
    return JavaEngine(COPY_ON_WRITE, table_api=False)


def engine_metadata_delete() -> JavaEngine:
    """`--engine icefloe.conformance.engines.java_engine:engine_metadata_delete`: copy-on-write
    with Spark's plain `DELETE FROM t WHERE id IN (...)`, which Iceberg runs as a
    metadata-only delete (observation J1 of docs/verdicts.md)."""
    return JavaEngine(COPY_ON_WRITE, row_level_delete=False)


def engine_procedure_rollback() -> JavaEngine:
    """`--engine icefloe.conformance.engines.java_engine:engine_procedure_rollback`:
    copy-on-write with Java's own `CALL system.rollback_to_snapshot` (finding J2 of
    docs/verdicts.md: its retry moves main back over a commit made meanwhile)."""
    return JavaEngine(COPY_ON_WRITE, spec_rollback=False)


def engine_plain_expire() -> JavaEngine:
    """`--engine icefloe.conformance.engines.java_engine:engine_plain_expire`: copy-on-write
    with Java's own `Table.expireSnapshots()` commit, whose `remove-snapshots` request
    asserts nothing but the table's uuid (observations J4 and J5 of docs/verdicts.md: the
    server applies the ids planned on the client's base to the table as it is now)."""
    return JavaEngine(COPY_ON_WRITE, spec_expire=False)


def engine_mor_plain_delete() -> JavaEngine:
    """`--engine icefloe.conformance.engines.java_engine:engine_mor_plain_delete`:
    merge-on-read with Spark's row-level `DELETE FROM`, which Iceberg validates without
    checking concurrent deletes of its rows (observation J6 of docs/verdicts.md)."""
    return JavaEngine(MERGE_ON_READ, mor_delete_by_merge=False)
