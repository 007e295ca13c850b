"""Integrity cross-checks on read (spec/PROTOCOL.md 10 "Readers"; Iceberg spec "Snapshots"
for the summary's totals, "Manifest Lists" for the per-manifest counts).

An Avro file cut at a block boundary is a valid, shorter Avro file, and a Parquet file can
be replaced by another: each decodes without error and reads as fewer entries or rows. The
counts that catch this are already stored one level up, so every read is checked against
them:

- a manifest list against its snapshot's summary totals (`total-data-files`,
  `total-records`, `total-delete-files`, `total-position-deletes` +
  `total-equality-deletes`), where the summary has them and every list entry has counts;
- a manifest against its list entry: its byte length (`manifest_length`), and its entries'
  files and rows per status (`added/existing/deleted_files_count`, `..._rows_count`);
- a data file against its manifest entry's `record_count` (the Parquet footer holds the
  row count, so this costs nothing).

A mismatch raises `CorruptMetadata` naming the object. Reads go through these checks
(impl/table/files.py TreeReader), so a commit, whose refresh reads its base's manifest
list, never builds on a base that fails them.
"""
from __future__ import annotations

from typing import Iterable, Mapping

from icefloe.impl.format.manifest import (
    DataFile, ManifestContent, ManifestEntry, ManifestEntryStatus, ManifestFile,
)
from icefloe.impl.outcomes import IcefloeError

__all__ = ["CorruptMetadata", "check_manifest_list", "check_manifest_length", "check_manifest_entries",
           "check_manifest_counts",
           "check_data_file"]


class CorruptMetadata(IcefloeError):
    """What was read disagrees with the counts that describe it: `location` names the
    object read, `described_by` the object holding the counts."""

    def __init__(self, location: str, message: str, described_by: str | None = None):
        where = f" (described by {described_by})" if described_by else ""
        super().__init__(f"{location}: {message}{where}")
        self.location = location
        self.described_by = described_by


def _total(summary: Mapping[str, str], key: str) -> int | None:
    value = summary.get(key)
    try:
        return None if value is None else int(value)
    except ValueError:
        return None  # a summary is free-form text; an unparsable total is no evidence


def check_manifest_list(manifests: Iterable[ManifestFile], summary: Mapping[str, str], location: str,
                        snapshot_id: int | None = None) -> None:
    """The list at `location` against its snapshot's summary totals."""
    manifests = list(manifests)
    described_by = None if snapshot_id is None else f"snapshot {snapshot_id}'s summary"
    for content, files_key, rows_keys in (
            (ManifestContent.DATA, "total-data-files", ("total-records",)),
            (ManifestContent.DELETES, "total-delete-files", ("total-position-deletes", "total-equality-deletes"))):
        listed = [m for m in manifests if m.content == content]
        files = _live_sum(listed, "added_files_count", "existing_files_count")
        rows = _live_sum(listed, "added_rows_count", "existing_rows_count")
        expected_files = _total(summary, files_key)
        if files is not None and expected_files is not None and files != expected_files:
            raise CorruptMetadata(location, f"lists {files} live {content.name.lower()} files in "
                                            f"{len(listed)} manifests, the summary says {files_key}="
                                            f"{expected_files}", described_by)
        totals = [_total(summary, k) for k in rows_keys]
        if rows is not None and None not in totals and rows != sum(totals):
            raise CorruptMetadata(location, f"lists {rows} live {content.name.lower()} rows, the summary "
                                            f"says {'+'.join(rows_keys)}={sum(totals)}", described_by)


def _live_sum(manifests: list[ManifestFile], added: str, existing: str) -> int | None:
    """The sum of two counts over the list entries; None when an entry leaves one out
    (a v1 list may): then there is no evidence either way."""
    values = [(getattr(m, added), getattr(m, existing)) for m in manifests]
    if any(None in v for v in values):
        return None
    return sum(a + e for a, e in values)


def check_manifest_length(manifest: ManifestFile | None, size: int, location: str) -> None:
    """A manifest's size against its list entry's `manifest_length` (readers such as
    Iceberg-Java open the file with that length, so writers record it exactly)."""
    if manifest is not None and manifest.manifest_length is not None and manifest.manifest_length != size:
        raise CorruptMetadata(location, f"is {size} bytes, its manifest list entry says "
                                        f"{manifest.manifest_length}")


def check_manifest_entries(manifest: ManifestFile | None, entries: Iterable[ManifestEntry],
                           location: str) -> None:
    """A manifest's entries against its list entry's file and row counts per status."""
    if manifest is None:
        return
    files = {s: 0 for s in ManifestEntryStatus}
    rows = {s: 0 for s in ManifestEntryStatus}
    for e in entries:
        files[e.status] += 1
        rows[e.status] += e.data_file.record_count
    check_manifest_counts(manifest, files, rows, location)


def check_manifest_counts(manifest: ManifestFile | None, files: dict[int, int], rows: dict[int, int],
                          location: str) -> None:
    """Entry and row counts per status (keyed by ManifestEntryStatus value), counted by a
    reader that builds no entries, against the manifest's list entry."""
    if manifest is None:
        return
    for status, files_count, rows_count in (
            (ManifestEntryStatus.ADDED, manifest.added_files_count, manifest.added_rows_count),
            (ManifestEntryStatus.EXISTING, manifest.existing_files_count, manifest.existing_rows_count),
            (ManifestEntryStatus.DELETED, manifest.deleted_files_count, manifest.deleted_rows_count)):
        name = status.name.lower()
        if files_count is not None and files[status] != files_count:
            raise CorruptMetadata(location, f"has {files[status]} {name} entries, its manifest list entry "
                                            f"says {files_count}")
        if rows_count is not None and rows[status] != rows_count:
            raise CorruptMetadata(location, f"has {rows[status]} rows in {name} entries, its manifest list "
                                            f"entry says {rows_count}")


def check_data_file(data_file: DataFile, rows: int) -> None:
    """A data or delete file's row count (from its footer) against its manifest entry."""
    if rows != data_file.record_count:
        raise CorruptMetadata(data_file.file_path, f"holds {rows} rows, its manifest entry says "
                                                   f"record_count={data_file.record_count}")
