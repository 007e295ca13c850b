"""The abstraction function: a Python model State -> the canonical value of the same
state as TLC prints it (tests/tla/tlc.py `parse_dump`). docs/model-tla-mapping.md
explains it; test_agreement.py uses it to compare the two state sets.

It is a bijection on states, not a projection: every field of `State` maps to the
TLA+ variable of the same meaning (no field is dropped, none is merged), and each
value maps by its shape:

    Python (model/state.py)                     TLA+ (tla/IcebergCommit.tla)
    int, str                                    integer, string
    bool                                        TRUE / FALSE          (tlc.Bool)
    tuple (ids, hist, writers, outcome rows)    sequence <<...>>      (tuple)
    frozenset                                   set {...}             (frozenset)
    NamedTuple Snap/OpInfo/Meta/Writer/OpResult  record [f |-> ...]    (tlc.Rec)
    sorted pair tuple `metas`, `content`,       function (k :> v @@ ...)  (tlc.Fn)
      `parts`, `dels`, Snap.dseq, Meta.refs

`writers` and `outcomes` are tuples indexed from 1 in TLA+ ([w \\in Writers |-> ...]
with Writers = 1..W), which TLC prints as sequences: both sides become tuples. The
field names of the records are the NamedTuple field names; the state's own field
names are the TLA+ variable names (snake_case -> camelCase, see VARIABLE_OF).
"""
from __future__ import annotations

import re
from pathlib import Path

from tlc import FALSE, TRUE, Rec, make_function, make_record, parse_value

from icefloe.model.iceberg import Bounds
from icefloe.model.state import FAULT_KINDS, OP_KINDS, State

# State field -> TLA+ variable (the only renaming; all others are equal).
VARIABLE_OF = {
    "faults_on": "faultsOn",
    "faults_used": "faultsUsed",
    "orphan_runs": "orphanRuns",
    "reader_at": "readerAt",
}
# Fields held as sorted ((key, value), ...) tuples in Python, functions in TLA+: of the
# state, and of its records (Snap.dseq, Meta.refs).
FUNCTION_FIELDS = ("metas", "content", "parts", "dels")
RECORD_FUNCTION_FIELDS = ("dseq", "refs")


def canonical(x, memo: dict | None = None):
    """A Python model value -> its canonical TLA+ value (see tests/tla/tlc.py)."""
    if isinstance(x, bool):     # before int: bool is an int in Python, never in TLA+
        return TRUE if x else FALSE
    if isinstance(x, (int, str)):
        return x
    # Memo keys carry the type: in Python True == 1 and a NamedTuple equals a plain
    # tuple, so a value-only key could hand back the canonical form of another shape.
    key = (type(x), x)
    if memo is not None and key in memo:
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
    if memo is not None:
        memo[key] = out
    return out


def _function(pairs: tuple, memo: dict | None):
    return make_function((canonical(k, memo), canonical(v, memo)) for k, v in pairs)


def abstract(state: State, memo: dict | None = None) -> Rec:
    """A Python State -> the Rec of TLA+ variables that TLC's dump of it parses to."""
    memo = {} if memo is None else memo
    fields = {}
    for name in State._fields:
        value = getattr(state, name)
        if name in FUNCTION_FIELDS:
            key = ("fn", value)
            if key not in memo:
                memo[key] = _function(value, memo)
            out = memo[key]
        else:
            out = canonical(value, memo)
        fields[VARIABLE_OF.get(name, name)] = out
    return make_record(fields)


# -- configurations: a .cfg's constants -> the model's Bounds ------------------------------

# Definitions of tla/MCIcebergCommit.tla that configurations substitute with `<-`.
MC_DEFINITIONS = {
    "OneWriter": frozenset({1}),
    "TwoWriters": frozenset({1, 2}),
    "ThreeWriters": frozenset({1, 2, 3}),
    "AllKinds": frozenset(OP_KINDS),
    "ClassicKinds": frozenset(("append", "overwrite", "delete", "rewrite", "rollback", "expire")),
    "AllFaults": frozenset(FAULT_KINDS),
    "NoFaults": frozenset(),
    "OrphanAgeOn": TRUE,
}
_CONSTANT = re.compile(r"^\s*(\w+)\s*(=|<-)\s*(.+?)\s*$")


def cfg_constants(path) -> dict:
    """The CONSTANTS section of a TLC configuration -> {name: canonical value}."""
    out, section = {}, None
    for line in Path(path).read_text().splitlines():
        line = line.split("\\*", 1)[0].rstrip()
        if not line.strip():
            continue
        if re.match(r"^[A-Z_]+\b", line) and not line.startswith(" "):
            section = line.split()[0]
            rest = line[len(section):].strip()
            if not rest:
                continue
            line = rest
        if section in ("CONSTANT", "CONSTANTS"):
            m = _CONSTANT.match(line)
            if not m:
                raise ValueError(f"{path}: cannot read constant line {line!r}")
            name, op, text = m.groups()
            out[name] = MC_DEFINITIONS[text] if op == "<-" else parse_value(text)
    return out


def bounds_from_cfg(path) -> Bounds:
    """The Bounds the Python explorer needs to explore the instance a .cfg describes."""
    c = cfg_constants(path)
    writers = c["Writers"]
    assert writers == frozenset(range(1, len(writers) + 1)), writers
    return Bounds(
        writers=len(writers), ops=c["Ops"],
        kinds=tuple(k for k in OP_KINDS if k in c["Kinds"]),
        faults=tuple(f for f in FAULT_KINDS if f in c["Faults"]),
        fault_budget=c["FaultBudget"], attempts_max=c["AttemptsMax"],
        isolation=c["IsolationLevel"], orphan_runs=c["OrphanRunsMax"], variant=c["Variant"],
        partitions=c["Partitions"], refs=c["Refs"] == TRUE, orphan_age=c.get("OrphanAge") == TRUE,
        # The TLA+ spec lets every operation pick any kind, and TLC explores every
        # interleaving: no round-robin workload, no partial-order reduction.
        workload="any", por=False)
