"""The native read path (docs/spark.md "Reading"; spec/PROTOCOL.md 10 "Readers"): icefloe
plans, Spark's vectorized Parquet reader reads the planned files.

    from icefloe.impl.spark import read
    df = read(spark, "cat.db.t", opts)                          # the current snapshot
    df = read(spark, "cat.db.t", opts, snapshot_id=..., tag=..., as_of_timestamp=..., branch=...)
    df = read(spark, "cat.db.t", opts, row_filter="cat = 'a' and id > 5")
    df = read(spark, "cat.db.t", opts, start_snapshot_id=a, end_snapshot_id=b)   # incremental

- Planning: pointer -> metadata -> manifest list, then the manifests in this process or,
  above a threshold of manifests or entries, in a Spark job (planning.py); `row_filter`
  prunes manifests and files and is applied in Spark (where Parquet row groups are
  pruned by it too). `plan()` returns the plan and its stats.
- Reading: `spark.read.schema(<table schema with field ids>).parquet(files)`, columns
  matched by field id (`spark.sql.parquet.fieldId.read.enabled`, set on the session: it
  only affects reads whose schema carries field ids), so renamed and added columns read
  right. Files without field ids (`add-files`) are resolved through the table's name
  mapping as icefloe's scan resolves them, and read by name (name_mapped.py).
- Merge-on-read: files without deletes are read as they are. The others, up to
  MERGE_BRANCHES_MAX of them, in one scan (per name-mapped layout) of links whose partition
  values give each row its file's constants (linked_files.py: no `_metadata` struct, no
  CASE over the files), filtered by their row index (Spark's internal
  `_tmp_metadata_row_index` where a probe of this Spark passes,
  native_dvs.internal_row_index; else `_metadata.row_index`) against one bitset literal of
  every file's deleted positions (`_merge_by_files`); a file holding a column of that
  internal name is refused (NotNative: Spark would read it as the row index). Beyond that,
  position deletes are an anti-join on (file, row position) with Spark's file metadata columns
  (`_metadata.file_path`, `_metadata.row_index`), each delete file joined only to the data
  files the planner attached it to (its sequence number >= theirs); a deletion vector (v3)
  is read on the driver (native_dvs.py, through DeleteReader.dv_positions) and applied the
  same way, as (file, row position) pairs, in place of that file's position delete files
  (the DV holds them: spec "Deletion Vectors"); equality deletes are
  an anti-join on the equality columns (null equals null) where the delete's data
  sequence number is greater than the data file's and it is global or in the same
  partition of the same spec (deletes.py's rules, applied in Spark).
- Incremental: the files added by the append snapshots after `start_snapshot_id` up to
  `end_snapshot_id` along its ancestry (P10; IncrementalGap when the start is not an
  ancestor), as they were appended.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icefloe.impl.format import expressions as E
from icefloe.impl.format import name_mapping as NM
from icefloe.impl.format import types as T
from icefloe.impl.format.expression_parser import parse as parse_filter
from icefloe.impl.format.manifest import DataFileContent
from icefloe.impl.io.locations import canonical_location, scheme_of
from icefloe.impl.table import scan as S
from icefloe.impl.table.files import TreeReader
from icefloe.impl.table.deletes import DELETE_FILE_PATH_ID, DELETE_POS_ID
from icefloe.impl.spark import linked_files as LF
from icefloe.impl.spark import name_mapped as NMS
from icefloe.impl.spark import native_dvs as DV
from icefloe.impl.spark import planning as PL
from icefloe.impl.spark import sql_filters as SF
from icefloe.impl.spark.footers import driver_pool
from icefloe.impl.spark.native_write import FIELD_ID, spark_type
from icefloe.impl.spark.options import SparkOptionError, table_ref
from icefloe.impl.spark.reader import select_snapshot
from icefloe.impl.spark.transforms_sql import NotNative

READ_CONF = {"spark.sql.parquet.fieldId.read.enabled": "true"}
FILE, POS, IDX = "__icefloe_file", "__icefloe_pos", "__icefloe_idx"
LIVE, MATCHED = "__icefloe_live", "__icefloe_matched"
WORD, ROWS = "__icefloe_word", "__icefloe_rows"  # partition values of linked_files: a file's bitset words
FILE_CASE_MAX = 64  # positions_frame names a row's file by a CASE on its IDX up to this many files; more: a join
MERGE_BRANCHES_MAX = 4096  # data files with deletes read through links (linked_files.py) in a merge-on-read; more: _merge_by_rows
DRIVER_POSITIONS_MAX = 4_000_000  # position deletes read on the driver into a broadcast table; more: _merge_by_rows
BROADCAST_ROWS_MAX = 4_000_000  # equality delete rows joined by broadcast


def _union(frames):
    """The frames one after another, columns matched by name."""
    df = frames[0]
    for other in frames[1:]:
        df = df.unionByName(other)
    return df


def _canon_spark(column: str) -> str:
    """SQL: Spark's `_metadata.file_path` (`file:/x`, percent-encoded) as canonical_location."""
    return (f"concat('file://', url_decode(replace(regexp_replace({column}, '^file:/+', '/'), '+', '%2B')))")


