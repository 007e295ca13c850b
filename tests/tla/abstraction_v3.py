"""The abstraction function of the v3 model: a model/v3.py state -> the canonical value of
the same state as TLC prints it for tla/IcebergV3.tla (tests/tla/tlc.py `parse_dump`), and
a MCIcebergV3_*.cfg's constants -> the model's V3Bounds.

As for the v2 model (abstraction.py), a bijection on states: every field of `V3State` is
the TLA+ variable of the same name; NamedTuples are records; tuples are sequences;
frozensets are sets; `metas`, `content` and `Meta.files` (pairs in Python) are functions.
"""
from __future__ import annotations

import re
from pathlib import Path

from tlc import FALSE, TRUE, TLA_DIR, make_function, make_record, parse_value

from icefloe.model.v3 import V3Bounds, V3State

FUNCTION_FIELDS = ("metas", "content")        # of the state
RECORD_FUNCTION_FIELDS = ("files",)           # of a record (Meta.files)


def canonical(x, memo: dict):
    if isinstance(x, bool):     # before int: bool is an int in Python, never in TLA+
        return TRUE if x else FALSE
    if isinstance(x, (int, str)):
        return x
    key = (type(x), x)
    if key in memo:
        return memo[key]
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        out = make_record({f: _function(getattr(x, f), memo) if f in RECORD_FUNCTION_FIELDS
                           else canonical(getattr(x, f), memo) for f in x._fields})
    elif isinstance(x, tuple):
        out = tuple(canonical(v, memo) for v in x)
    elif isinstance(x, frozenset):
        out = frozenset(canonical(v, memo) for v in x)
    else:
        raise TypeError(f"no TLA+ counterpart for {type(x).__name__}: {x!r}")
    memo[key] = out
    return out


def _function(pairs, memo: dict):
    return make_function((canonical(k, memo), canonical(v, memo)) for k, v in pairs)


def abstract(state: V3State, memo: dict | None = None):
    """A v3 model state -> the record of TLA+ variables TLC's dump of it parses to."""
    memo = {} if memo is None else memo
    fields = {}
    for name in V3State._fields:
        value = getattr(state, name)
        if name in FUNCTION_FIELDS:
            key = ("fn", value)
            if key not in memo:
                memo[key] = _function(value, memo)
            fields[name] = memo[key]
        else:
            fields[name] = canonical(value, memo)
    return make_record(fields)


_DEFINITION = re.compile(r"^(\w+) == (<<.*>>)\s*$", re.M)


def mc_definitions() -> dict:
    """The sequences tla/MCIcebergV3.tla defines for the .cfg files' `Roles <- Name`."""
    text = (TLA_DIR / "MCIcebergV3.tla").read_text()
    return {name: parse_value(value) for name, value in _DEFINITION.findall(text)}


_LITERAL = re.compile(r"^\s*(\w+)\s*=\s*(.+?)\s*$", re.M)
_SUBSTITUTED = re.compile(r"^\s*(\w+)\s*<-\s*(\w+)\s*$", re.M)


def bounds_from_cfg(path) -> V3Bounds:
    """The V3Bounds the explorer needs to explore the instance a MCIcebergV3 .cfg describes
    (its constants: literals, and Roles substituted by a definition of MCIcebergV3.tla)."""
    text = Path(path).read_text().split("SPECIFICATION", 1)[0]
    c = {name: parse_value(value) for name, value in _LITERAL.findall(text)}
    c.update({name: mc_definitions()[d] for name, d in _SUBSTITUTED.findall(text)})
    return V3Bounds(roles=tuple(c["Roles"]), dv_policy=c["DvPolicy"], attempts_max=c["AttemptsMax"],
                    variant=c["Variant"], data_files=c["DataFiles"], position_deletes=c["PositionDeletes"])
