"""Goal: every test spec/PROPERTIES.md names in its traceability tables exists, and every
property of the model's registry has a row. Method: read the names off the document and
look for `def <name>` (or a class of that name) under tests/."""
from __future__ import annotations

import re
from pathlib import Path

from icefloe.model import checks

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "spec" / "PROPERTIES.md").read_text()


def _defined() -> set:
    names = set()
    for path in (ROOT / "tests").rglob("*.py"):
        names.update(re.findall(r"^\s*(?:def|class)\s+(\w+)", path.read_text(), re.M))
    return names


def test_every_named_test_exists():
    """Goal: no traceability row names a test that does not exist. Method: compare names."""
    section = DOC[DOC.index("## 4. Traceability"):]
    named = set(re.findall(r"`(test_\w+)`", section))
    assert len(named) > 60
    missing = sorted(named - _defined())
    assert not missing, missing


def test_every_property_has_a_row():
    """Goal: each registered property (P1..P10, L1..L3) has a row in the traceability table
    naming its TLA+ definition and its check function. Method: find both names in one row."""
    rows = [line for line in DOC.splitlines() if line.startswith("| ")]
    for name, fn in {**checks.SAFETY_CHECKS, **checks.TERMINAL_CHECKS}.items():
        tla = name.split()[-1]
        assert any(line.startswith(f"| {name} |") and f"`{tla}`" in line and f"`{fn.__name__}`" in line
                   for line in rows), name