def _sql_string(value: str) -> str:
    """`value` as a SQL string literal."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _canon_written(column: str) -> str:
    """SQL: a path as a writer recorded it (`file:/x`, `file:///x`, `/x`) as canonical_location."""
    return (f"case when {column} like 'file:%' then concat('file://', regexp_replace({column}, '^file:/+', '/')) "
            f"when {column} like '/%' then concat('file://', {column}) else {column} end")


@dataclass
class NativeScan:
    spark: object
    schema: T.Schema
    plan: pa.Table
    deletes: list  # planning.DeleteRef
    row_filter: E.Expression
    stats: PL.PlanStats
    snapshot_id: int | None = None
    apply_deletes: bool = True
    extra: dict = field(default_factory=dict)
    io: object = None  # the table's store: merge-on-read reads position delete files on the driver
    name_mapping: dict | None = None  # the table's (name_mapping.of): files without field ids
    layouts: dict = field(default_factory=dict)  # data file -> its name_mapped.Layout (None: field ids)

    def __post_init__(self):
        self.plan = DV.attach(self.plan, self.deletes)  # which file has a live DV (native_dvs.py)

    def read_schema(self, fields=None):
        from pyspark.sql import types as S
        fields = self.schema.fields if fields is None else fields
        return S.StructType([S.StructField(f.name, spark_type(f.type), True, {FIELD_ID: f.field_id})
                             for f in fields])

    def _files(self, paths: list[str], schema=None):
        return (self.spark.read.schema(schema or self.read_schema()).option("recursiveFileLookup", "true")
                .parquet(*paths))

    def _data_files(self, paths: list[str], extra=()):
        """Data files as one frame of the read schema, then `extra` columns: the files with
        field ids in one scan, those without one scan per layout (name_mapped.py)."""
        with_ids, mapped = NMS.split_by_layout(paths, self.name_mapping, self.layouts)
        frames = []
        if with_ids:
            df = self._files(with_ids)
            frames.append(df.select("*", *extra) if extra else df)
        for layout, group in sorted(mapped.items()):
            frames.append(NMS.mapped_frame(self.spark, group, layout, self.schema.fields, extra))
        return _union(frames)

    def to_dataframe(self):
        """The rows of the plan as a Spark DataFrame (deletes applied, filter applied)."""
        return self._frame(positions=False)

    def positions_frame(self):
        """(FILE, POS): each live row the row filter matches, as its data file's canonical
        location and its row index in that file (`_metadata.row_index`): the rows a
        merge-on-read delete marks (native_delete.py). Deletes are applied as for a read."""
        return self._frame(positions=True).select(FILE, POS)

    def match_counts(self):
        """(FILE, LIVE, MATCHED): per data file of the plan holding a live row, its live rows
        and how many of them the row filter matches (a null does not), deletes applied as
        for a read: the first job of a copy-on-write delete (cow_delete.py)."""
        from pyspark.sql import functions as F
        every = replace(self, row_filter=E.AlwaysTrue())._frame(positions=True)
        try:
            matched = F.coalesce(SF.to_column(E.bind(self.row_filter, self.schema)), F.lit(False))
        except SF.NotConvertible as e:
            raise SparkOptionError(f"row filter: {e}") from None
        return every.groupBy(FILE).agg(F.count(F.lit(1)).alias(LIVE),
                                       F.sum(F.when(matched, 1).otherwise(0)).cast("long").alias(MATCHED))

    def _frame(self, positions: bool):
        from pyspark.sql import functions as F
        for k, v in READ_CONF.items():
            self.spark.conf.set(k, v)
        names = [f"`{f.name}`" for f in self.schema.fields] + ([FILE, POS] if positions else [])
        has_deletes = pc.or_(pc.or_(pc.is_valid(self.plan.column("position_deletes")),
                                    pc.is_valid(self.plan.column("equality_deletes"))),
                             pc.is_valid(self.plan.column(DV.DV_COLUMN)))
        if not self.apply_deletes:
            has_deletes = pa.array([False] * self.plan.num_rows, pa.bool_())
        plain = self.plan.filter(pc.invert(has_deletes)).column("file_path").to_pylist()
        merged = self.plan.filter(has_deletes)
        if positions:  # every file's row indexes, through the links: their files are told by IDX
            plain, merged = [], self.plan if self.apply_deletes else _without_deletes(self.plan)
        frames = []
        if plain:
            frames.append(self._data_files(plain))
        if merged.num_rows:
            df = self._merge_on_read(merged, positions)
            wanted = [f.name for f in self.schema.fields] + ([FILE, POS] if positions else [])
            frames.append(df if df.columns == wanted else df.select(*[F.col(n) for n in names]))  # (a step less)
        if not frames:
            if positions:
                return self.spark.createDataFrame([], f"{FILE} string, {POS} long")
            return self.spark.createDataFrame([], self.read_schema())
        df = _union(frames)
        if not isinstance(self.row_filter, E.AlwaysTrue):
            try:
                df = df.filter(SF.to_column(E.bind(self.row_filter, self.schema)))
            except SF.NotConvertible as e:
                raise SparkOptionError(f"row filter: {e}") from None
        return df

    def _merge_on_read(self, merged: pa.Table, positions: bool = False):
        pos_lists = merged.column("position_deletes").to_pylist()
        eq_lists = merged.column("equality_deletes").to_pylist()
        dv_list = merged.column(DV.DV_COLUMN).to_pylist()
        if any(i is not None for i in dv_list) and self.io is None:
            raise NotNative("deletion vectors to apply without the table's store to read them from")
        position = {i for found in pos_lists for i in found or ()}
        driver_positions = (sum(self.deletes[i][2].record_count for i in position)
                            + DV.positions_count(self.deletes, dv_list))
        if (merged.num_rows <= MERGE_BRANCHES_MAX and self.io is not None
                and driver_positions <= DRIVER_POSITIONS_MAX):
            return self._merge_by_files(merged.column("file_path").to_pylist(), pos_lists, eq_lists, dv_list,
                                        merged.column("record_count").to_pylist(), positions)
        return self._merge_by_rows(merged)

    def _deleted_frame(self, numbers: np.ndarray, positions: np.ndarray):
        """(file number, position) pairs as a Spark frame of IDX int, POS long."""
        return self.spark.createDataFrame(pa.table({IDX: pa.array(numbers, pa.int32()),
                                                    POS: pa.array(positions, pa.int64())}))

    def _merge_by_files(self, paths: list[str], pos_lists: list, eq_lists: list, dv_list: list,
                        record_counts: list[int], positions_too: bool = False):
        """Merge-on-read of up to MERGE_BRANCHES_MAX data files, read as one scan per layout
        (usually one; name_mapped.py) through links whose partition values give each row
        its file's constants (linked_files.py; no `_metadata` struct, no CASE over files):
        IDX its number in `paths`, WORD the first word of its deleted positions in the one
        bitset literal of the read (0-based) and ROWS how many of its rows the bitset
        covers (its entry's record_count; 0: none, the file keeps every row). The deleted positions of each
        file (its DV, or its position delete files: read on the driver by icefloe's
        DeleteReader, as its own scan reads them) go into that bitset while BITSET_WORDS_MAX
        allows (native_dvs.bitset_literal, the filter native_dvs.kept_by_bitset), the rest
        into a small table of (file number, position) anti-joined by broadcast; the
        equality deletes the planner attached to each file (its sequence-number and
        partition rules) are joined by file number. `positions_too`: every row keeps its
        row index (POS) and its file's canonical location (FILE). The row index is Spark's
        internal column where the probe passed (native_dvs.internal_row_index), else
        `_metadata.row_index`; files holding a column of the internal name are refused."""
        from pyspark.sql import functions as F
        from icefloe.impl.table.deletes import DeleteReader
        _refuse_row_index_column(paths, self.schema)
        reader = DeleteReader(self.io)
        deleted = DV.read_positions(reader, self.deletes, dv_list)
        # each position delete file read once, on the driver's footer threads (Parquet decoding
        # leaves the GIL), before the files' positions are merged below
        list(driver_pool().map(reader.position_arrays,
                               [self.deletes[i][2] for i in sorted({i for f in pos_lists for i in f or ()})]))
        for k, (path, found) in enumerate(zip(paths, pos_lists)):
            if found:  # (never beside a DV: native_dvs.attach empties the list where one applies)
                deleted[k] = reader.merged_positions([self.deletes[i][2] for i in found], path)
        bitsets, joined, words = {}, {}, 0
        for k in range(len(paths)):
            positions = deleted.get(k)
            if positions is None or not len(positions):
                continue
            if words + DV.bitset_words(record_counts[k]) <= DV.BITSET_WORDS_MAX:
                words += DV.bitset_words(record_counts[k])
                bitsets[k] = positions
            else:
                joined[k] = positions
        bits, offsets = DV.bitset_literal(bitsets, record_counts, self.spark) if bitsets else (None, {})
        constants = [{IDX: k, WORD: offsets.get(k, 0), ROWS: record_counts[k] if k in offsets else 0}
                     for k in range(len(paths))]
        number = {path: k for k, path in enumerate(paths)}
        internal = DV.internal_row_index(self.spark)
        with_ids, mapped = NMS.split_by_layout(paths, self.name_mapping, self.layouts)
        groups = ([(None, with_ids)] if with_ids else []) + sorted(mapped.items())
        numbered = bool(joined) or any(eq_lists)  # IDX: the anti-joins match rows to files by it
        frames = []
        for layout, group in groups:
            links, base = LF.linked(self.spark, group, [constants[number[p]] for p in group])
            row_index = DV.ROW_INDEX_COLUMN if internal else "_metadata.row_index"
            extra = [(IDX, "integer"), (WORD, "integer"), (ROWS, "long")]
            if internal:
                extra.append((DV.ROW_INDEX_COLUMN, "long"))
            if layout is None:
                schema = self.read_schema()
                for name, kind in extra:
                    schema = schema.add(name, kind)
                frame = self._linked_files(links, base, schema)  # (the read schema's columns, then `extra`)
            else:
                frame = NMS.mapped_frame(self.spark, links, layout, self.schema.fields,
                                         [F.col(name) for name, _ in extra], base_path=base, partition_columns=extra)
            # each DataFrame step is Spark's analysis of the whole plan again (~5-20 ms), and
            # the filter's generated code runs per row: one filter, its expression small
            if any(number[p] in offsets for p in group):
                frame = frame.filter(DV.kept_by_bitset(row_index, bits, WORD, ROWS))
            by_case = positions_too and len(paths) <= FILE_CASE_MAX
            kept = [f"`{f.name}`" for f in self.schema.fields]
            if numbered or (positions_too and not by_case):
                kept.append(IDX)
            if joined or positions_too:
                kept.append(f"{row_index} as {POS}")
            if by_case:
                kept.append(f"{_file_of(group, number)} as {FILE}")
            frames.append(frame.selectExpr(*kept))
        df = _union(frames)
        if positions_too and len(paths) > FILE_CASE_MAX:  # (a CASE of thousands of strings: a join)
            files = self.spark.createDataFrame([(k, canonical_location(p)) for k, p in enumerate(paths)],
                                               f"{IDX} int, {FILE} string")
            df = df.join(F.broadcast(files), IDX)
        if joined:
            df = df.join(F.broadcast(self._deleted_frame(*DV.numbered(joined))), [IDX, POS], "left_anti")
        by_ids: dict[tuple, list[int]] = {}
        for i in sorted({i for found in eq_lists for i in found or ()}):
            by_ids.setdefault(tuple(self.deletes[i][2].equality_ids or ()), []).append(i)
        for ids, indices in sorted(by_ids.items()):
            df = self._equality_anti_join_by_files(df, eq_lists, ids, indices)
        return df  # IDX, POS (and FILE) too: _frame selects the columns it returns

    def _linked_files(self, links: list[str], base: str, schema):
        """The links (linked_files.linked) as one scan of `schema`, their partition columns
        among its fields (no `recursiveFileLookup`: it turns partition discovery off)."""
        return self.spark.read.schema(schema).option("basePath", base).parquet(*links)

    def _equality_anti_join_by_files(self, df, eq_lists: list, ids: tuple, indices: list[int]):
        from pyspark.sql import functions as F
        if not ids:
            raise SparkOptionError("an equality delete file without equality ids")
        fields = [self.schema.find_field(i) for i in ids]
        applies: dict[int, set[int]] = {i: set() for i in indices}
        for k, found in enumerate(eq_lists):
            for i in found or ():
                if i in applies:
                    applies[i].add(k)
        by_targets: dict[frozenset, list[int]] = {}
        for i in indices:
            by_targets.setdefault(frozenset(applies[i]), []).append(i)
        for targets, group in sorted(by_targets.items(), key=lambda kv: kv[1]):
            rows = _union([self._files([self._delete_path(self.deletes[i][2].file_path)], self.read_schema(fields))
                           .select(*[F.col(f"`{f.name}`").alias(f"__eq{n}") for n, f in enumerate(fields)])
                           for i in group])
            if sum(self.deletes[i][2].record_count for i in group) <= BROADCAST_ROWS_MAX:
                rows = F.broadcast(rows)
            cond = None
            for n, f in enumerate(fields):
                term = df[f"`{f.name}`"].eqNullSafe(rows[f"__eq{n}"])
                cond = term if cond is None else cond & term
            if len(targets) < len(eq_lists):  # the delete files of this group apply to some data files only
                cond = cond & df[IDX].isin(sorted(targets))
            df = df.join(rows, cond, "left_anti")
        return df

    def _merge_by_rows(self, merged: pa.Table):
        """Merge-on-read over one scan of every data file with deletes (too many files for a
        scan each): rows are matched to their files by Spark's spelling of the path, made
        canonical row by row."""
        from pyspark.sql import functions as F
        paths = merged.column("file_path").to_pylist()
        _refuse_row_index_column(paths, self.schema)  # (`_metadata.row_index` is that column there too)
        df = self._data_files(paths, [F.expr(_canon_spark("_metadata.file_path")).alias(FILE),
                                      F.col("_metadata.row_index").alias(POS)])
        pos_pairs, eq_groups = [], {}
        for path, pos_list, eq_list in zip(paths, merged.column("position_deletes").to_pylist(),
                                           merged.column("equality_deletes").to_pylist()):
            for i in pos_list or ():
                pos_pairs.append((canonical_location(self.deletes[i][2].file_path), canonical_location(path)))
            for i in eq_list or ():
                eq_groups.setdefault(tuple(self.deletes[i][2].equality_ids or ()), set()).add(i)
        if pos_pairs:
            df = self._position_anti_join(df, sorted(set(pos_pairs)))
        dv_list = merged.column(DV.DV_COLUMN).to_pylist()
        if any(i is not None for i in dv_list):
            df = self._dv_anti_join(df, paths, dv_list)
        for ids, indices in sorted(eq_groups.items()):
            df = self._equality_anti_join(df, merged, ids, sorted(indices))
        return df

    def _dv_anti_join(self, df, paths: list[str], dv_list: list):
        """The DVs' positions (read on the driver, native_dvs.py) anti-joined on (file
        number, `_metadata.row_index`), rows numbered by their canonical path: the files
        with a DV are a small broadcast table; rows of the others get no number and stay."""
        from pyspark.sql import functions as F
        from icefloe.impl.table.deletes import DeleteReader
        numbers, positions = DV.numbered(DV.read_positions(DeleteReader(self.io), self.deletes, dv_list))
        numbered = self.spark.createDataFrame(
            [(canonical_location(p), k) for k, (p, i) in enumerate(zip(paths, dv_list)) if i is not None],
            f"{FILE} string, {IDX} int")
        deleted = self._deleted_frame(numbers, positions)
        if len(positions) <= DRIVER_POSITIONS_MAX:
            deleted = F.broadcast(deleted)
        return df.join(F.broadcast(numbered), FILE, "left").join(deleted, [IDX, POS], "left_anti").drop(IDX)

    def _position_anti_join(self, df, pairs):
        from pyspark.sql import functions as F
        from pyspark.sql import types as ST
        delete_paths = sorted({self._delete_path(d) for d, _ in pairs})
        schema = ST.StructType([ST.StructField("file_path", ST.StringType(), True, {FIELD_ID: DELETE_FILE_PATH_ID}),
                                ST.StructField("pos", ST.LongType(), True, {FIELD_ID: DELETE_POS_ID})])
        rows = self._files(delete_paths, schema).select(
            F.expr(_canon_written("file_path")).alias("__target"), F.col("pos").alias("__dpos"),
            F.expr(_canon_spark("_metadata.file_path")).alias("__dfile"))
        attached = self.spark.createDataFrame(pairs, "__dfile string, __target string")
        applicable = rows.join(F.broadcast(attached), ["__dfile", "__target"]).select("__target", "__dpos")
        return df.join(applicable, (df[FILE] == applicable["__target"]) & (df[POS] == applicable["__dpos"]),
                       "left_anti")

    def _equality_anti_join(self, df, merged: pa.Table, ids: tuple, indices: list[int]):
        from pyspark.sql import functions as F
        if not ids:
            raise SparkOptionError("an equality delete file without equality ids")
        fields = [self.schema.find_field(i) for i in ids]
        refs = [self.deletes[i] for i in indices]
        rows = self._files([self._delete_path(r[2].file_path) for r in refs], self.read_schema(fields))
        rows = rows.select(*[F.col(f"`{f.name}`").alias(f"__eq{k}") for k, f in enumerate(fields)],
                           F.expr(_canon_spark("_metadata.file_path")).alias("__dfile"))
        about = self.spark.createDataFrame(
            [(canonical_location(r[2].file_path), r[0], r[3], PL.partition_key(r[1], r[2].partition)) for r in refs],
            "__dfile string, __dseq long, __dglobal boolean, __dpart string")
        rows = rows.join(F.broadcast(about), "__dfile").drop("__dfile")
        files = self.spark.createDataFrame(
            [(canonical_location(p), s, k) for p, s, k in zip(merged.column("file_path").to_pylist(),
                                                              merged.column("data_sequence_number").to_pylist(),
                                                              merged.column("partition_key").to_pylist())],
            f"{FILE} string, __seq long, __part string")
        data = df.join(F.broadcast(files), FILE)
        cond = (rows["__dseq"] > data["__seq"]) & (rows["__dglobal"] | (rows["__dpart"] == data["__part"]))
        for k, f in enumerate(fields):
            cond = cond & data[f"`{f.name}`"].eqNullSafe(rows[f"__eq{k}"])
        return data.join(rows, cond, "left_anti").drop("__seq", "__part")

    @staticmethod
    def _delete_path(path: str) -> str:
        return canonical_location(path)


def _refuse_row_index_column(paths: list[str], schema: T.Schema) -> None:
    """NotNative where a data file or the table has a column named like Spark's internal
    row index column: Spark 4.3's vectorized reader returns such a column as the row index
    (native_dvs.holds_row_index_column); `read()` then falls back to the Python data source."""
    if DV.holds_row_index_column(paths, [f.name for f in schema.fields]):
        raise NotNative(f"a data file with deletes (or the table) has a column named {DV.ROW_INDEX_COLUMN}, "
                        "which Spark's vectorized Parquet reader returns as the row index; read with "
                        "format('icefloe')")


def _file_of(group: list[str], number: dict[str, int]) -> str:
    """SQL: a row's file as its canonical location, from its IDX partition value."""
    cases = " ".join(f"when {number[p]} then {_sql_string(canonical_location(p))}" for p in group)
    return f"case {IDX} {cases} end"


