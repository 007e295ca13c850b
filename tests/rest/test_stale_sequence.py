"""A commit whose requirements hold but whose snapshot is numbered for an older version of
the table (main rolled back to the snapshot it was built on: an ABA the requirement cannot
see) is a conflict the client can retry, 409, not a 400 it cannot (apache/iceberg #15001,
fixed by #15126; found by the suite's REST lockstep through pyiceberg). Method: build an
append, let another append land and a rollback restore main, then send the first."""
from __future__ import annotations

from icefloe.conformance.testing.rest_client import RestClient

from rest_helpers import append, head, main_ancestry, make_table, metadata_files


def test_a_snapshot_numbered_for_an_older_version_is_a_conflict(server, warehouse):
    """Goal: 409 CommitFailedException, nothing written, and the client's retry (renumbered)
    lands. Method: raw REST commits against icefloe serve."""
    client = RestClient(server.url)
    make_table(client)
    assert append(client, 1).status == 200
    _, stale = head(client)                      # what the slow writer built its append on
    assert append(client, 2).status == 200
    rollback = client.commit("db", "t", [], [{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch",
                                              "snapshot-id": 1}])
    assert rollback.status == 200
    files = metadata_files(warehouse)
    seq = stale["last-sequence-number"] + 1
    snapshot = {"snapshot-id": 3, "parent-snapshot-id": 1, "sequence-number": seq, "timestamp-ms": 1_700_000_000_999,
                "manifest-list": f"{stale['location']}/metadata/snap-3-1-probe.avro", "summary": {"operation": "append"},
                "schema-id": 0}
    answer = client.commit("db", "t", [{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": 1}],
                           [{"action": "add-snapshot", "snapshot": snapshot},
                            {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": 3}])
    assert answer.status == 409 and answer.type == "CommitFailedException", answer
    assert metadata_files(warehouse) == files and main_ancestry(client) == [1]
    assert append(client, 3).status == 200 and main_ancestry(client) == [3, 1]
