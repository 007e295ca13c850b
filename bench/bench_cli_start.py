"""How long the command line takes to answer before it does any work: `icefloe --help` and
`icefloe create --help`, side by side with pyiceberg 0.12's own command line (`pyiceberg
--help`), each a whole process, CPU and wall time (issue 28: the front door is impl's and
heavy imports happen inside the command that needs them)."""
from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

TITLE = "Command-line start: `icefloe --help` vs `pyiceberg --help`"
BIN = Path(sys.executable).parent
COMMANDS = {
    "icefloe --help": [str(BIN / "icefloe"), "--help"],
    "icefloe create --help": [str(BIN / "icefloe"), "create", "--help"],
    "pyiceberg --help": [str(BIN / "pyiceberg"), "--help"],
}
PEER = "pyiceberg --help"


def _once(argv: list) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one whole process: its own rusage, read after it is reaped."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def run(quick: bool) -> str:
    rounds = 5 if quick else 20
    for argv in COMMANDS.values():
        _once(argv)                                   # warm the page cache and the .pyc files
    cpu: dict = {n: [] for n in COMMANDS}
    wall: dict = {n: [] for n in COMMANDS}
    for i in range(rounds):
        names = list(COMMANDS) if i % 2 == 0 else list(reversed(COMMANDS))   # alternate the order
        for name in names:
            c, w = _once(COMMANDS[name])
            cpu[name].append(c)
            wall[name].append(w)
    med = {n: (statistics.median(cpu[n]), statistics.median(wall[n])) for n in COMMANDS}
    peer_cpu, peer_wall = med[PEER]
    lines = [
        f"{rounds} rounds, the commands in alternating order, each a whole process (its CPU from "
        "the kernel's accounting of the reaped child); medians.", "",
        "| command | CPU s | wall s | CPU vs pyiceberg --help | wall vs pyiceberg --help |",
        "|---|---|---|---|---|",
    ]
    for name, (c, w) in med.items():
        lines.append(f"| `{name}` | {c:.3f} | {w:.3f} | {c / peer_cpu:.2f}x | {w / peer_wall:.2f}x |")
    lines += ["", "Before the front door moved to `icefloe.impl.cli` (issue 28; at 8b90008, the same "
              "measurement by hand, 10 runs): `icefloe --help` took 0.576 s of CPU and 2.16 s of wall "
              "time on a loaded machine, importing pyarrow, boto3 and the whole table layer for a help "
              "text; the same run measured 0.089 s of CPU for today's (0.15x). "
              "tests/impl/cli/test_cli_imports.py holds that no help text imports pyarrow, boto3 or "
              "hypothesis."]
    return "\n".join(lines)


if __name__ == "__main__":
    print(run("--quick" in sys.argv))
