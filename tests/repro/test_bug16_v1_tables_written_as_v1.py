"""bug16 (../shared/repro/bug16_write_to_v1_table_reported_as_unavailable.sh): any write to a
format-v1 table ended "not committed: storage or catalog unavailable" with exit 1, because
icefloe wrote v2 metadata only. Now a v1 table is read and written as v1 (issue 29 item 1),
an unsupported version is bad input (exit 2, named), and the CLI creates and upgrades
tables by version."""
from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from icefloe.impl.cli import EXIT_OK, EXIT_USAGE, main as cli_main


def _latest_metadata(root: Path) -> Path:
    return sorted((root / "warehouse/db/t/metadata").glob("*.metadata.json"))[-1]


def _setup(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    pq.write_table(pa.table({"id": pa.array(range(10), pa.int64()), "cat": list("aabbccddee")}), "rows.parquet")


def test_writes_to_a_table_marked_v1_commit_as_v1(tmp_path, monkeypatch, capsys):
    """Goal: the repro's steps (a v2 table whose current metadata is edited to say v1; scan,
    tag create, append) commit, exit 0, and leave v1 metadata and a v1 manifest list.
    Method: the script's steps through the CLI's main, then read the files written."""
    _setup(tmp_path, monkeypatch)
    assert cli_main(["create", "db.t", "--schema-from", "rows.parquet"]) == EXIT_OK
    assert cli_main(["append", "db.t", "rows.parquet"]) == EXIT_OK
    path = _latest_metadata(tmp_path)
    doc = json.loads(path.read_text())
    doc["format-version"] = 1
    path.write_text(json.dumps(doc))
    assert cli_main(["scan", "db.t", "--limit", "2"]) == EXIT_OK
    assert cli_main(["tag", "create", "db.t", "v1"]) == EXIT_OK
    assert cli_main(["append", "db.t", "rows.parquet"]) == EXIT_OK
    err = capsys.readouterr().err
    assert "unavailable" not in err
    after = json.loads(_latest_metadata(tmp_path).read_text())
    assert after["format-version"] == 1 and "v1" in after["refs"]
    assert "last-sequence-number" not in after and all("sequence-number" not in s for s in after["snapshots"])
    listed = fastavro.reader(io.BytesIO(Path(after["snapshots"][-1]["manifest-list"].removeprefix("file://")).read_bytes()))
    assert listed.metadata["format-version"] == "1"
    assert {f.get("field-id") for f in listed.writer_schema["fields"]}.isdisjoint({515, 516, 517})


def test_cli_creates_each_version_upgrades_one_step_and_refuses_the_rest(tmp_path, monkeypatch, capsys):
    """Goal: `create --format-version N` makes a vN table, `upgrade` goes one step up, a skip,
    a downgrade or a table of an unknown version is exit 2 naming the version. Method: the
    CLI on a v1 table, then a metadata file edited to say v4."""
    _setup(tmp_path, monkeypatch)
    assert cli_main(["create", "db.t", "--schema-from", "rows.parquet", "--format-version", "1"]) == EXIT_OK
    assert cli_main(["append", "db.t", "rows.parquet"]) == EXIT_OK
    assert json.loads(_latest_metadata(tmp_path).read_text())["format-version"] == 1
    assert cli_main(["upgrade", "db.t", "--format-version", "3"]) == EXIT_USAGE
    assert "one version at a time" in capsys.readouterr().err
    assert cli_main(["upgrade", "db.t", "--format-version", "2"]) == EXIT_OK
    assert cli_main(["upgrade", "db.t", "--format-version", "3"]) == EXIT_OK
    assert json.loads(_latest_metadata(tmp_path).read_text())["next-row-id"] == 0
    assert cli_main(["upgrade", "db.t", "--format-version", "2"]) == EXIT_USAGE
    assert "cannot downgrade a v3 table to v2" in capsys.readouterr().err
    assert cli_main(["delete", "db.t", "--filter", "id < 2", "--mode", "merge-on-read"]) == EXIT_OK
    capsys.readouterr()
    assert cli_main(["scan", "db.t", "--format", "json"]) == EXIT_OK
    assert sorted(r["id"] for r in json.loads(capsys.readouterr().out)) == list(range(2, 10))
    path = _latest_metadata(tmp_path)
    doc = json.loads(path.read_text())
    doc["format-version"] = 4
    path.write_text(json.dumps(doc))
    assert cli_main(["append", "db.t", "rows.parquet"]) == EXIT_USAGE
    assert "unsupported format version 4" in capsys.readouterr().err
