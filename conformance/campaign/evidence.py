"""What a concurrency campaign leaves behind, read once its faults are healed (talking to
S3 and the catalog directly, no proxy): each Unknown resolved the way its writer would
later (spec/PROTOCOL.md 9.6), then every metadata file under the table, the live data
files of every snapshot they hold and the rows of every data file, as `campaign_judge.Evidence`.

What cannot be read is evidence too, never a crash: a snapshot whose manifest list or
manifests are gone, or a data file that is absent, is recorded (`Evidence.unreadable`,
`Evidence.missing_files`); the judge names it a dangling reference when a committed state
(a version on the lineage) holds it (P8 NoDanglingRefs). Off the lineage it is only garbage
an Unknown's writer left, or a Conflict's cleanup cut short: orphan removal's business.
"""
from __future__ import annotations

import io as _io

from icefloe.conformance.campaign.judge import COMMITTED, CONFLICT, UNKNOWN, Evidence
from icefloe.model.checks.history import SnapshotRecord, TableHistory


def resolve_unknowns(ops, store, catalog, table: str) -> dict:
    """op_id -> (committed | conflict | unknown, location) for each Unknown (9.6)."""
    from icefloe.impl.catalog.base import TableIdentifier
    from icefloe.impl.outcomes import Committed, Conflict, Unknown
    from icefloe.impl.table.commit import resolve_unknown
    out = {}
    for o in ops:
        if o.outcome != UNKNOWN:
            continue
        outcome = resolve_unknown(catalog, TableIdentifier.parse(table), store,
                                  Unknown(o.reason, o.attempts, o.snapshot_id, o.attempted_locations))
        if isinstance(outcome, Committed):
            out[o.op_id] = (COMMITTED, outcome.metadata_location)
        elif isinstance(outcome, Conflict):
            out[o.op_id] = (CONFLICT, None)
        else:
            out[o.op_id] = (UNKNOWN, None)
    return out


def gather_evidence(store, catalog, ops, resolutions, reads, observed, table: str) -> Evidence:
    """The module docstring's reading, into an Evidence."""
    import pyarrow.parquet as pq
    from icefloe.impl.catalog.base import TableIdentifier
    from icefloe.impl.io.base import NotFound
    from icefloe.impl.outcomes import IcefloeError
    from icefloe.impl.table.commit import read_metadata
    from icefloe.impl.table.files import TreeReader
    current = catalog.load(TableIdentifier.parse(table))
    location = read_metadata(store, current).location
    tree, entries, snap_files, bad, unreadable = TreeReader(store), [], {}, {}, {}
    for info in store.list(f"{location}/metadata/"):
        if not info.location.endswith(".metadata.json"):
            continue
        m = read_metadata(store, info.location)
        previous = m.metadata_log[-1].metadata_file if m.metadata_log else None
        snaps = []
        for s in m.snapshots:
            key = (s.snapshot_id, s.manifest_list)
            if key not in snap_files:
                try:
                    snap_files[key] = frozenset(tree.live_data_paths(s))
                except (IcefloeError, ValueError) as e:  # gone or unreadable: recorded, judged later
                    snap_files[key] = frozenset()
                    bad[key] = f"{type(e).__name__}: {e}"
            if key in bad:
                unreadable[(info.location, s.snapshot_id)] = bad[key]
            snaps.append(SnapshotRecord(s.snapshot_id, s.parent_snapshot_id, s.operation or "", snap_files[key]))
        entries.append((info.location, previous, m.current_snapshot_id, snaps))
    file_rows, missing = {}, {}
    for path in sorted(set().union(*snap_files.values()) if snap_files else ()):
        try:
            t = pq.read_table(_io.BytesIO(store.get(path)), columns=["id", "cat"])
        except NotFound:
            missing[path] = "absent"
            continue
        file_rows[path] = tuple(zip(t.column("id").to_pylist(), t.column("cat").to_pylist()))
    return Evidence(TableHistory.from_versions(entries, current), tuple(ops), tuple(reads), tuple(observed),
                    file_rows, resolutions, unreadable=unreadable, missing_files=missing)
