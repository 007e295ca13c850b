"""What a deletion vector supersedes (Iceberg spec "Deletion Vectors": at most one per data
file in a snapshot; a new one must hold the positions of the DV or position delete files
before it, which it replaces). Shared by the DV writer (row_deletes.py) and the row
delta that adds an engine's DVs (producer.py).
"""
from __future__ import annotations

from icefloe.impl.format.manifest import DataFile
from icefloe.impl.io.locations import comparable_location
from icefloe.impl.outcomes import InvalidArgument
from icefloe.impl.table.deletes import DELETE_FILE_PATH_ID, DeleteReader
from icefloe.impl.table.scan import plan_files

__all__ = ["delete_key", "names_only", "supersede"]


def delete_key(f: DataFile) -> tuple[str, int | None]:
    """A delete file's identity: DVs share their Puffin file, told apart by offset."""
    return f.file_path, f.content_offset


def names_only(delete: DataFile, path: str) -> bool:
    """Whether a position delete file names `path` alone (its referenced_data_file, or
    file_path bounds that are equal and name it): then a DV for `path` replaces it."""
    if delete.referenced_data_file is not None:
        return comparable_location(delete.referenced_data_file) == comparable_location(path)
    lo = (delete.lower_bounds or {}).get(DELETE_FILE_PATH_ID)
    hi = (delete.upper_bounds or {}).get(DELETE_FILE_PATH_ID)
    return lo is not None and lo == hi and comparable_location(lo.decode("utf-8", "replace")) == \
        comparable_location(path)


def supersede(c, dvs: list[DataFile]) -> tuple[set[tuple[str, int | None]], frozenset[str]]:
    """For DVs an engine wrote (a row delta's): what each supersedes at the starting
    snapshot, and the data files they reference. Each DV must reference a live data file,
    one DV per file, and hold every position of that file's live DV and of the position
    delete files that name it alone (those are then removed in the same snapshot: spec
    "Deletion Vectors"); otherwise InvalidArgument naming the file. Keeping the old DV
    beside the new one is the two-live-DVs table of apache/iceberg-go #1868."""
    by_path: dict[str, DataFile] = {}
    for dv in dvs:
        if not dv.referenced_data_file or dv.content_offset is None or dv.content_size_in_bytes is None:
            raise InvalidArgument(f"{dv.file_path}: a deletion vector needs referenced_data_file, "
                                  "content_offset and content_size_in_bytes")
        key = comparable_location(dv.referenced_data_file)
        if key in by_path:
            raise InvalidArgument(f"two deletion vectors for {dv.referenced_data_file} in one commit")
        by_path[key] = dv
    tasks = {comparable_location(t.data_file.file_path): t
             for t in plan_files(c.tree, c.base, c.starting_snapshot)}
    deletes = DeleteReader(c.io)
    removed: set[tuple[str, int | None]] = set()
    for key, dv in by_path.items():
        task = tasks.get(key)
        if task is None:
            raise InvalidArgument(f"{dv.referenced_data_file}: the deletion vector's data file is not live")
        new = set(int(p) for p in deletes.dv_positions(dv))
        old: set[int] = set()
        superseded = []
        if task.deletion_vector is not None:
            old.update(int(p) for p in deletes.dv_positions(task.deletion_vector))
            superseded.append(task.deletion_vector)
        else:
            for d in task.position_deletes:
                old.update(p for k, ps in deletes.positions(d).items() if comparable_location(k) == key for p in ps)
                if names_only(d, task.data_file.file_path):
                    superseded.append(d)
        if not old <= new:
            raise InvalidArgument(f"the deletion vector for {dv.referenced_data_file} drops "
                                  f"{len(old - new)} position(s) already deleted; a new DV must hold them all")
        removed.update(delete_key(d) for d in superseded)
    return removed, frozenset(dv.referenced_data_file for dv in dvs)