def _without_deletes(plan: pa.Table) -> pa.Table:
    """`plan` with no delete attached to any file."""
    for name in ("position_deletes", "equality_deletes", DV.DV_COLUMN):
        i = plan.schema.get_field_index(name)
        plan = plan.set_column(i, plan.schema.field(i), pa.nulls(plan.num_rows, plan.schema.field(i).type))
    return plan


def _expression(row_filter) -> E.Expression:
    if row_filter is None:
        return E.AlwaysTrue()
    return parse_filter(row_filter) if isinstance(row_filter, str) else row_filter


def plan(spark, path: str, options: dict | None = None, *, snapshot_id: int | None = None,
         as_of_timestamp: int | None = None, tag: str | None = None, branch: str | None = None,
         row_filter=None, start_snapshot_id: int | None = None, end_snapshot_id: int | None = None,
         planning: str = "auto") -> NativeScan:
    """Plan a read (see the module docstring); `planning` is auto, local or distributed."""
    opts = dict(options or {})
    for key, value in (("snapshot-id", snapshot_id), ("as-of-timestamp", as_of_timestamp), ("tag", tag),
                       ("branch", branch)):
        if value is not None:
            opts[key] = str(value)
    if planning not in ("auto", "local", "distributed"):
        raise SparkOptionError(f"planning must be auto, local or distributed, not {planning!r}")
    ref = table_ref(opts, path)
    started = time.monotonic()
    io, metadata, snapshot = select_snapshot(ref)
    before = sum(io.counts.values())
    expr = _expression(row_filter)
    if start_snapshot_id is not None or end_snapshot_id is not None:
        return _incremental(spark, io, metadata, start_snapshot_id, end_snapshot_id, started, before)
    schema = S.snapshot_schema(metadata, snapshot)
    E.bind(expr, schema)  # a bad filter is a typed error before anything is read
    tree = TreeReader(io)
    manifests = tree.manifests(snapshot)
    if planning == "auto":  # a filter names columns, whose statistics then get decoded and evaluated
        mode = PL.choose_native_mode(manifests, spark.sparkContext.defaultParallelism,
                                     stats_needed=not isinstance(expr, E.AlwaysTrue))
    else:
        mode = planning
    stats = PL.PlanStats(mode, len(manifests), PL.announced_entries(manifests))
    if mode == "distributed":
        table, deletes = PL.plan_table_distributed(spark, ref, metadata, snapshot, expr, stats=stats)
    else:
        table, deletes = PL.plan_table_local(io, tree, metadata, snapshot, expr, stats)
    stats.files, stats.delete_files = table.num_rows, len(deletes)
    stats.driver_requests = sum(io.counts.values()) - before
    stats.plan_ms = (time.monotonic() - started) * 1000
    _check_local(table, deletes)
    return NativeScan(spark, schema, table, deletes, expr, stats, None if snapshot is None else snapshot.snapshot_id,
                      io=io, name_mapping=NM.of(metadata.properties))


