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

Operations, each one Spark statement in the writer's catalog, tagged with the suite's op
id (a write option, or Iceberg's CommitMetadata commit properties for SQL):
  append     DataFrameWriterV2 `append()` (one data file);
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

Reads, Java's own, each a Spark read: current (`VERSION AS OF` main's head), at-snapshot,
incremental (the `start-snapshot-id` read option: Iceberg's incremental append scan). The
adapter's bookkeeping (main's head, the snapshot an op id tags, data files' record counts,
the current metadata file) asks Iceberg's Table API in the worker: no Spark job, one
loadTable request (docs/verdicts.md: a program's seconds, before and after). Files read and the
history: a data file is named by its path while all its rows are live; once a delete
file (merge-on-read) hides some, by its path and the rows still live, so a merge-on-read
delete shows as the file's removal and a new version, as a copy-on-write one does.
"""
from __future__ import annotations

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
            if op.kind == A.APPEND:
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
                 spec_expire: bool = True, mor_delete_by_merge: bool = True):
        self.ctx, self.mode, self.row_level_delete, self.spec_rollback = ctx, mode, row_level_delete, spec_rollback
        self.spec_expire, self.mor_delete_by_merge = spec_expire, mor_delete_by_merge
        self.ident = ctx.identifier
        self.rest = (ctx.catalog_uri or "").startswith(("http://", "https://"))
        self._records: dict = {}                       # snapshot id -> SnapshotRecord
        self._record_counts: dict = {}                 # data file path -> rows written in it
        self._live: dict = {}                          # snapshot id -> files live in it (as read)
        if not self.rest:
            Path(local_path(ctx.warehouse)).mkdir(parents=True, exist_ok=True)
        w = worker()
        namespace = self.ident.rsplit(".", 1)[0]
        w.sql(f"CREATE NAMESPACE IF NOT EXISTS {self.catalog(READER)}.{namespace}")
        retries = max(0, ctx.commit_attempts_max - 1)
        props = {"format-version": "2", "commit.retry.num-retries": retries, "commit.retry.min-wait-ms": 0,
                 "commit.retry.max-wait-ms": 0, "write.delete.mode": mode, "write.update.mode": mode,
                 "write.merge.mode": mode, "write.delete.isolation-level": "serializable",
                 "write.merge.isolation-level": "serializable"}
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
        rows = worker().call("tagged", table=self.table_name(READER), property=A.OP_ID_PROPERTY, value=op.op_id)
        if not rows:
            return A.Committed(None, 0)      # nothing to do: no commit
        sid = int(rows[0][0])
        attempts = 1
        if self.rest:
            report = worker().call("last_commit", catalog=self.catalog(writer))
            if report and int(report[0][0]) == sid:
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
        sid = self.current_snapshot_id()
        if sid is None:
            return A.ReadResult(None, (), frozenset())
        return self.read_at(sid)

    def read_at(self, snapshot_id: int) -> A.ReadResult:
        rows = worker().sql(f"SELECT _file, {A.COLUMN} FROM {self.table_name(READER)} "
                            f"VERSION AS OF {int(snapshot_id)}")
        files = self._live[snapshot_id] = self._file_names(rows, snapshot_id)
        return A.ReadResult(snapshot_id, tuple(sorted(r[1] for r in rows)), files)

    def read_incremental(self, since_snapshot_id: int) -> A.ReadResult:
        if int(since_snapshot_id) == self.current_snapshot_id():
            # Nothing was appended since main's head; Java's incremental append scan refuses
            # a start equal to its end (IllegalArgumentException "... is not a parent
            # ancestor of end snapshot": observation J3 of docs/verdicts.md, pinned by
            # tests/java/test_java_observations.py), so the adapter answers the empty read.
            return A.ReadResult(None, (), None)
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
    capabilities = CAPABILITIES

    def __init__(self, mode: str = COPY_ON_WRITE, row_level_delete: bool = True, spec_rollback: bool = True,
                 spec_expire: bool = True, mor_delete_by_merge: bool = True):
        if mode not in (COPY_ON_WRITE, MERGE_ON_READ):
            raise A.EngineSpecError(f"mode must be {COPY_ON_WRITE} or {MERGE_ON_READ}, not {mode!r}")
        self.mode, self.row_level_delete, self.spec_rollback = mode, row_level_delete, spec_rollback
        self.spec_expire, self.mor_delete_by_merge = spec_expire, mor_delete_by_merge
        self.name = (("java" if mode == COPY_ON_WRITE else "java-mor") + ("" if row_level_delete else "-metadata-delete")
                     + ("" if spec_rollback else "-procedure-rollback") + ("" if spec_expire else "-plain-expire")
                     + ("" if mor_delete_by_merge or mode == COPY_ON_WRITE else "-plain-delete"))

    def create_table(self, ctx: A.TableContext) -> JavaTable:
        return JavaTable(ctx, self.mode, self.row_level_delete, self.spec_rollback, self.spec_expire,
                         self.mor_delete_by_merge)


def engine() -> JavaEngine:
    """`icefloe conform --engine java`: Iceberg-Java 1.10.2, copy-on-write (needs `make java-venv`)."""
    return JavaEngine(COPY_ON_WRITE)


def engine_mor() -> JavaEngine:
    """`icefloe conform --engine java-mor`: the same, merge-on-read."""
    return JavaEngine(MERGE_ON_READ)


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
