"""`icefloe serve` as a user runs it: goal, the console command starts the server on the
catalog and warehouse it is given, with the token it is given, and pyiceberg's RestCatalog
works through it; method, the command in a subprocess on a free port, stopped by its pid."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pyarrow as pa
import requests

from icefloe.conformance.testing.rest_server import free_port

START_WAIT_S = 60


def test_serve_command_with_token(tmp_path):
    """Goal: the command serves, refuses a request without the token, and a client with the
    token creates and appends; method: subprocess, /v1/config polled, pyiceberg writes."""
    from pyiceberg.catalog.rest import RestCatalog
    port = free_port()
    exe = os.path.join(os.path.dirname(sys.executable), "icefloe")
    proc = subprocess.Popen([exe, "--catalog", f"sqlite:///{tmp_path}/cat.db", "--warehouse", str(tmp_path / "wh"),
                             "serve", "--port", str(port), "--token", "t0k"], stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_WAIT_S
        while True:
            try:
                status = requests.get(url + "/v1/config", timeout=2).status_code
                break
            except requests.ConnectionError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
                time.sleep(0.2)
        assert status == 401
        catalog = RestCatalog("r", uri=url, token="t0k")
        catalog.create_namespace("db")
        table = catalog.create_table("db.t", schema=pa.schema([("id", pa.int64())]))
        table.append(pa.table({"id": [1, 2]}))
        assert catalog.load_table("db.t").scan().to_arrow().num_rows == 2
        assert (tmp_path / "wh" / "db" / "t" / "metadata").is_dir()
    finally:
        proc.terminate()
        proc.wait(20)
