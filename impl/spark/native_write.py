"""The native write path (docs/spark.md "Writing"; spec/PROTOCOL.md 5 "Writer phases",
9 "Commit outcomes"): Spark's own Parquet writer writes the data files, icefloe commits
them.

    from icefloe.impl.spark import write
    write(df, "cat.db.t", opts)                                     # append
    write(df, "cat.db.t", opts, mode="overwrite", overwrite_filter="day = '2024-01-02'")
    write(df, "cat.db.t", opts, mode="dynamic")                     # replace the partitions written

1. The DataFrame is conformed to the table schema (columns by name, Spark's safe
   widenings only, required columns checked in the job) and every column carries its
   Iceberg field id (`parquet.field.id`); timestamps are written as INT64 microseconds.
2. The table's partition spec becomes partition columns computed in Spark
   (transforms_sql.py) and `partitionBy` lays the files out, one partition per file.
3. Spark writes under the job prefix `<table>/data/spark-<job id>/` (job.py); its output
   committer keeps failed and speculative attempts out of that folder.
4. A Spark job on the executors reads each file's footer and builds its DataFile
   (footers.py), while the driver makes them durable (fsync: Spark's writer does not); the
   driver commits one snapshot through the commit loop (job.py:
   abort and Unknown rules as for the data source: nothing is deleted after Unknown;
   a failed job leaves no file).

Spark's Parquet writer here has a local file system only (hadoop-aws is not shipped with
PySpark), and cannot give list elements or map entries field ids; such tables, and
writes to S3, go through the `icefloe` Python data source (`fallback_reason`).
"""
from __future__ import annotations

import contextlib
import json
import uuid
from typing import Callable

from icefloe.impl.format import expressions as E
from icefloe.impl.format import types as T
from icefloe.impl.format.expression_parser import parse as parse_filter
from icefloe.impl.format.metadata import MAIN_BRANCH
from icefloe.impl.format.parquet import DataFileError
from icefloe.impl.format.partitioning import TooManyFiles, data_files_max
from icefloe.impl.io.locations import scheme_of
from icefloe.impl.outcomes import Committed, require_committed
from icefloe.impl.table.append_schema import SchemaMismatch
from icefloe.impl.table.producer import SERIALIZABLE, SNAPSHOT
from icefloe.impl.spark import sql_filters as SF
from icefloe.impl.spark.footers import driver_pool
from icefloe.impl.spark.job_tasks import tagged, wait_for_tasks
from icefloe.impl.spark.job import JobFiles, JobResult, abort_job, commit_job
from icefloe.impl.spark.task_commits import TaskCommitWatch
from icefloe.impl.spark.options import SparkOptionError, table_ref
from icefloe.impl.spark.producers import AppendFiles, OverwriteFiles, ReplacePartitions
from icefloe.impl.spark.transforms_sql import NotNative, partition_chains, quote, with_partition_columns

APPEND, OVERWRITE, DYNAMIC = "append", "overwrite", "dynamic"
FIELD_ID = "parquet.field.id"
# Per-job Hadoop settings (DataFrameWriter options reach the job's Hadoop configuration):
# no _SUCCESS marker and no .crc side files in the table's data folder.
HADOOP_OPTIONS = {"mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
                  "fs.file.impl": "org.apache.hadoop.fs.RawLocalFileSystem",
                  "fs.file.impl.disable.cache": "true"}
TIMESTAMP_TYPE, FIELD_ID_WRITE = "spark.sql.parquet.outputTimestampType", "spark.sql.parquet.fieldId.write.enabled"


def spark_type(t: T.IcebergType):
    """The Spark type of an Iceberg type, struct fields carrying their field ids."""
    from pyspark.sql import types as S
    if isinstance(t, T.StructType):
        return S.StructType([S.StructField(f.name, spark_type(f.type), not f.required, {FIELD_ID: f.field_id})
                             for f in t.fields])
    if isinstance(t, (T.ListType, T.MapType)):
        raise NotNative("Spark's Parquet writer cannot give list elements or map entries field ids")
    simple = {T.BooleanType: S.BooleanType(), T.IntegerType: S.IntegerType(), T.LongType: S.LongType(),
              T.FloatType: S.FloatType(), T.DoubleType: S.DoubleType(), T.DateType: S.DateType(),
              T.TimestampType: S.TimestampNTZType(), T.TimestamptzType: S.TimestampType(),
              T.StringType: S.StringType(), T.BinaryType: S.BinaryType()}
    if type(t) in simple:
        return simple[type(t)]
    if isinstance(t, T.DecimalType):
        return S.DecimalType(t.precision, t.scale)
    raise NotNative(f"no Spark type for {t}")


