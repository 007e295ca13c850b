"""A transition system the explorer can search: the Iceberg protocol and the flawed
variants (spec/PROTOCOL.md "Negative controls") behind one small interface."""
from __future__ import annotations

from dataclasses import dataclass, field
from operator import is_not, itemgetter
from typing import Callable, Iterable, Protocol

from icefloe.model import checks, iceberg
from icefloe.model.state import RETRY, State



class Spec(Protocol):
    name: str
    bounds: object
    safety: dict[str, Callable]
    terminal: dict[str, Callable]

    def initial(self) -> list: ...
    def successors(self, state) -> Iterable[tuple[tuple, object]]: ...
    def is_terminal(self, state) -> bool: ...
    def events(self, state, label: tuple, nxt) -> Iterable[str]: ...
    def describe(self, state) -> str: ...


@dataclass
class IcebergSpec:
    """The protocol of spec/PROTOCOL.md (or one of its Iceberg-shaped variants)."""
    bounds: iceberg.Bounds
    # Check just these safety properties (for a shortest trace of one; empty: all).
    only: tuple = ()
    _history_verdicts: dict = field(default_factory=dict, repr=False)
    _plans: dict = field(default_factory=dict, repr=False, compare=False)
    # The only actions `events` can name an event for (the explorer skips the others).
    EVENT_ACTIONS = frozenset({"Swap", "Retry", "Resolve", "Deliver"})

    @property
    def name(self) -> str:
        return self.bounds.variant

    @property
    def safety(self):
        return {n: (lambda s, f=f: f(self.bounds, s)) for n, f in self._safety_checks().items()}

    def _safety_checks(self) -> dict:
        assert set(self.only) <= set(checks.SAFETY_CHECKS), self.only
        return {n: f for n, f in checks.SAFETY_CHECKS.items() if not self.only or n in self.only}

    @property
    def terminal(self):
        return {n: (lambda s, f=f: f(self.bounds, s)) for n, f in checks.TERMINAL_CHECKS.items()}

    # The State fields each safety check reads (tests/model/test_explorer.py records the
    # reads of every check over every reachable state of small bounds and compares).
    # `metas` only ever gains entries along a transition (a metadata file is written once)
    # and the checks read it only at versions the pointer or its history names, which a
    # transition that leaves `cat` and `hist` alone cannot change either.
    CHECK_READS = {
        "P1 LinearHistory": ("cat", "hist"),
        "P2 NoLostCommit": ("acked", "cat"),
        "P3 NoDuplicateCommit": ("cat", "content", "dels", "hist", "parts"),
        "P4 ReadersSeeCommitted": ("cat", "hist", "outcomes"),
        "P5 ValidationSound": ("dels", "hist", "parts"),
        "P6 Isolation": ("content", "dels", "hist", "parts"),
        "P7 TimeTravelImmutable": ("hist",),
        "P8 NoDanglingRefs": ("cat", "store"),
        "P9 CleanupSafe": ("cat", "deleted"),
        "P10 IncrementalComplete": ("consumed", "hist"),
        "L3 NoSpuriousConflict": ("outcomes",),
    }
    # What the cached history checks read besides the versions of `hist`. `content`,
    # `parts` and `dels` only gain entries (a file's content is set once, when its
    # operation plans), so the verdict is still a function of the history key.
    HISTORY_READS = ("cat", "consumed", "content", "dels", "hist", "parts")

    def check_safety(self, state: State, parent: State | None = None) -> tuple[str, str] | None:
        """Every safety property. History-only verdicts are cached by history_key. With
        `parent` (a state that satisfied every property and from which one transition
        leads to `state`), a check none of whose fields changed (the same objects: the
        model shares what a transition leaves alone) keeps the parent's verdict. Which
        checks run depends only on which fields changed: that plan is computed once per
        pattern of changes (a handful of patterns cover millions of transitions)."""
        b = self.bounds
        if self.only:
            for name, fn in self._safety_checks().items():
                why = fn(b, state)
                if why:
                    return name, why
            return None
        if parent is None:
            history, run = self._plan(None)
        else:
            changed = tuple(map(is_not, _FIELDS_OF(state), _FIELDS_OF(parent)))
            plan = self._plans.get(changed)
            if plan is None:
                plan = self._plans[changed] = self._plan(changed)
            history, run = plan
        if history:
            key = checks.history_key(state)
            cached = self._history_verdicts.get(key, False)
            if cached is False:
                cached = None
                for name in checks.HISTORY_CHECKS:
                    why = checks.SAFETY_CHECKS[name](b, state)
                    if why:
                        cached = (name, why)
                        break
                self._history_verdicts[key] = cached
            if cached:
                return cached
        for name, fn in run:
            why = fn(b, state)
            if why:
                return name, why
        return None

    def _plan(self, changed: tuple | None) -> tuple[bool, tuple]:
        """(whether the history checks run, the other checks that run, in order) when the
        fields of FIELDS flagged in `changed` differ from the parent's (None: no parent)."""
        same = set() if changed is None else {f for f, c in zip(self.FIELDS, changed) if not c}
        history = not same.issuperset(self.HISTORY_READS)
        run = tuple((name, fn) for name, fn in checks.SAFETY_CHECKS.items()
                    if name not in checks.HISTORY_CHECKS and not same.issuperset(self.CHECK_READS[name]))
        return history, run

    FIELDS = ("acked", "cat", "consumed", "content", "deleted", "dels", "hist", "outcomes", "parts", "store")

    def initial(self) -> list[State]:
        return [iceberg.initial_state(self.bounds)]

    @staticmethod
    def partition_key(state: State):
        """What decides which process of a parallel search owns a state (explore_parallel):
        the pointer's history, which only a swap changes, so most transitions stay local."""
        return state.hist

    def successors(self, state: State):
        return iceberg.successors(self.bounds, state)

    def is_terminal(self, state: State) -> bool:
        return iceberg.is_terminal(state)

    def events(self, state: State, label: tuple, nxt: State):
        """Semantic events for the vacuity guard (beyond the action names)."""
        name, w = label[0], label[1]
        if name == "Swap" and state.cat != state.writers[w - 1].base:
            yield "conflict"
        if name in ("Retry", "Resolve"):
            before, after = state.writers[w - 1], nxt.writers[w - 1]
            if after.k == before.k and after.attempt == before.attempt + 1:
                yield "retry after conflict" if before.phase == RETRY else "retry after unknown"
            if name == "Resolve":
                res = nxt.outcomes[w - 1][before.k - 1].res
                yield "unknown resolved: committed" if res == "committed" else "unknown resolved: not landed"
            if before.unknowns and before.phase == RETRY and after.k != before.k:
                res = nxt.outcomes[w - 1][before.k - 1].res
                yield f"unknown resolved on retry: {res}"
        if name == "Deliver":
            yield "delayed swap landed" if nxt.cat != state.cat else "delayed swap lost the race"

    def describe(self, state: State) -> str:
        meta = iceberg.current(state)
        head = iceberg.head_snap(meta)
        ws = "; ".join(
            f"w{i}: op {w.k} {w.kind or '-'} {w.phase}"
            + (f" attempt {w.attempt} base {w.base}" if w.phase not in ("plan", "done") else "")
            + (f" unknown-bases {sorted(w.unknowns)}" if w.unknowns else "")
            for i, w in enumerate(state.writers, start=1))
        extra = f"; in flight {sorted(state.inflight)}" if state.inflight else ""
        return (f"pointer {state.cat} main={meta.head} files={sorted(head.files)}"
                f" snapshots={sorted(x.id for x in meta.snaps)} | {ws}{extra}")


