"""`icefloe scan` of a 1M-row table in each output format: peak RSS and seconds of the
command, side by side with what a pyiceberg 0.12 user runs for the same output on the same
table (one SQLite catalog file): `table.scan().to_arrow()` then the same writer, and the
streaming `to_arrow_batch_reader()` where the format allows it."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import peers  # noqa: E402
from icefloe.impl.format.types import schema_from_arrow  # noqa: E402
from icefloe.impl.io.local import LocalStore  # noqa: E402
from icefloe.impl.table.table import create_table  # noqa: E402

TITLE = "icefloe scan: peak memory and time of a 1M-row scan, per output format"
FORMATS = ("csv", "jsonl", "table")

# Run a command, count its output lines as they come, print exit code, lines, peak RSS (MB)
# of the command alone (RUSAGE_CHILDREN of this wrapper) and seconds.
MEASURE = """
import resource, subprocess, sys, time
t0 = time.monotonic()
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
lines = 0
while chunk := p.stdout.read(1 << 20):
    lines += chunk.count(b"\\n")
p.wait()
print(p.returncode, lines, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, time.monotonic() - t0)
"""

# The pyiceberg side: what its user writes for each format (argv: uri, format, mode).
PEER = """
import io, json, sys
import pyarrow.csv as pa_csv
from pyiceberg.catalog.sql import SqlCatalog
uri, fmt, mode = sys.argv[1:4]
scan = SqlCatalog("icefloe", uri=uri).load_table("db.big").scan()
batches = scan.to_arrow_batch_reader() if mode == "batches" else scan.to_arrow().to_batches()
out = sys.stdout.buffer
header = True
for batch in batches:
    if fmt == "csv":
        buf = io.BytesIO()
        pa_csv.write_csv(batch, buf, pa_csv.WriteOptions(include_header=header))
        out.write(buf.getvalue())
        header = False
    else:
        for row in batch.to_pylist():
            out.write((json.dumps(row, default=str) + "\\n").encode())
out.flush()
"""


def _rows(n: int, start: int) -> pa.Table:
    rng = np.random.default_rng(start)
    ts = np.datetime64("2024-01-01") + rng.integers(0, 86_400 * 30, n).astype("timedelta64[s]")
    return pa.table({"id": pa.array(np.arange(start, start + n), pa.int64()),
                     "cat": pa.array(rng.choice(["alpha", "beta", "gamma", "delta"], n)),
                     "ts": pa.array(ts.astype("datetime64[us]")), "amount": pa.array(rng.random(n) * 1000)})


def measure(argv) -> tuple[int, int, float]:
    done = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, check=True)
    code, lines, rss, seconds = done.stdout.split()
    if int(code) != 0:
        raise RuntimeError(f"{argv} exited {code}: {done.stderr[-500:]}")
    return int(lines), int(rss), float(seconds)


def run(quick: bool) -> str:
    n = 100_000 if quick else 1_000_000
    w = peers.Warehouse()
    half = _rows(n // 2, 0)
    table = create_table(w.catalog, "db.big", schema_from_arrow(half.schema), location=w.location("big"),
                         io=LocalStore())
    table.append(half)
    table.append(_rows(n // 2, n // 2))
    base = [sys.executable, "-m", "icefloe.impl.cli", "--catalog", w.uri, "scan", "db.big", "--format"]
    rows = []
    for fmt in FORMATS:
        ours = measure([*base, fmt])
        peer_fmt = "csv" if fmt == "csv" else "jsonl"
        whole = measure([sys.executable, "-c", PEER, w.uri, peer_fmt, "whole"])
        streamed = measure([sys.executable, "-c", PEER, w.uri, peer_fmt, "batches"])
        rows.append((fmt, ours, whole, streamed))
    out = [f"A table of {n:,} rows (id long, cat string, ts timestamp, amount double; two data files of "
           f"{n // 2:,} rows, written by icefloe). Each command runs in its own process; peak RSS is that "
           "process's maximum resident set (RUSAGE_CHILDREN), its output counted as it streams. The peer "
           "writes the same output with pyarrow's CSV writer or one json.dumps per row, from "
           "`scan().to_arrow()` (whole) or `scan().to_arrow_batch_reader()` (streamed); for `table` the "
           "peer column is its JSON-lines run (pyiceberg has no aligned-table writer). A Python process "
           "with pyarrow imported starts near 100 MB.", "",
           "| format | icefloe MB | pyiceberg whole MB | pyiceberg streamed MB | icefloe / whole | "
           "icefloe / streamed | icefloe s | pyiceberg whole s | pyiceberg streamed s |",
           "|---|---|---|---|---|---|---|---|---|"]
    for fmt, (_, r0, s0), (_, r1, s1), (_, r2, s2) in rows:
        out.append(f"| {fmt} | {r0} | {r1} | {r2} | {r0 / r1:.2f} | {r0 / r2:.2f} | {s0:.1f} | {s1:.1f} | {s2:.1f} |")
    out += ["", "Before streaming (issue 16), `icefloe scan` of 900k rows as JSON took about 1 GB."]
    return "\n".join(out)