def _widens(src, dst) -> bool:
    """Spark's safe store assignments that change no value (the spec's promotions)."""
    from pyspark.sql import types as S
    if src.simpleString() == dst.simpleString():
        return True
    ints = (S.ByteType, S.ShortType, S.IntegerType, S.LongType)
    if isinstance(src, ints) and isinstance(dst, ints):
        return ints.index(type(src)) <= ints.index(type(dst))
    if isinstance(src, S.FloatType) and isinstance(dst, S.DoubleType):
        return True
    if isinstance(src, S.DecimalType) and isinstance(dst, S.DecimalType):
        return src.scale == dst.scale and src.precision <= dst.precision
    if isinstance(src, S.StructType) and isinstance(dst, S.StructType):
        return ([f.name for f in src.fields] == [f.name for f in dst.fields]
                and all(_widens(a.dataType, b.dataType) for a, b in zip(src.fields, dst.fields)))
    return False


def sql_type(t: T.IcebergType) -> str:
    """The Spark SQL name of an Iceberg type (for casts written as SQL)."""
    if isinstance(t, T.StructType):
        return "struct<" + ", ".join(f"{quote(f.name)}: {sql_type(f.type)}" for f in t.fields) + ">"
    if isinstance(t, T.DecimalType):
        return f"decimal({t.precision}, {t.scale})"
    names = {T.BooleanType: "boolean", T.IntegerType: "int", T.LongType: "bigint", T.FloatType: "float",
             T.DoubleType: "double", T.DateType: "date", T.TimestampType: "timestamp_ntz",
             T.TimestamptzType: "timestamp", T.StringType: "string", T.BinaryType: "binary"}
    if type(t) not in names:
        raise NotNative(f"no Spark type for {t}")
    return names[type(t)]