# The fields of FIELDS of a state, as one tuple (check_safety compares them with the parent's).
_FIELDS_OF = itemgetter(*(State._fields.index(f) for f in IcebergSpec.FIELDS))


class ModuleSpec:
    """The Spec protocol for a model written as module functions (model/hive.py,
    model/hudi.py). A subclass is a dataclass with `bounds` and `only` (check just these
    safety properties, for a shortest trace of one) and names its module's pieces:
    SAFETY, TERMINAL (name -> check(bounds, state)), and the static functions
    _initial(bounds), _successors(bounds, state), _is_terminal(state)."""
    SAFETY: dict = {}
    TERMINAL: dict = {}

    @property
    def name(self) -> str:
        return self.bounds.variant

    @property
    def safety(self):
        assert set(self.only) <= set(self.SAFETY), self.only
        return {n: (lambda s, f=f: f(self.bounds, s)) for n, f in self.SAFETY.items()
                if not self.only or n in self.only}

    @property
    def terminal(self):
        return {n: (lambda s, f=f: f(self.bounds, s)) for n, f in self.TERMINAL.items()}

    def initial(self):
        return [self._initial(self.bounds)]

    def successors(self, state):
        return self._successors(self.bounds, state)

    def is_terminal(self, state) -> bool:
        return self._is_terminal(state)
