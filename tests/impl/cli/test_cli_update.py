"""`icefloe update` (issue 29 item 3): the rows' lineage through the command line on a v3
table, copy-on-write and merge-on-read, read back with `scan --columns _row_id,...`; and
its mistakes refused by name with exit 2, nothing committed."""
from __future__ import annotations

import csv
import io
import json

import pyarrow as pa
import pytest


def _lineage(cli) -> dict[int, tuple]:
    out = cli.ok("scan", "db.t", "--columns", "id,status,_row_id,_last_updated_sequence_number", "--format", "csv")
    return {int(r["id"]): (r["status"], int(r["_row_id"]), int(r["_last_updated_sequence_number"]))
            for r in csv.DictReader(io.StringIO(out))}


def _snapshots(cli) -> list[dict]:
    return json.loads(cli.ok("inspect", "db.t", "snapshots", "--format", "json"))


@pytest.mark.parametrize("mode", ["copy-on-write", "merge-on-read"])
def test_update_keeps_row_ids_and_scan_shows_the_updates_sequence_number(cli, mode):
    """Goal: through the CLI an updated row keeps its _row_id and reads the update's sequence
    number, the other rows keep both, and a later append gets ids from next-row-id.
    Method: create v3, two appends, `update --set status=closed`, scan the lineage columns."""
    cli.write("a.parquet", id=pa.array([1, 2, 3], pa.int64()), status=["open"] * 3)
    cli.write("b.parquet", id=pa.array([4, 5], pa.int64()), status=["open"] * 2)
    cli.write("c.parquet", id=pa.array([6], pa.int64()), status=["new"])
    cli.ok("create", "db.t", "--schema-from", "a.parquet", "--format-version", "3")
    cli.ok("append", "db.t", "a.parquet")
    cli.ok("append", "db.t", "b.parquet")
    before = _lineage(cli)
    assert before == {1: ("open", 0, 1), 2: ("open", 1, 1), 3: ("open", 2, 1), 4: ("open", 3, 2), 5: ("open", 4, 2)}
    out = cli.ok("update", "db.t", "--set", "status=closed", "--filter", "id in (2, 5)", "--mode", mode)
    assert "committed snapshot" in out
    assert _lineage(cli) == {**before, 2: ("closed", 1, 3), 5: ("closed", 4, 3)}
    assert _snapshots(cli)[-1]["operation"] == "overwrite"
    next_row_id = cli.pyiceberg().metadata.next_row_id   # as another reader sees the metadata
    assert next_row_id >= 7 if mode == "copy-on-write" else next_row_id == 7   # 5 + the 2 updated rows
    cli.ok("append", "db.t", "c.parquet")
    got = _lineage(cli)
    assert got[6] == ("new", next_row_id, 4)
    assert len({v[1] for v in got.values()}) == 6
    assert "nothing to do" in cli.ok("update", "db.t", "--set", "status=x", "--filter", "id > 100", "--mode", mode)


def test_update_mistakes_are_refused_with_exit_2_and_nothing_committed(cli):
    """Goal: a lineage column, an unknown column, a value of the wrong type, a malformed
    --set and merge-on-read below v3 each exit 2 with one line naming the mistake, and no
    snapshot is added. Method: each on a table, count snapshots after."""
    cli.write("a.parquet", id=pa.array([1, 2], pa.int64()), status=["open"] * 2)
    cli.ok("create", "db.t", "--schema-from", "a.parquet")          # v2
    cli.ok("append", "db.t", "a.parquet")
    n = len(_snapshots(cli))
    assert "_row_id is a row lineage column" in cli.fails("update", "db.t", "--set", "_row_id=7", "--filter", "id = 1")
    assert "no top-level column 'nope'" in cli.fails("update", "db.t", "--set", "nope=1", "--filter", "id = 1")
    assert "not a long" in cli.fails("update", "db.t", "--set", "id=abc", "--filter", "id = 1")
    assert "COLUMN=VALUE" in cli.fails("update", "db.t", "--set", "status", "--filter", "id = 1")
    assert "given twice" in cli.fails("update", "db.t", "--set", "id=1", "--set", "id=2", "--filter", "id = 1")
    assert "format v3" in cli.fails("update", "db.t", "--set", "status=x", "--filter", "id = 1",
                                    "--mode", "merge-on-read")
    assert len(_snapshots(cli)) == n
    cli.ok("update", "db.t", "--set", "status=null", "--filter", "id = 1")   # copy-on-write on v2
    rows = json.loads(cli.ok("scan", "db.t", "--format", "json"))
    assert sorted((r["id"], r["status"]) for r in rows) == [(1, None), (2, "open")]
