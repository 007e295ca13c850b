"""The model as the suite can drive it on one engine: which steps a program may take in a
model state, given how finely the engine can be interleaved (pure functions over
icefloe.model.iceberg; the lockstep runs them on an engine, conformance.coverage
searches them for programs).

A stepping engine takes every model action the bounds allow (the bounds already hold
only the operations and faults its capabilities declare). A black-box engine runs a
commit whole: `Begin` is followed by the writer's own steps up to METADATA (it is held
at the proxy on its metadata write), `WriteMetadata` by its steps to the end; the other
writer-internal actions and the faults cannot be drawn apart.
"""
from __future__ import annotations

from icefloe.model import iceberg
from icefloe.model.state import DONE, FAULT_ACTIONS, METADATA, PHASE_ACTIONS

FAULT_OF_ACTION = {action: kind for kind, action in FAULT_ACTIONS.items()}
# The actions a writer takes by itself, phase by phase (inside a black-box commit).
INSIDE_ACTIONS = frozenset(PHASE_ACTIONS.values())
SOLO_STEPS_MAX = 200
CONVERGE_STEPS_MAX = 200
HEAL = ("Heal", 0)


def visible(label, black_box: bool) -> bool:
    """Whether a program may name this model action for such an engine."""
    if FAULT_OF_ACTION.get(label[0]) is not None and black_box:
        return False          # black-box engines are faulted at the proxy only
    return not (black_box and label[0] in INSIDE_ACTIONS and label[0] != "WriteMetadata")


def solo(b: iceberg.Bounds, s, w: int, stop_at=()) -> list:
    """Writer w's own non-fault steps from s until its operation ends or it reaches a phase
    in `stop_at`: [(label, next state), ...]."""
    k = s.writers[w - 1].k
    out = []
    for _ in range(SOLO_STEPS_MAX):
        wr = s.writers[w - 1]
        if wr.k != k or wr.phase in stop_at:
            return out
        mine = [(lab, nxt) for lab, nxt in iceberg.successors(b, s) if lab[1] == w and lab[0] in INSIDE_ACTIONS]
        assert len(mine) == 1, f"writer {w}'s own next step is not unique: {[lab for lab, _ in mine]}"
        out.append(mine[0])
        s = mine[0][1]
    raise AssertionError(f"the model's writer {w} did not finish in {SOLO_STEPS_MAX} steps")


def steps(b: iceberg.Bounds, s, black_box: bool) -> list:
    """[(label, next state, [(state, label, next), ...] the model transitions it takes)]."""
    out = []
    for label, t in iceberg.successors(b, s):
        if not visible(label, black_box):
            continue
        path = [(s, label, t)]
        if black_box and label[0] in ("Begin", "WriteMetadata"):
            w = label[1]
            if t.writers[w - 1].k == s.writers[w - 1].k and t.writers[w - 1].phase != DONE:
                here = t
                for lab, nxt in solo(b, t, w, (METADATA,) if label[0] == "Begin" else ()):
                    path.append((here, lab, nxt))
                    here = nxt
                t = here
        out.append((label, t, path))
    return out


def converge_choice(b: iceberg.Bounds, s, black_box: bool):
    """The step the liveness phase takes next (None once every writer is done): heal
    first, then finish the writers in flight before beginning new operations; delayed
    swaps are delivered, never dropped."""
    if iceberg.is_terminal(s):
        return None
    labels = sorted(lab for lab, _ in iceberg.successors(b, s) if visible(lab, black_box))
    if HEAL in labels:
        return HEAL
    order = [lab for lab in labels if lab[0] not in FAULT_OF_ACTION and lab[0] != "Drop"]
    if not order:
        return ()            # stuck: only faults are left (L2 is broken)
    busy = [lab for lab in order if lab[0] != "Begin"]
    return busy[0] if busy else order[0]
