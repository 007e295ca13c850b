"""The v3 phase judges the row-level code people call (issue 30 items 3, 8): icefloe's v3
adapter (conformance/engines/icefloe_v3.py) updates rows through impl's merge-on-read update
(UpdateRows, what Table.update runs) and deletes writer 1's rows through impl's RowDelta with
a DV it wrote itself, the others' through DeleteRows; breaking either path fails the phase."""
from __future__ import annotations

from collections import defaultdict

import pyarrow as pa
import pytest

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import icefloe_engine as I
from icefloe.conformance.engines import icefloe_v3 as V3
from icefloe.conformance.suite.backends import Backends
from icefloe.conformance.v3 import phase
from icefloe.conformance.violation import Violation
from icefloe.impl.catalog.memory import MemoryCatalog
from icefloe.impl.format.manifest import ManifestContent
from icefloe.impl.io.base import NotFound
from icefloe.impl.io.memory import MemoryStore
from icefloe.impl.outcomes import Committed, Conflict
from icefloe.impl.table import producer as P
from icefloe.impl.table import row_updates as RU
from icefloe.impl.table.deletes import DeleteReader
from icefloe.impl.table.env import Env
from icefloe.impl.table.row_deletes import DeleteRows
from icefloe.impl.table.scan import ROW_ID
from icefloe.impl.table.table import Table, create_table


def run_phase(stop_at_first: bool = True):
    """conform's v3 phase on icefloe (every program of dvs and lineage): the Violations it
    raised (only the first if `stop_at_first`) and the classes covered per family."""
    engine = I.engine()
    plans = phase.plan(engine)
    covered = phase.new_covered()
    found = []
    backends = Backends()
    try:
        for fp in plans:
            for program in fp.programs:
                try:
                    phase.replay(engine, program.labels, program.bounds, backends, phase.store_for(engine),
                                 None, covered)
                except Violation as v:
                    found.append(v)
                    if stop_at_first:
                        return found, phase.coverage(plans, covered)
    finally:
        backends.close()
    return found, phase.coverage(plans, covered)


def _kinds(op) -> tuple:
    """What an operation superseded: 'dv' and/or 'position deletes' (a DV's key has an offset)."""
    return tuple(sorted({"dv" if offset is not None else "position deletes" for _, offset in getattr(op, "removed_deletes", ())}))


@pytest.fixture(scope="module")
def driven():
    """Every commit the phase made on icefloe: operation class -> {(outcome, superseded)}."""
    seen = defaultdict(set)
    begin = I.IcefloeTable.begin

    def recording(self, writer, op):
        commit = begin(self, writer, op)
        commits.append(commit)
        return commit
    commits: list = []
    I.IcefloeTable.begin = recording
    try:
        found, coverage = run_phase(stop_at_first=False)
    finally:
        I.IcefloeTable.begin = begin
    for commit in commits:
        op = commit.pending.operation
        op = getattr(op, "_inner", op)              # Tagged(op): the suite's op id in the summary
        seen[type(op).__name__].add((type(commit.outcome).__name__, _kinds(op)))
    return found, coverage, seen


def test_the_phase_passes_at_full_coverage_through_the_real_paths(driven):
    """Goal: icefloe passes the v3 phase with row updates through UpdateRows and row deletes
    through both RowDelta (an engine's DV) and DeleteRows, every class covered. Method: the
    phase's programs run with every commit recorded."""
    found, coverage, seen = driven
    assert not found, [str(v)[:300] for v in found]
    for family in ("dvs", "lineage"):
        assert coverage[family]["covered"] == coverage[family]["total"] > 0, coverage[family]
    assert "UpdateRow" not in seen and "UpdateRows" in seen       # no copy of the update logic
    assert {"EngineDVDelete", "DeleteRows"} <= set(seen)


def test_both_delete_paths_meet_every_case(driven):
    """Goal: each DV path commits a first DV, a DV replacing a DV and a DV merging position
    deletes, and the delete paths end in conflict against a rival. Method: the recorded
    commits' outcomes and what each superseded (DeleteRows' planning merges position deletes
    through UpdateRows, a DeleteRows: writer 1 has the upgraded instance's row_delete)."""
    _, _, seen = driven
    every = {("Committed", ()), ("Committed", ("dv",)), ("Committed", ("position deletes",))}
    for name in ("EngineDVDelete", "UpdateRows"):
        assert every <= seen[name], (name, sorted(seen[name]))
    assert every - {("Committed", ("position deletes",))} <= seen["DeleteRows"], sorted(seen["DeleteRows"])
    for name in ("EngineDVDelete", "DeleteRows"):
        assert any(outcome == "Conflict" for outcome, _ in seen[name]), (name, sorted(seen[name]))


def _superseded_dv_left_live(monkeypatch):
    """RowDelta's supersede forgets the DV an engine's new DV replaces (position deletes kept)."""
    supersede = P.supersede

    def broken(c, dvs):
        removed, referenced = supersede(c, dvs)
        return {k for k in removed if k[1] is None}, referenced
    monkeypatch.setattr(P, "supersede", broken)


