"""Merge-on-read row deletes on format v3 tables: deletion vectors (Iceberg spec "Deletion
Vectors", "Row-level Deletes"; Puffin spec "deletion-vector-v1"; spec/PROTOCOL.md 7.3
"delete by filter, row-level"; model: DELETE with merge-on-read).

`DeleteRows` deletes the rows matching a filter without rewriting data files: for each
data file holding a matching row it writes one DV (all DVs of the commit in one Puffin
file), and keeps the spec's invariant of at most one live DV per data file:

- the new DV holds every position deleted before (the file's DV, or the position delete
  files that apply to it: upgraded tables keep v2 ones) plus the new ones;
- in the same snapshot it removes what it supersedes: the old DV, and the position delete
  files that name this data file alone (a position delete file naming several data files
  stays; readers ignore it for a file that has a DV);
- on every attempt the validations require the data files to be live and no delete file
  to have been added for them since the starting snapshot (a concurrent DV for the same
  file would make two: apache/iceberg-go #1868; merging them would be sound only for pure
  deletes, apache/iceberg #17754), so the DVs planned once stay right for every retry.

The planned positions are the rows' positions in the data file, so a file's DV is a
row-index filter at read time (deletes.py), never a join.
"""
from __future__ import annotations

import pyarrow as pa

from icefloe.impl.format import expressions as E, name_mapping as NM
from icefloe.impl.format.expression_parser import parse as parse_filter
from icefloe.impl.format.manifest import DataFile, DataFileContent
from icefloe.impl.format.metadata import MAIN_BRANCH, UnsupportedFormatVersion
from icefloe.impl.format.parquet import read_data_file
from icefloe.impl.format.puffin import PuffinWriter
from icefloe.impl.io.locations import comparable_location
from icefloe.impl.outcomes import SERIALIZABLE
from icefloe.impl.table import producer as P
from icefloe.impl.table.deletes import DeleteReader
from icefloe.impl.table.scan import plan_files
from icefloe.impl.table.superseding import delete_key, names_only

DV_FORMAT_VERSION_MIN = 3


def dv_location(table_location: str, name_uuid: str) -> str:
    """Where a commit's Puffin file of DVs goes: beside the data, named as Java names them."""
    return f"{table_location.rstrip('/')}/data/{name_uuid}-deletes.puffin"


class DeleteRows(P.FileChange):
    """Delete the rows matching `row_filter` with deletion vectors (format v3 only:
    UnsupportedFormatVersion otherwise, naming the table's version)."""
    operation = "delete"

    def __init__(self, row_filter, ref: str = MAIN_BRANCH, isolation: str = SERIALIZABLE):
        super().__init__(ref, isolation)
        self.row_filter = parse_filter(row_filter) if isinstance(row_filter, str) else row_filter
        self.dvs: list[tuple[DataFile, int, list[int]]] = []  # data file, its spec id, positions
        self.hits: list[tuple] = []  # (task, positions the filter matched now): row_updates.UpdateRows

    def plan(self, c):
        if c.base.format_version < DV_FORMAT_VERSION_MIN:
            raise UnsupportedFormatVersion(
                f"merge-on-read deletes write deletion vectors, which need format v3; this table is "
                f"v{c.base.format_version} (upgrade it, or delete copy-on-write)")
        start = c.starting_snapshot
        schema = c.base.schema()
        mask = E.to_arrow(E.bind(self.row_filter, schema))
        deletes = DeleteReader(c.io)
        touched: list[DataFile] = []
        for task in plan_files(c.tree, c.base, start, self.row_filter, schema):
            path = task.data_file.file_path
            rows = read_data_file(c.io.get(path), schema, path, data_file=task.data_file,
                                  name_mapping=NM.of(c.base.properties))
            live = deletes.apply(rows.append_column("__pos", pa.array(range(rows.num_rows), pa.int64())),
                                 task.data_file, task.position_deletes, task.equality_deletes, schema,
                                 task.deletion_vector)
            hit = live.filter(mask).column("__pos").to_pylist()
            if not hit:
                continue
            before: set[int] = set()
            if task.deletion_vector is not None:
                before.update(int(p) for p in deletes.dv_positions(task.deletion_vector))
                self.removed_deletes.add(delete_key(task.deletion_vector))
            else:
                key = comparable_location(path)
                for d in task.position_deletes:
                    before.update(p for k, ps in deletes.positions(d).items()
                                  if comparable_location(k) == key for p in ps)
                    if names_only(d, path):
                        self.removed_deletes.add(delete_key(d))
            self.dvs.append((task.data_file, task.spec_id, sorted(before.union(hit))))
            touched.append(task.data_file)
            self.hits.append((task, hit))
        if not self.dvs:
            return False
        self.reqs = [P.StartingSnapshotIsAncestor(self.ref), P.FilesStillLive(frozenset(f.file_path for f in touched), self.ref),
                     P.NoNewDeletesForFiles(tuple(touched), self.ref)]
        if self.isolation == SERIALIZABLE:
            self.reqs.append(P.NoConflictingData(self.row_filter, self.ref))
        return True

    def write_data(self, c):
        """One Puffin file holding every DV of the commit (written once: a retry reuses it,
        the positions having been validated against each new base)."""
        writer = PuffinWriter()
        spans = [(data_file, spec_id, writer.add_dv(data_file.file_path, positions))
                 for data_file, spec_id, positions in self.dvs]
        data = writer.finish()
        location = dv_location(c.base.location, c.env.uuid())
        c.write(location, data)
        for data_file, spec_id, (offset, length, cardinality) in spans:
            dv = DataFile(location, "puffin", data_file.partition, cardinality, len(data),
                          DataFileContent.POSITION_DELETES, referenced_data_file=data_file.file_path,
                          content_offset=offset, content_size_in_bytes=length)
            self.added_deletes.append(dv)
            self.added_delete_specs[id(dv)] = spec_id

