"""The model as the suite can drive it on one engine: which steps a program may take in a
model state, given how finely the engine can be interleaved (pure functions over
icefloe.model.iceberg; the lockstep runs them on an engine, conformance.coverage.base
searches them for programs).

A stepping engine takes every model action the bounds allow (the bounds already hold
only the operations and faults its capabilities declare). A black-box engine runs a
commit whole: `Begin` is followed by the writer's own steps up to METADATA (it is held
at the proxy on its metadata write), `WriteMetadata` by its steps to the end; the other
writer-internal actions and the faults cannot be drawn apart.

A black-box engine whose swap is a REST commit (`black_box` REST) is held at the server's
commit endpoint instead: `Begin` runs its writer to SWAP, and there the program names
what happens to the held request: `Swap` (it goes through), or a swap fault the server
injects (`SwapFails`, `AckLost`, `SwapDelayed`; conformance.suite.blackbox). After each, the
writer runs by itself to its next commit request or its end; after an unknown outcome
it ends the operation Unknown at once (`EndUnknown`), as the REST engines do.
"""
from __future__ import annotations

from icefloe.model import iceberg
from icefloe.model.state import DONE, FAULT_ACTIONS, METADATA, PHASE_ACTIONS, SWAP, UNKNOWN

FAULT_OF_ACTION = {action: kind for kind, action in FAULT_ACTIONS.items()}
# The actions a writer takes by itself, phase by phase (inside a black-box commit).
INSIDE_ACTIONS = frozenset(PHASE_ACTIONS.values())
SOLO_STEPS_MAX = 200
CONVERGE_STEPS_MAX = 200
HEAL = ("Heal", 0)
# The `black_box` value of an engine held at the REST commit endpoint (True: at the S3
# proxy's metadata PUT; False: a stepping engine).
REST = "rest"
SWAP_FAULTS = ("SwapFails", "AckLost", "SwapDelayed")    # what a REST commit can meet
END_UNKNOWN = "EndUnknown"


def view_of(caps) -> bool | str:
    """The `black_box` value for an engine's capabilities."""
    if caps.mode != "black-box":
        return False
    return REST if caps.rest else True


def visible(label, black_box: bool | str) -> bool:
    """Whether a program may name this model action for such an engine."""
    name = label[0]
    if black_box == REST:
        if name in SWAP_FAULTS or name == "Swap":
            return True       # the server injects them at the held commit
        return FAULT_OF_ACTION.get(name) is None and name not in INSIDE_ACTIONS
    if FAULT_OF_ACTION.get(name) is not None and black_box:
        return False          # black-box engines are faulted at the proxy only
    return not (black_box and name in INSIDE_ACTIONS and name != "WriteMetadata")


def end_unknown(s, w: int):
    """`EndUnknown`: writer w ends its operation Unknown at an unknown swap outcome without
    resolving it, and deletes nothing (spec/PROTOCOL.md 9.1; 9.6: its caller resolves it).
    Not a model action (the model's writer resolves, 9.3): it is finish_failed's Unknown,
    taken at once, as Iceberg-Java and pyiceberg do on CommitStateUnknownException."""
    return iceberg.finish(s, w, UNKNOWN)


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


def steps(b: iceberg.Bounds, s, black_box: bool | str) -> list:
    """[(label, next state, [(state, label, next), ...] the model transitions it takes)]."""
    out = []
    for label, t in iceberg.successors(b, s):
        if not visible(label, black_box):
            continue
        path = [(s, label, t)]
        if black_box:
            t = inside(b, s, label, t, path, black_box)
        out.append((label, t, path))
    return out


def inside(b: iceberg.Bounds, s, label, t, path: list, black_box: bool | str):
    """The writer's own steps a black-box commit takes after `label` (appended to `path`):
    the state it reaches."""
    name, w = label[0], label[1]
    if REST == black_box and name in ("Begin", "Swap") + SWAP_FAULTS:
        if name in ("AckLost", "SwapDelayed"):
            nxt = end_unknown(t, w)
            path.append((t, (END_UNKNOWN, w), nxt))
            return nxt
        stop = (SWAP,)
    elif REST != black_box and name in ("Begin", "WriteMetadata"):
        stop = (METADATA,) if name == "Begin" else ()
    else:
        return t
    if t.writers[w - 1].k != s.writers[w - 1].k or t.writers[w - 1].phase == DONE:
        return t
    for lab, nxt in solo(b, t, w, stop):
        path.append((t, lab, nxt))
        t = nxt
    return t


def converge_choice(b: iceberg.Bounds, s, black_box: bool | str):
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
