"""Flawed engines for format v3 (negative controls of the suite's v3 phase, conformance.v3):
icefloe's own adapter with one v3 operation swapped for a flawed one, each the engine-side
twin of a flawed variant of the v3 model (model/v3.py V3_VARIANTS, docs/variants.md):

  stale-first-row-id-on-retry  an append writes first_row_id into its manifest's entries at
      its first attempt (the base's next-row-id then) and reuses the manifest on a retry
      after a concurrent append: its rows take ids the other append's rows have
      (apache/iceberg-go #1021 review; Delta #7506, Paimon #8506): P13, P14;
  replacement-dv-keeps-old  a row delete's DV for a file that has one holds its positions
      but the old DV is not removed: two live DVs for one file (apache/iceberg-go #1868): P11;
  dv-validation-over-window  a compaction's (and a row delete's) validation indexes every
      DV added since it began by data file and fails on a file with two, though the older
      was replaced (apache/iceberg #17764, "Can't index multiple DVs"): a spurious conflict, L3;
  merge-over-overwrite-dv  an engine of the `merge` DV policy (apache/iceberg #17754) whose
      row delete, on a retry, merges any DV added meanwhile for its file into its own, an
      update's (an overwrite's) too: the row the update wrote again survives the delete: P6;
  dv-ignores-position-deletes  on a table upgraded from v2, a row delete's DV for a file with
      position delete files holds the new positions alone, and still supersedes (removes)
      those files: the rows they deleted come back (spec/PROTOCOL.md 19.8): P12.

Each is also in engines.flawed's VARIANTS: `icefloe conform --variant NAME` (and the seed gate,
mutants.seeds), or `--engine icefloe.conformance.engines.flawed_v3:engine_<name, dashes as underscores>`.
Each declares append as its only v2 operation (its v2 phase is the reference's) and every
v3 operation, so the run spends itself on the v3 phase.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import icefloe_engine as I
from icefloe.conformance.engines import icefloe_v3 as V3
from icefloe.impl.format.manifest import ManifestContent
from icefloe.impl.format.puffin import PuffinWriter
from icefloe.impl.table import producer as P
from icefloe.impl.table.deletes import DeleteReader
from icefloe.impl.table.files import snapshots_between
from icefloe.impl.table.row_deletes import DeleteRows, dv_location
from icefloe.impl.table.scan import plan_files
from icefloe.impl.format.manifest import DataFile, DataFileContent


# -- the flaws ------------------------------------------------------------------------------

class StaleFirstRowIdAppend(P.FastAppend):
    """first_row_id baked into the manifest's entries at the first attempt."""

    def write_manifests(self, c):
        self.files = [replace(f, first_row_id=c.base.next_row_id) for f in self.files]
        super().write_manifests(c)


class KeepOldDV(DeleteRows):
    """The new DV holds the old one's positions, but the old DV stays live."""

    def plan(self, c):
        planned = super().plan(c)
        self.removed_deletes = set()
        return planned

    def _check_one_dv_per_file(self, c):
        pass                          # the flawed writer has no such check


@dataclass(frozen=True)
class DVIndexOverWindow:
    """Index every DV added since the starting snapshot by its data file; two for one file
    fail ("Can't index multiple DVs"), whether or not the later replaced the earlier."""
    ref: str = "main"

    def check(self, base, starting_snapshot_id, tree):
        between = snapshots_between(base, self.ref, starting_snapshot_id) or []
        seen: set = set()
        for snap in between:
            for e in tree.changes(snap).added_deletes:
                if e.data_file.is_deletion_vector:
                    if e.data_file.referenced_data_file in seen:
                        return f"can't index multiple DVs for {e.data_file.referenced_data_file}"
                    seen.add(e.data_file.referenced_data_file)
        return None


class MergingDeleteRows(DeleteRows):
    """The merge policy, flawed: a DV added meanwhile for the file is merged on a retry,
    whoever added it (a correct merge takes a pure delete's only)."""

    def __init__(self, row):
        super().__init__(V3.row_filter(row), isolation=P.SNAPSHOT)

    def plan(self, c):
        planned = super().plan(c)
        self.reqs = [r for r in self.reqs if not isinstance(r, P.NoNewDeletesForFiles)]
        return planned

    def write_manifests(self, c):
        if c.attempt > 1:             # re-seed each DV from the one live in this attempt's base
            live = {t.data_file.file_path: t.deletion_vector for t in plan_files(c.tree, c.base, c.head())}
            deletes, writer, planned = DeleteReader(c.io), PuffinWriter(), []
            self.removed_deletes = set()
            for data_file, spec_id, positions in self.dvs:
                old = live.get(data_file.file_path)
                merged = set(positions)
                if old is not None:
                    merged |= {int(p) for p in deletes.dv_positions(old)}
                    self.removed_deletes.add(P.delete_key(old))
                planned.append((data_file, spec_id, writer.add_dv(data_file.file_path, sorted(merged))))
            data = writer.finish()
            location = dv_location(c.base.location, c.env.uuid())
            c.write(location, data)
            self.added_deletes = [DataFile(location, "puffin", f.partition, n, len(data),
                                           DataFileContent.POSITION_DELETES, referenced_data_file=f.file_path,
                                           content_offset=off, content_size_in_bytes=length)
                                  for f, _, (off, length, n) in planned]
            self._new, self._new_entries, self._filtered, self._filtered_for = None, {}, {}, None
        super().write_manifests(c)


