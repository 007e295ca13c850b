"""The fuzz suite (issue 14 item 7). FUZZ_COUNTS=<file> makes the session write how many
inputs each target saw (the deep run, tests/fuzz/deep.py, reports them)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_targets import COUNTS  # noqa: E402


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("FUZZ_COUNTS")
    if out:
        Path(out).write_text(json.dumps(dict(sorted(COUNTS.items())), indent=1))