def test_a_row_delta_leaving_the_old_dv_live_fails_p11(monkeypatch):
    """Goal: the phase judges RowDelta's engine-written-DV path by the suite's own property, not
    only by icefloe's assertion. Method: supersede broken and FileChange's one-DV assertion off;
    the phase must name P11 OneLiveDV."""
    _superseded_dv_left_live(monkeypatch)
    monkeypatch.setattr(P.FileChange, "_check_one_dv_per_file", lambda self, c: None)
    found, _ = run_phase()
    assert found and found[0].prop == "P11 OneLiveDV", [str(v)[:300] for v in found]


def test_an_update_giving_new_row_ids_fails_p13(monkeypatch):
    """Goal: the phase judges UpdateRows' row lineage. Method: impl's `updated` writes the
    updated rows with null _row_ids (new ids); the phase must name P13 RowIdsUnique."""
    updated = RU.updated

    def new_ids(rows, schema, assignments):
        out = updated(rows, schema, assignments)
        i = out.schema.get_field_index(ROW_ID)
        return out if i < 0 else out.set_column(i, out.schema.field(i), pa.nulls(out.num_rows, pa.int64()))
    monkeypatch.setattr(RU, "updated", new_ids)
    found, _ = run_phase()
    assert found and found[0].prop == "P13 RowIdsUnique", [str(v)[:300] for v in found]


# -- the adapter's operations on a table of their own --------------------------------------

ROWS = pa.schema([pa.field(A.COLUMN, pa.string(), nullable=False)])


@pytest.fixture
def table():
    store, catalog = MemoryStore(), MemoryCatalog()
    env = Env.seeded(7)
    create_table(catalog, "db.t", I.SCHEMA, location="memory://w/db/t", io=store, env=env, format_version=3)
    t = Table(catalog, "db.t", store, env)
    assert isinstance(t.append(pa.Table.from_pylist([{A.COLUMN: r} for r in ("a", "b", "c")], schema=ROWS)),
                      Committed)
    return t


def _run(table: Table, operation):
    pending = table.begin(operation)
    pending.run()
    return table.adopt(pending)


def _live_dvs(table: Table) -> list:
    table.refresh()
    snap = table.metadata.current_snapshot()
    return [e.data_file for _, e in table.tree.live_entries(snap, ManifestContent.DELETES)
            if e.data_file.is_deletion_vector]


def test_engine_dv_delete_replaces_the_files_dv(table):
    """Goal: writer 1's delete writes a DV holding the file's earlier positions and RowDelta
    replaces the old DV. Method: two deletes in turn; one live DV with both positions, the
    rows read without them; a row live nowhere is a no-op."""
    assert isinstance(V3.operation(table, A.OpSpec(A.ROW_DELETE, "1.1", row="a")), V3.EngineDVDelete)
    assert isinstance(V3.operation(table, A.OpSpec(A.ROW_DELETE, "2.1", row="a")), DeleteRows)
    assert isinstance(_run(table, V3.EngineDVDelete("a")), Committed)
    assert isinstance(_run(table, V3.EngineDVDelete("c")), Committed)
    (dv,) = _live_dvs(table)
    assert sorted(int(p) for p in DeleteReader(table.io).dv_positions(dv)) == [0, 2]
    assert table.refresh().scan().column(A.COLUMN).to_pylist() == ["b"]
    head = table.metadata.current_snapshot_id
    out = _run(table, V3.EngineDVDelete("a"))
    assert isinstance(out, Committed) and out.snapshot_id is None and table.refresh().metadata.current_snapshot_id == head


def test_engine_dv_delete_conflicts_with_a_rival_dv_and_removes_its_puffin(table):
    """Goal: a DV written for a file that got a rival's DV meanwhile is refused (the conflict
    policy) and its Puffin file deleted. Method: two deletes begun from one snapshot, the
    DeleteRows one committed first; the engine's ends Conflict, its file gone, one DV live."""
    mine = table.begin(V3.EngineDVDelete("a"))
    mine.step()                                            # plan: the DV written
    (puffin,) = [loc for loc in mine.written if loc.endswith(".puffin")]
    assert isinstance(_run(table, DeleteRows(V3.row_filter("b"), isolation=P.SERIALIZABLE)), Committed)
    mine.run()
    assert isinstance(table.adopt(mine), Conflict)
    with pytest.raises(NotFound):
        table.io.stat(puffin)
    (dv,) = _live_dvs(table)
    assert sorted(int(p) for p in DeleteReader(table.io).dv_positions(dv)) == [1]


def test_update_row_is_the_merge_on_read_update(table):
    """Goal: row_update is impl's UpdateRows and the row keeps its _row_id. Method: the
    adapter's operation for row_update, committed; the row read back with its id, one DV."""
    op = V3.operation(table, A.OpSpec(A.ROW_UPDATE, "2.1", row="b"))
    assert type(op) is RU.UpdateRows
    before = dict(zip(*table.scan(columns=[A.COLUMN, ROW_ID]).to_pydict().values()))
    assert isinstance(_run(table, op), Committed)
    after = dict(zip(*table.refresh().scan(columns=[A.COLUMN, ROW_ID]).to_pydict().values()))
    assert after == before and len(_live_dvs(table)) == 1
    noop = _run(table, V3.operation(table, A.OpSpec(A.ROW_UPDATE, "2.1", row=None)))
    assert isinstance(noop, Committed) and noop.snapshot_id is None