class IgnorePositionDeletes(DeleteRows):
    """The DV is not seeded from the file's position delete files, which it still removes."""

    def plan(self, c):
        if not super().plan(c):
            return False
        deletes = DeleteReader(c.io)
        tasks = {t.data_file.file_path: t for t in plan_files(c.tree, c.base, c.starting_snapshot)}
        out = []
        for data_file, spec_id, positions in self.dvs:
            task = tasks[data_file.file_path]
            if task.deletion_vector is None:
                gone = {p for d in task.position_deletes for ps in deletes.positions(d).values() for p in ps}
                positions = sorted(set(positions) - gone)
            out.append((data_file, spec_id, positions))
        self.dvs = out
        return True


# -- the engines ------------------------------------------------------------------------------

class FlawedV3Table(I.IcefloeTable):
    """icefloe's table handle; on a v3 table one operation is the flawed one."""

    def flawed(self, op: A.OpSpec, operation):
        return operation

    def operation(self, op: A.OpSpec):
        operation = super().operation(op)
        return self.flawed(op, operation) if self.format_version == 3 else operation


class StaleFirstRowIdTable(FlawedV3Table):
    def flawed(self, op, operation):
        return StaleFirstRowIdAppend(operation.rows) if op.kind == A.APPEND else operation


class KeepOldDVTable(FlawedV3Table):
    def flawed(self, op, operation):
        return KeepOldDV(V3.row_filter(op.row)) if op.kind == A.ROW_DELETE else operation


class WindowIndexTable(FlawedV3Table):
    def flawed(self, op, operation):
        if isinstance(operation, P.FileChange):
            planned = operation.plan

            def plan(c):
                out = planned(c)
                operation.reqs.append(DVIndexOverWindow())
                return out
            operation.plan = plan
        return operation


class MergeOverOverwriteTable(FlawedV3Table):
    def flawed(self, op, operation):
        return MergingDeleteRows(op.row) if op.kind == A.ROW_DELETE else operation


class IgnorePositionDeletesTable(FlawedV3Table):
    def flawed(self, op, operation):
        return IgnorePositionDeletes(V3.row_filter(op.row)) if op.kind == A.ROW_DELETE else operation


class FlawedV3Engine(I.IcefloeEngine):
    def __init__(self, name: str, table_class: type, capabilities: A.Capabilities):
        self.name, self.table_class, self.capabilities = name, table_class, capabilities

    def create_table(self, ctx: A.TableContext):
        return self.table_class(self, ctx)


def _caps(**changes) -> A.Capabilities:
    return replace(I.CAPABILITIES, operations=frozenset({A.APPEND}), faults=frozenset(), partitions=1, refs=False,
                   **changes)


SPECS = {
    "stale-first-row-id-on-retry": (StaleFirstRowIdTable, _caps(),
                                    "an append's first_row_id baked into its manifest at the first attempt and "
                                    "reused on a retry (apache/iceberg-go #1021)"),
    "replacement-dv-keeps-old": (KeepOldDVTable, _caps(),
                                 "a replacement DV added without removing the old one: two live DVs "
                                 "(apache/iceberg-go #1868)"),
    "dv-validation-over-window": (WindowIndexTable, _caps(),
                                  "validation indexes every DV added in the window by data file: a replaced DV "
                                  "fails a compaction (apache/iceberg #17764)"),
    "merge-over-overwrite-dv": (MergeOverOverwriteTable, _caps(dv_policy=A.DV_MERGE),
                                "merge policy: a delete's DV merges an update's DV added meanwhile, and the "
                                "updated row survives the delete (apache/iceberg #17754)"),
    "dv-ignores-position-deletes": (IgnorePositionDeletesTable, _caps(),
                                    "on a table upgraded from v2, a DV that drops the file's position deletes "
                                    "instead of merging them: their rows come back"),
}


def factory(name: str):
    table_class, caps, _ = SPECS[name]

    def make() -> FlawedV3Engine:
        return FlawedV3Engine(f"flawed:{name}", table_class, caps)
    make.__name__ = f"engine_{name.replace('-', '_')}"
    return make


VARIANTS = {name: factory(name) for name in SPECS}
# `icefloe conform --engine icefloe.conformance.engines.flawed_v3:<name with underscores>`
engine_stale_first_row_id_on_retry = VARIANTS["stale-first-row-id-on-retry"]
engine_replacement_dv_keeps_old = VARIANTS["replacement-dv-keeps-old"]
engine_dv_validation_over_window = VARIANTS["dv-validation-over-window"]
engine_merge_over_overwrite_dv = VARIANTS["merge-over-overwrite-dv"]
engine_dv_ignores_position_deletes = VARIANTS["dv-ignores-position-deletes"]
DESCRIPTIONS = {name: spec[2] for name, spec in SPECS.items()}
