"""Fixtures of the rest_engines suite: `icefloe serve` on 127.0.0.1 behind the per-writer
commit faults (conformance.testing.rest_faults), on a local warehouse, for the engines
under test through REST (pyiceberg here; Iceberg-Java in tests/java)."""
from __future__ import annotations

import pytest

from icefloe.conformance.testing import rest_engine_probe as P, rest_faults as F
from icefloe.conformance.testing.rest_server import RestServer


class FaultyServer:
    def __init__(self, server, faults, warehouse):
        self.server, self.faults, self.warehouse = server, faults, warehouse

    @property
    def url(self):
        return self.server.url


@pytest.fixture(scope="module")
def faulty_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("rest-engines")
    box = {}

    def wrap(app):
        box["faults"] = F.RestFaults(app, tokens=P.writer_tokens())
        return box["faults"]
    with RestServer(f"sqlite:///{root}/catalog.db", str(root / "warehouse"), wrap=wrap) as server:
        yield FaultyServer(server, box["faults"], f"file://{root}/warehouse")
        box["faults"].close()
