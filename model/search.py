"""The breadth-first search both explorers share (model/explore.py one process,
model/explore_parallel.py forked workers): a run's `Result`, the safety checker built from a
spec's checks, one level's expansion (`_expand`), the fingerprint collision bound, and
`replay` from parent pointers. It imports neither explorer, so they import it without a cycle.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field


@dataclass
class Result:
    spec_name: str
    verdict: str                      # "holds" | "violated" | "unknown"
    states: int = 0
    transitions: int = 0
    depth: int = 0
    final_states: int = 0
    seconds: float = 0.0
    coverage: Counter = field(default_factory=Counter)
    events: Counter = field(default_factory=Counter)
    property: str | None = None
    message: str | None = None
    trace: list = field(default_factory=list)       # [(label or None, state)]
    reachable: list | None = None                   # every state, when collected
    collision_bound: float = 0.0                    # P(two states merged by fingerprint)
    exact: bool = False                             # de-duplicated by the states themselves
    workers: int = 1

    def to_json(self) -> dict:
        return {
            "spec": self.spec_name, "verdict": self.verdict, "states": self.states,
            "transitions": self.transitions, "depth": self.depth,
            "final_states": self.final_states, "seconds": round(self.seconds, 3),
            "coverage": dict(sorted(self.coverage.items())),
            "events": dict(sorted(self.events.items())),
            "collision_bound": self.collision_bound, "exact": self.exact, "workers": self.workers,
            "property": self.property, "message": self.message,
            "trace": [None if lab is None else list(lab) for lab, _ in self.trace],
        }


def _check(checks, state) -> tuple[str, str] | None:
    for name, fn in checks.items():
        why = fn(state)
        if why:
            return name, why
    return None


FINGERPRINT_BITS = 64


def safety_checker(spec):
    """check(state, parent=None) -> (property, message) | None: the spec's own
    `check_safety(state, parent)` (which may reuse what held in the parent), else every
    safety property, one by one."""
    own = getattr(spec, "check_safety", None)
    if own is not None:
        return own
    safety = spec.safety
    return lambda s, parent=None: _check(safety, s)


def collision_bound(states: int, bits: int = FINGERPRINT_BITS) -> float:
    """An upper bound on the probability that two of `states` distinct states share a
    fingerprint (the birthday bound n(n-1)/2 / 2^bits): the chance that the search merged
    two states and so skipped one. 0 for an exact search."""
    return states * (states - 1) / 2 / 2.0 ** bits


class _Level:
    """What one process learns while expanding part of a BFS level (merged by the caller)."""

    def __init__(self):
        self.transitions = 0
        self.final_states = 0
        self.coverage: Counter = Counter()
        self.events: Counter = Counter()
        self.violation = None           # ((property, message), key of the state)


def _expand(spec, frontier, key_of, is_new, on_new, check_safety, terminal, event_actions, level: _Level):
    """Expand `frontier` (the (key, state) pairs of one BFS level this process owns: a
    state's key is computed once, when it is found). For each
    successor, `is_new(key, state)` decides whether it is unseen here; `on_new(key, parent_key,
    label, state)` records it and says whether to check it here, `check_safety(state, parent)`.
    Stops at the first violation."""
    successors, is_terminal, events = spec.successors, spec.is_terminal, spec.events
    coverage, counted = level.coverage, level.events
    for key_s, s in frontier:
        succ = list(successors(s))
        if not succ:
            level.final_states += 1
            why = ("Deadlock", "no action is enabled in a non-final state") \
                if not is_terminal(s) else _check(terminal, s)
            if why:
                level.violation = (why, key_s)
                return
            continue
        level.transitions += len(succ)
        for label, t in succ:
            name = label[0]
            coverage[name] += 1
            if event_actions is None or name in event_actions:
                for ev in events(s, label, t):
                    counted[ev] += 1
            key = key_of(t)
            if not is_new(key, t):
                continue
            if on_new(key, key_s, label, t):
                why = check_safety(t, s)
                if why:
                    level.violation = (why, key)
                    return


def replay(spec, parent_of, key, key_of=hash) -> list:
    """Rebuild the path to the state `key` from parent pointers (`parent_of(key)` gives
    (parent key, label)), then re-run it forward through the transition relation."""
    path = [key]
    while parent_of(path[-1])[0] is not None:
        path.append(parent_of(path[-1])[0])
    path.reverse()
    state = {key_of(s): s for s in spec.initial()}[path[0]]
    trace = [(None, state)]
    for want in path[1:]:
        label = parent_of(want)[1]
        for lab, t in spec.successors(state):
            if lab == label and key_of(t) == want:
                state = t
                break
        else:
            raise AssertionError(f"replay failed at {label}")
        trace.append((label, state))
    return trace


def class_witnesses(root, expand, states_max: int, what: str) -> tuple[int, dict]:
    """Breadth first from `root` over nodes the caller defines (the suite's coverage families
    search (state, tags) nodes): `expand(node)` yields (label, child, classes the step completed).
    Returns (nodes seen, {class: the labels of a shortest path that completes it}), the first
    path found per class, classes in a stable order. More than `states_max` nodes is a
    RuntimeError naming `what`: an instance that large is a mistake in its bounds."""
    parent: dict = {root: None}
    frontier, found = [root], {}
    while frontier:
        nxt = []
        for node in frontier:
            for label, child, completed in expand(node):
                for c in completed:
                    found.setdefault(c, (node, label))
                if child not in parent:
                    parent[child] = (node, label)
                    nxt.append(child)
                    if len(parent) > states_max:
                        raise RuntimeError(f"{what}: more than {states_max} states")
        frontier = nxt
    out = {}
    for c, (node, label) in sorted(found.items(), key=lambda kv: repr(kv[0])):
        labels = [label]
        while parent[node] is not None:
            node, lab = parent[node]
            labels.append(lab)
        out[c] = tuple(reversed(labels))
    return len(parent), out