def sql_string(text: str) -> str:
    """A Spark SQL string literal (backslash escapes are on by default)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


JVM_VALUES_MAX = 1024


class _Jvm:
    """JVM handles the write path calls through py4j, looked up once per gateway: every
    attribute step of `jvm.org.apache...` is a round trip to the JVM, and on a loaded
    machine each round trip waits for both processes to be scheduled."""
    _cache: dict = {}

    def __init__(self, spark):
        jvm = spark.sparkContext._jvm
        # static methods, resolved once (each lookup on a class is a round trip too)
        self.expr = jvm.org.apache.spark.sql.functions.expr
        self.metadata_from_json = jvm.org.apache.spark.sql.types.Metadata.fromJson
        self.to_seq = jvm.org.apache.spark.api.python.PythonUtils.toSeq
        self._made: dict = {}

    def once(self, key, make):
        """A JVM value that never changes (a data type, a column expression: both immutable),
        made at its first use through this gateway and reused: making one is one or more round
        trips on the write's critical path (parsing a schema's JSON ~1 ms, an aliased column
        with its field id three). At most JVM_VALUES_MAX are held."""
        found = self._made.get(key)
        if found is None:
            if len(self._made) >= JVM_VALUES_MAX:
                self._made.clear()
            found = self._made[key] = make()
        return found

    @classmethod
    def of(cls, spark) -> "_Jvm":
        gateway = spark.sparkContext._gateway
        found = cls._cache.get(id(gateway))
        if found is None or found[0] is not gateway:
            found = cls._cache[id(gateway)] = (gateway, cls(spark))
        return found[1]


def conform(df, schema: T.Schema, source=None, also=()):
    """`df` as the table's columns, in schema order, each with its field id, then the
    `also` columns ((name, SQL text or Column) over the table's columns: the partition
    columns). The names and types are checked here, in Python (SchemaMismatch).

    A frame Spark has cached, whose columns are the table's as they are (same names, order
    and types, no null check, no struct), is relabelled: `DataFrame.to(schema)` gives its columns their
    field ids and nothing else, so the relabelled plan is the cached plan and Spark
    substitutes the cache with the field ids on its output: the rows are written as they
    are stored, not copied through a projection. Otherwise each column is an aliased
    expression carrying its field id, built on the JVM side directly in three round trips
    (SQL expression, field id metadata, alias; PySpark's Column API takes a dozen); over a
    computed frame the projection folds into the one before it. (An attribute relabelled
    over a computed frame loses its metadata when the optimizer folds the projections, so
    the relabel is for cached frames only.) Where every column is the frame's as it is, the
    `also` columns join the same projection (Spark analyses each new frame: ~13 ms a time);
    otherwise a second projection adds them over the conformed columns."""
    spark = df.sparkSession
    source = source or df.schema
    by_name = {f.name: f for f in source.fields}
    lower: dict = {}
    for f in source.fields:
        lower.setdefault(f.name.lower(), []).append(f)
    used, exprs, as_stored = set(), [], True
    for f in schema.fields:
        target = spark_type(f.type)
        found = by_name.get(f.name)
        if found is None and len(lower.get(f.name.lower(), [])) == 1:
            found = lower[f.name.lower()][0]
        if found is None:
            if f.required:
                raise SchemaMismatch(f"required column {f.name!r} is missing")
            exprs.append((f, f"cast(null as {sql_type(f.type)})", False, True))
            as_stored = False
            continue
        used.add(found.name)
        if not _widens(found.dataType, target):
            raise SchemaMismatch(f"column {f.name!r}: {found.dataType.simpleString()} does not fit "
                                 f"{target.simpleString()} ({f.type})")
        sql = quote(found.name)
        if found.dataType.simpleString() != target.simpleString():
            sql = f"cast({sql} as {sql_type(f.type)})"
        if f.required and found.nullable:  # Spark knows a non-nullable column holds no null
            message = sql_string(f"required column {f.name!r} has a null")
            sql = f"case when {sql} is null then raise_error({message}) else {sql} end"
        # a struct goes through the projection: its fields' ids ride on the type it is cast to
        as_stored = as_stored and sql == quote(f.name) and not isinstance(f.type, T.StructType)
        exprs.append((f, sql, isinstance(f.type, T.StructType), found.nullable))
    unknown = sorted({f.name for f in source.fields} - used)
    if unknown:
        raise SchemaMismatch(f"columns {unknown} are not in the table's schema")
    jvm = _Jvm.of(spark)
    if not also and as_stored and [f.name for f in source.fields] == [f.name for f in schema.fields] \
            and _is_cached(df):
        from pyspark.sql import types as S
        target = S.StructType([S.StructField(f.name, spark_type(f.type), nullable, {FIELD_ID: f.field_id})
                               for f, _, _, nullable in exprs])
        text = target.json()
        return type(df)(df._jdf.to(jvm.once(("type", text), lambda: spark._jsparkSession.parseDataType(text))), spark)

    def reused(plain: bool, key, make):
        # a column that only names a column is reused; one with a cast (a struct is cast to
        # the type carrying its fields' ids) or any function is made anew: Spark fixes a
        # cast's ANSI mode from the session when it parses it
        return jvm.once(key, make) if plain else make()
    columns = [reused(_names_a_column(sql) and not nested, ("column", sql, f.name, f.field_id),
                      lambda: _column(spark, jvm, f, sql, nested)) for f, sql, nested, _ in exprs]
    added = [reused(_names_a_column(sql), ("column", sql, name), lambda: getattr(jvm.expr(sql), "as")(name))
             if isinstance(sql, str) else sql.alias(name)._jc for name, sql in also]
    if all(sql == quote(f.name) for f, sql, _, _ in exprs):  # the SQL of `also` reads the same values here
        return type(df)(df._jdf.select(jvm.to_seq(columns + added)), spark)
    out = type(df)(df._jdf.select(jvm.to_seq(columns)), spark)
    return type(df)(out._jdf.select(jvm.to_seq([jvm.expr("*")] + added)), spark) if added else out


def _names_a_column(sql: str) -> bool:
    """Whether `sql` is one quoted column name (as `quote` writes it) and nothing else."""
    return len(sql) >= 2 and sql[0] == sql[-1] == "`" and "`" not in sql[1:-1].replace("``", "")


def _column(spark, jvm: _Jvm, f: T.NestedField, sql: str, nested: bool):
    """The JVM column `sql AS name` carrying the field id of `f`."""
    column = jvm.expr(sql)
    if nested:  # a struct's own fields get their field ids from the type cast to
        column = column.cast(spark._jsparkSession.parseDataType(spark_type(f.type).json()))
    return getattr(column, "as")(f.name, jvm.metadata_from_json(json.dumps({FIELD_ID: f.field_id})))


def _is_cached(df) -> bool:
    """Whether Spark's cache manager holds `df`'s plan (two round trips to the JVM)."""
    if not df.is_cached:  # PySpark knows the frames persisted through it; others are not relabelled
        return False
    sc = df.sparkSession.sparkContext
    found = _CACHE_MANAGERS.get(id(sc))
    if found is None or found[0] is not sc:  # one per SparkContext; a new context has its own
        found = _CACHE_MANAGERS[id(sc)] = (sc, df.sparkSession._jsparkSession.sharedState().cacheManager())
    return bool(found[1].lookupCachedData(df._jdf).isDefined())


_CACHE_MANAGERS: dict = {}


def fallback_reason(table, schema: T.Schema) -> str | None:
    """Why this table is written through the Python data source, or None."""
    if scheme_of(table.location) != "file":
        return (f"Spark's Parquet writer has no file system for {scheme_of(table.location)}:// here "
                "(hadoop-aws is not shipped with PySpark)")
    try:
        for f in schema.fields:
            spark_type(f.type)
    except NotNative as e:
        return str(e)
    return None


@contextlib.contextmanager
def session_conf(spark, conf: dict):
    """Set SQL settings for one job and restore them (the Parquet writer reads them from
    the session, not from write options); a setting that already has its value is left
    alone (a round trip to the JVM each, on the write's critical path). Both settings the
    write changes have defaults, so a restore sets the value in effect before."""
    before = {k: spark.conf.get(k) for k in conf}
    changed = {k: before[k] for k, v in conf.items() if before[k] != v}
    for k in changed:
        spark.conf.set(k, conf[k])
    try:
        yield
    finally:
        for k, v in changed.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def _has_timestamps(t) -> bool:
    if isinstance(t, (T.TimestampType, T.TimestamptzType)):
        return True
    return isinstance(t, T.StructType) and any(_has_timestamps(f.type) for f in t.fields)


def write_conf(schema: T.Schema) -> dict:
    """The session settings a write of `schema` needs (timestamps as INT64 microseconds,
    not INT96; field ids in the Parquet schema, Spark's default)."""
    conf = {FIELD_ID_WRITE: "true"}
    if _has_timestamps(schema.as_struct()):
        conf[TIMESTAMP_TYPE] = "TIMESTAMP_MICROS"
    return conf


def _written(job: JobFiles) -> list[str]:
    marker_dir = f"{job.prefix}_job/"
    return sorted(p for p in job.data_files()
                  if p.endswith(".parquet") and "/_temporary/" not in p and not p.startswith(marker_dir))


def write_job(frame, table, schema: T.Schema, spec, partition_columns, limit: int | None = None):
    """Spark's Parquet writer writes `frame` (the table's columns, conformed, then the
    partition columns) under a new job prefix: field ids, fsyncs and footers read while the
    job's tasks commit (task_commits.py). Returns (job, DataFiles, the fsyncs' future, the
    watch); more than `limit` files is TooManyFiles. A failed job leaves no file."""
    job = JobFiles(table.io, table.location, uuid.uuid4().hex)
    spark = frame.sparkSession
    durable = watch = None
    with tagged(spark) as tag:
        try:
            with session_conf(spark, write_conf(schema)):
                writer = frame.write.mode("append").options(**HADOOP_OPTIONS)
                if partition_columns:
                    writer = writer.partitionBy(*partition_columns)
                # the files of tasks that have committed are fsynced and their footers read
                # while the job's other tasks run (task_commits.py)
                with TaskCommitWatch(job.prefix, schema, spec, driver_pool(), job.fsyncing_store()) as watch:
                    writer.parquet(job.prefix)
            written = _written(job)
            # Spark closed its files without an fsync: they are made durable (as icefloe's own
            # puts are; but those the watch fsynced as the same files, whose folders are) in a
            # driver thread while the footers left are read and the commit writes its
            # manifests, list and metadata; its swap waits for them (commit_job's `ready`).
            # (`synced` waits for the watch's fsyncs of the last tasks' files, if still running.)
            durable = driver_pool().submit(lambda: job.persist(written, synced=watch.synced(written)))
            files = watch.describe(spark, written)
            if limit is not None and len(files) > limit:
                raise TooManyFiles(len(files), limit)
        except BaseException:
            # Nothing was committed: every file under the job prefix goes, once the failed
            # job's other tasks (killed asynchronously by Spark) have stopped writing.
            wait_for_tasks(spark, tag)
            if durable is not None:
                durable.exception()  # its fsyncs are over before the files go
            if watch is not None:
                watch.settle()  # and the watch's
            abort_job(job)
            raise
    return job, files, durable, watch


def write_frame(frame, table, schema: T.Schema, spec):
    """Spark's Parquet writer writes `frame` (the columns of `schema`) under a new job
    prefix as `write` does (field ids, partition columns, footers read and
    files fsynced while the job runs); returns (job, DataFiles, the fsyncs' future, the
    watch). A failed job leaves no file."""
    names = [f.name for f in schema.fields]
    chains, partition_columns = partition_chains(schema, spec, names)
    one_step = all(len(chain) == 1 for chain in chains)
    out = conform(frame, schema, frame.schema, [chain[0] for chain in chains] if one_step else ())
    if not one_step:
        out, partition_columns = with_partition_columns(out, schema, spec, names)
    return write_job(out, table, schema, spec, partition_columns)


def write(df, path: str, options: dict | None = None, *, mode: str = APPEND, overwrite_filter: str | None = None,
          isolation_level: str | None = None, branch: str | None = None,
          before_swap: Callable[[], None] | None = None) -> JobResult | None:
    """Write `df` to the table `path` names (options as for the data source, docs/spark.md)
    and commit one snapshot. Returns the JobResult; raises CommitConflictError /
    CommitStateUnknownError as the data source does. Tables the native path cannot write
    (fallback_reason) go through the data source, and None is returned. `before_swap`
    (injected scheduling, e.g. the demo pipeline's barriers) is called once, when the
    commit's first attempt is about to swap (job.commit_job)."""
    from icefloe.impl.spark.source import _load_or_create
    opts = dict(options or {})
    ref = table_ref(opts, path)
    if mode not in (APPEND, OVERWRITE, DYNAMIC):
        raise SparkOptionError(f"mode must be {APPEND!r}, {OVERWRITE!r} or {DYNAMIC!r}, not {mode!r}")
    if ref.read_only:
        raise SparkOptionError(f"{ref.metadata_file} is a metadata file: name a catalog table to write")
    branch = branch or ref.get("branch", MAIN_BRANCH)
    isolation = isolation_level or ref.get("isolation-level", SERIALIZABLE)
    if isolation not in (SERIALIZABLE, SNAPSHOT):
        raise SparkOptionError(f"isolation-level must be {SERIALIZABLE!r} or {SNAPSHOT!r}")
    source = df.schema  # two round trips: asked once
    table = _load_or_create(ref, source)
    metadata = table.metadata
    schema, spec = metadata.schema(), metadata.spec()
    reason = fallback_reason(table, schema)
    filter_text = (overwrite_filter or ref.get("overwrite-filter") or "true") if mode == OVERWRITE else None
    if reason is not None:
        if mode == DYNAMIC:
            raise SparkOptionError(f"dynamic partition overwrite needs the native path: {reason}")
        writer = df.write.format("icefloe").mode(mode).options(**opts)
        if filter_text is not None:
            writer = writer.option("overwrite-filter", filter_text)
        writer.save(path)
        return None
    head = metadata.ref_head(branch) if branch in metadata.refs else None
    starting_snapshot_id = None if head is None else head.snapshot_id
    chains, partition_columns = partition_chains(schema, spec, [f.name for f in schema.fields])
    one_step = all(len(chain) == 1 for chain in chains)  # computed from the table's columns at once
    frame = conform(df, schema, source, [chain[0] for chain in chains] if one_step else ())
    if filter_text is not None and filter_text.strip().lower() != "true":
        bound = E.bind(parse_filter(filter_text), schema)
        try:
            check = SF.to_column(bound)
        except SF.NotConvertible as e:
            raise SparkOptionError(f"overwrite-filter {filter_text!r}: {e}") from None
        from pyspark.sql import functions as F
        message = f"rows do not match overwrite-filter {filter_text!r}"
        frame = frame.filter(F.when(check, F.lit(True)).otherwise(F.raise_error(F.lit(message))))
    if not one_step:
        frame, partition_columns = with_partition_columns(frame, schema, spec, [f.name for f in schema.fields])
    job, files, durable, watch = write_job(frame, table, schema, spec, partition_columns,
                                           data_files_max(metadata.properties))
    if mode == OVERWRITE:
        operation, kind = OverwriteFiles(filter_text, files, job.job_id, starting_snapshot_id, branch, isolation), \
            "overwrite"
    elif mode == DYNAMIC:
        operation, kind = ReplacePartitions(files, job.job_id, starting_snapshot_id, branch, isolation), "overwrite"
    else:
        operation, kind = AppendFiles(files, job.job_id, branch), "append"
    try:
        result = commit_job(table, job, operation, kind, files, starting_snapshot_id=starting_snapshot_id,
                            commit_log=ref.get("commit-log"), before_swap=before_swap, fence=False,
                            ready=durable.result)
    except BaseException:
        watch.settle()  # no early fsync is left running when files go
        abort_job(job)  # nothing was swapped unless `started` was put: then it deletes nothing
        raise
    if not (not files and isinstance(result.outcome, Committed)):
        require_committed(result.outcome)  # Conflict / Unknown: distinct typed errors
    return result


__all__ = ["write", "write_frame", "conform", "spark_type", "fallback_reason", "APPEND", "OVERWRITE", "DYNAMIC", "DataFileError"]