def _incremental(spark, io, metadata, start_id, end_id, started, before) -> NativeScan:
    if end_id is None:
        head = metadata.current_snapshot()
        if head is None:
            raise SparkOptionError("an incremental read of a table without snapshots")
        end_id = head.snapshot_id
    end = metadata.snapshot_by_id(end_id)
    if end is None:
        raise SparkOptionError(f"snapshot {end_id} is not retained")
    tree = TreeReader(io)
    tasks = []
    for snap in S.appended_between(metadata, start_id, end_id):
        if snap.operation != "append":
            continue
        tasks.extend(S.FileScanTask(e.data_file, 0, e.sequence_number) for e in tree.changes(snap).added_data)
    table = PL.tasks_to_table(tasks, {})
    stats = PL.PlanStats("incremental", files=table.num_rows, driver_requests=sum(io.counts.values()) - before,
                         plan_ms=(time.monotonic() - started) * 1000)
    _check_local(table, [])
    return NativeScan(spark, S.snapshot_schema(metadata, end), table, [], E.AlwaysTrue(), stats, end_id,
                      apply_deletes=False, name_mapping=NM.of(metadata.properties))


def _check_local(table: pa.Table, deletes) -> None:
    for p in table.column("file_path").to_pylist()[:1] + [d[2].file_path for d in deletes[:1]]:
        if scheme_of(p) != "file":
            raise NotNative(f"Spark's Parquet reader has no file system for {scheme_of(p)}:// here "
                            "(hadoop-aws is not shipped with PySpark); read with format('icefloe')")


def read(spark, path: str, options: dict | None = None, **kwargs):
    """plan(...).to_dataframe(): the table's rows as a Spark DataFrame read by Spark's
    Parquet reader. Tables on S3 are read through the `icefloe` Python data source."""
    try:
        return plan(spark, path, options, **kwargs).to_dataframe()
    except NotNative:
        reader = spark.read.format("icefloe").options(**(options or {}))
        for key in ("snapshot_id", "as_of_timestamp", "tag", "branch"):
            if kwargs.get(key) is not None:
                reader = reader.option(key.replace("_", "-"), str(kwargs[key]))
        if kwargs.get("start_snapshot_id") is not None or kwargs.get("end_snapshot_id") is not None:
            raise
        df = reader.load(path)
        expr = _expression(kwargs.get("row_filter"))
        return df if isinstance(expr, E.AlwaysTrue) else df.filter(SF.to_column(E.bind(expr, _schema_of(spark, path, options))))


def _schema_of(spark, path, options):
    _, metadata, snapshot = select_snapshot(table_ref(dict(options or {}), path))
    return S.snapshot_schema(metadata, snapshot)


__all__ = ["read", "plan", "NativeScan", "DataFileContent"]
