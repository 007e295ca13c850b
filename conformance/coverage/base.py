"""Coverage by construction: the model's transition classes, a directed program for each,
and what a run covered (after MongoDB's test-case generation from a TLA+ state space,
"eXtreme modelling in practice", VLDB 2020, and Mocket, EuroSys 2023).

A family sorts the transitions of the model (icefloe.model.iceberg) into classes by
what a bug hides behind: which operation, in which phase, met which fault, and how it
ended. Each family has a small instance of the model (its `bounds`, derived from the
run's) whose state graph is searched exhaustively, breadth first, with each path's
class-relevant history (`tags`) kept beside the state, so every class the instance can
reach is found, with a shortest program that reaches it (`derive`). `select` keeps a
few programs that together reach every class; the suite runs them on the engine before
any random search (conformance.coverage.directed), and a `Tracker` records the classes each
executed step covered, so a run's coverage is measured on the engine, never assumed.

Families (a class is a tuple; every writer phase, fault, outcome is the model's name):
  faults      (operation, phase, fault, outcome, attempt): an operation meets a fault in a
              phase, on its first attempt or a later one (its base moved on by a rival's
              commit), and ends so (a crash at every phase is among them). A write failure
              in the manifests phase is one class for every attempt ("any"): a later
              attempt may keep the manifests an earlier one filtered when the new base left
              them alone (as Iceberg Java's filter manager does), and then makes no request
              such a fault could hit;
  unknowns    (operation, fault, attempt, fate, outcome): an unknown swap outcome (ack_lost
              or swap_delayed) on the first, a middle or the last attempt; the fate of the
              request: applied / not applied (lost ack), landed before or after the
              operation ended, stale, dropped (delayed);
  rivals      (operation, rival's operation, phase, outcome): another writer's commit lands
              while the operation is in that phase;
  validations (operation, commits in between, result): a retry validates against the snapshots
              that landed since its start (newest first; up to two), starts its next attempt or ends;
  sequences   (kind, kind, kind): three commits in a row on main (expiry, rollback, delete, say);
  orphans     (operation, outcome): orphan removal after an operation ended so;
  orphans-in-flight (old orphans, operation, phase, outcome): orphan removal by age while
              another writer works (spec/PROTOCOL.md 12.2): time passed the threshold while
              the table was quiet (AgeFiles), then an operation began and orphan removal ran
              while it was in that phase; it deleted the old orphans that operations which
              ended so had left ((kind, outcome) each, () none), kept the working writer's
              young files, and the operation ended so;
  handles     (outcome of a writer's operation, kind of a rival's commit since, the writer's
              next operation): a writer begins its next operation through its own table
              handle, which holds a state the pointer has left since.
Partitions, row-level deletes and refs have families of their own (coverage.rows); the
registry of every family and what a run covered are in coverage.families.
The transport family (faults one layer down, suite.transport) derives its programs
from the faults family's: coverage.transport.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from functools import lru_cache

from icefloe.conformance.suite.profiles import classic_bounds
from icefloe.conformance.suite.view import FAULT_OF_ACTION, steps
from icefloe.model import iceberg
from icefloe.model.search import class_witnesses
from icefloe.model.state import (ACK_LOST, APPEND, CRASH, DONE, MANIFESTS, PLAN, REWRITE, SWAP_DELAYED, SWAP_FAIL,
                                  WRITE_FAIL, ancestors)

STATES_MAX = 2_000_000   # an instance larger than this is a mistake in a family's bounds


def _ended(s, label, t):
    """[(w, k, kind, outcome)] for every operation that ended in the transition s -> t (a
    no-op ends at its Begin, whose label names its kind)."""
    out = []
    for w, (a, b) in enumerate(zip(s.writers, t.writers), start=1):
        if a.k != b.k:
            kind = label[2] if label[0] == "Begin" and label[1] == w else a.kind
            out.append((w, a.k, kind, t.outcomes[w - 1][a.k - 1].res))
    return out


def _close(tags, s, label, t, cls):
    """Settle the tags of every operation that ended in s -> t: each becomes the class
    `cls(tag, outcome)` (a tag's first two fields are its writer and operation number)."""
    done = []
    for w, k, _, res in _ended(s, label, t):
        hits = {h for h in tags if h[0] == w and h[1] == k}
        done += [cls(h, res) for h in hits]
        tags = tags - hits
    return tags, tuple(done)


def _position(b: iceberg.Bounds, attempt: int) -> str:
    return "only" if b.attempts_max == 1 else "first" if attempt == 1 else "last" if attempt == b.attempts_max \
        else "middle"


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    start: object = frozenset()          # the tags of the initial state

    def bounds(self, base: iceberg.Bounds) -> iceberg.Bounds:
        raise NotImplementedError

    def observe(self, b: iceberg.Bounds, tags: frozenset, s, label, t) -> tuple[frozenset, tuple]:
        """(tags after the transition, classes it completes)."""
        raise NotImplementedError


class Faults(Family):
    def bounds(self, base):
        return replace(classic_bounds(base), writers=min(base.writers, 2), ops=1,
                       fault_budget=min(base.fault_budget, 1) if base.faults else 0, orphan_runs=0)

    def observe(self, b, tags, s, label, t):
        fault = FAULT_OF_ACTION.get(label[0])
        if fault is not None:
            wr = s.writers[label[1] - 1]
            tags = tags | {(label[1], wr.k, wr.kind, wr.phase, fault, _attempt(wr, fault))}
        return _close(tags, s, label, t, lambda h, res: (h[2], h[3], h[4], res, h[5]))


def _attempt(wr, fault: str) -> str:
    """The faults family's attempt: "first", "later", or "any" where a later attempt need not
    write (the module docstring)."""
    if fault == WRITE_FAIL and wr.phase == MANIFESTS:
        return "any"
    return "first" if wr.attempt == 1 else "later"


class Unknowns(Family):
    def bounds(self, base):
        faults = tuple(f for f in (SWAP_FAIL, ACK_LOST, SWAP_DELAYED) if f in base.faults)
        return replace(classic_bounds(base), writers=1, ops=1, faults=faults,
                       fault_budget=base.attempts_max if faults else 0,
                       orphan_runs=0)

    def observe(self, b, tags, s, label, t):
        # tags: (w, k, kind, fault, position, request, fate, outcome), None while unknown
        name = label[0]
        if name in ("AckLost", "SwapDelayed"):
            w = label[1]
            wr = s.writers[w - 1]
            if name == "AckLost":
                entry = (w, wr.k, wr.kind, ACK_LOST, _position(b, wr.attempt), None,
                         "applied" if s.cat == wr.base else "not applied", None)
            else:
                entry = (w, wr.k, wr.kind, SWAP_DELAYED, _position(b, wr.attempt), (w, wr.k, wr.attempt), None, None)
            tags = tags | {entry}
        elif name in ("Deliver", "Drop"):
            request = label[1:]
            for e in [e for e in tags if e[5] == request]:
                if name == "Drop":
                    fate = "dropped"
                elif t.cat == s.cat:
                    fate = "stale"
                else:
                    fate = "landed before the end" if e[7] is None else "landed after the end"
                tags = (tags - {e}) | {e[:6] + (fate, e[7])}
        for w, k, _, res in _ended(s, label, t):
            for e in [e for e in tags if e[0] == w and e[1] == k and e[7] is None]:
                tags = (tags - {e}) | {e[:7] + (res,)}
        done = [e for e in tags if e[6] is not None and e[7] is not None]
        return tags - set(done), tuple((e[2], e[3], e[4], e[6], e[7]) for e in done)


class Rivals(Family):
    def bounds(self, base):
        return replace(classic_bounds(base), writers=2, ops=1, faults=(), fault_budget=0, orphan_runs=0)

    def observe(self, b, tags, s, label, t):
        if t.cat != s.cat:
            landed = iceberg.mget(t.metas, t.cat).op.kind
            by = t.cat[0]
            for w, wr in enumerate(s.writers, start=1):
                if w != by and wr.kind and wr.phase not in ("plan", "done") and t.writers[w - 1].k == wr.k:
                    tags = tags | {(w, wr.k, wr.kind, landed, wr.phase)}
        return _close(tags, s, label, t, lambda h, res: (h[2], h[3], h[4], res))


class Sequences(Family):
    def bounds(self, base):
        return replace(classic_bounds(base), writers=1, ops=3, faults=(), fault_budget=0, orphan_runs=0)

    def observe(self, b, tags, s, label, t):
        if t.cat == s.cat or t.cat[0] == 0:
            return tags, ()
        window = (tuple(tags) + (iceberg.mget(t.metas, t.cat).op.kind,))[-3:]
        return tuple(window), ((window,) if len(window) == 3 else ())


def _snapshot_kind(s, sid) -> str:
    """The kind of the operation that made snapshot `sid` (the bootstrap's are appends)."""
    for mid, meta in s.metas:
        if mid[:2] == sid:
            return meta.op.kind
    return "append"


class Validations(Family):
    def bounds(self, base):
        # Two rivals commit while an operation waits; partial-order reduction is sound here
        # (no fault, and a class reads only what lands between a start and a validation).
        return replace(classic_bounds(base), writers=3, ops=1, faults=(), fault_budget=0, orphan_runs=0, por=True)

    def observe(self, b, tags, s, label, t):
        if label[0] not in ("Retry", "Resolve"):
            return tags, ()
        w = label[1]
        wr, after = s.writers[w - 1], t.writers[w - 1]
        meta = iceberg.current(s)
        line = ancestors(meta, meta.head)
        between = tuple(_snapshot_kind(s, sid) for sid in line[: line.index(wr.start)]) \
            if wr.start in line else ("start gone",)
        result = t.outcomes[w - 1][wr.k - 1].res if after.k != wr.k else "next attempt"
        return tags, ((wr.kind, between, result),)


class Orphans(Family):
    def bounds(self, base):
        # orphan_runs as the run's bounds say (0 for an engine without orphan removal)
        return replace(classic_bounds(base), writers=1, ops=1,
                       fault_budget=min(base.fault_budget, 1) if base.faults else 0)

    def observe(self, b, tags, s, label, t):
        ended = tuple((kind, res) for _, _, kind, res in _ended(s, label, t))
        if label[0] == "RemoveOrphans":
            return tags, tuple(sorted(tags))
        return tags | frozenset(ended), ()


class OrphansInFlight(Orphans):
    """Orphan removal by age while another writer works (the module docstring). Old orphans
    are what an operation left that crashed or ended Unknown (its one attempt's answer lost
    and not applied, or its delayed swap dropped: it can never land, and nothing is in
    flight once the table is quiet); the working writer appends or rewrites. One attempt
    per operation, so that one fault can end an operation Unknown (the retry and resolve
    phases are still met: a swap a rival's commit rejected, an unknown outcome)."""
    KINDS = (APPEND, REWRITE)

    def bounds(self, base):
        # orphan_runs as the run's bounds say (0 for an engine without orphan removal)
        faults = tuple(f for f in (CRASH, ACK_LOST, SWAP_DELAYED) if f in base.faults)
        return replace(classic_bounds(base), writers=2, ops=1, kinds=tuple(k for k in self.KINDS if k in base.kinds),
                       faults=faults, fault_budget=1 if faults else 0, attempts_max=1, orphan_age=True, por=False)

    def observe(self, b, tags, s, label, t):
        # tags: ("op", w, k, kind) for each operation begun (what wrote an orphan);
        # (w, k, kind, phase, old orphans) for a writer at work when orphan removal ran
        if label[0] == "Begin":
            tags = tags | {("op", label[1], s.writers[label[1] - 1].k, label[2])}
        if label[0] == "RemoveOrphans" and not iceberg.quiet(s):
            kind_of = {(x[1], x[2]): x[3] for x in tags if x[0] == "op"}
            old = tuple(sorted({(kind_of.get((o[1], o[2]), APPEND),     # writer 0: the bootstrap's appends
                                 s.outcomes[o[1] - 1][o[2] - 1].res if o[1] else "committed")
                                for o in t.deleted - s.deleted}))
            tags = tags | {(w, wr.k, wr.kind, wr.phase, old) for w, wr in enumerate(s.writers, start=1)
                           if wr.phase not in (PLAN, DONE)}
        return _close(tags, s, label, t, lambda h, res: (h[4], h[2], h[3], res))


class Handles(Family):
    """A writer's next operation begins through its own table handle after another
    writer's commit landed since the writer's last operation ended: the handle holds a
    state the pointer has left (its own commit, or what it read before a conflict)."""
    KINDS = ("append", "overwrite", "delete", "rollback", "expire")

    def bounds(self, base):
        return replace(classic_bounds(base), writers=2, ops=2, kinds=tuple(k for k in base.kinds if k in self.KINDS),
                       faults=(), fault_budget=0, orphan_runs=0, por=True)

    def observe(self, b, tags, s, label, t):
        # tags: (w, outcome of its first operation, kind of the first rival commit since)
        out = set(tags)
        for w, k, _, res in _ended(s, label, t):
            if k == 1:
                out.add((w, res, None))
        if t.cat != s.cat and t.cat[0] != 0:
            landed = iceberg.mget(t.metas, t.cat).op.kind
            for tag in [x for x in out if x[2] is None and x[0] != t.cat[0]]:
                out = (out - {tag}) | {(tag[0], tag[1], landed)}
        done = ()
        if label[0] == "Begin":
            mine = [x for x in out if x[0] == label[1]]
            out -= set(mine)
            done = tuple((x[1], x[2], label[2]) for x in mine if x[2] is not None)
        return frozenset(out), done


# -- search ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Program:
    """A directed program: the model's bounds it runs at and its labels (the liveness phase
    completes it); `store` and `catalog` where it must run (None: the run's default)."""
    family: str
    bounds: iceberg.Bounds
    labels: tuple
    store: str | None = None
    catalog: str | None = None
    cls: tuple | None = None          # the class it was made for (transport programs)


@dataclass
class Graph:
    """A family's instance, searched: every class it reaches, each with the shortest program
    that reaches it (breadth first over (state, tags) from the initial state)."""
    family: Family
    bounds: iceberg.Bounds
    nodes: int
    witnesses: dict                      # class -> Program

    @property
    def classes(self) -> frozenset:
        return frozenset(self.witnesses)


@lru_cache(maxsize=64)
def explore(family: Family, bounds: iceberg.Bounds, black_box: bool) -> Graph:
    """Exhaustive at `bounds`: every (state, tags) node reachable from the initial state."""
    def expand(node):
        s, tags = node
        for label, t, path in steps(bounds, s, black_box):
            cur, completed = tags, []
            for a, lab, z in path:
                cur, done = family.observe(bounds, cur, a, lab, z)
                completed.extend(done)
            yield label, (t, cur), completed
    seen, paths = class_witnesses((iceberg.initial_state(bounds), family.start), expand, STATES_MAX,
                                  f"family {family.name} at {bounds}")
    return Graph(family, bounds, seen, {c: Program(family.name, bounds, labels) for c, labels in paths.items()})


def cover(g: Graph, black_box: bool) -> list:
    """Programs that together complete every class of the instance: each class's shortest
    program, skipping a class an earlier program (with its liveness phase) completed too."""
    tracker = Tracker((g.family,))
    programs = []
    for c, program in g.witnesses.items():
        if c in tracker.covered[g.family.name]:
            continue
        simulate(program, black_box, tracker)
        if c not in tracker.covered[g.family.name]:
            raise AssertionError(f"family {g.family.name}: the program for {c} does not complete it")
        programs.append(program)
    return programs


# -- what a run covered ---------------------------------------------------------------------

class Tracker:
    """The classes the executed model transitions completed, per family (attach to a
    Lockstep's observers; one tag set per family per program)."""

    def __init__(self, families):
        self.families = families
        self.covered: dict = defaultdict(set)     # a family (the transport, rest ones too) -> classes

    def watch(self, bounds: iceberg.Bounds) -> "Watch":
        return Watch(self, bounds)


class Watch:
    def __init__(self, tracker: Tracker, bounds: iceberg.Bounds):
        self.tracker, self.bounds = tracker, bounds
        self.tags = {f.name: f.start for f in tracker.families}

    def __call__(self, s, label, t) -> None:
        for f in self.tracker.families:
            self.tags[f.name], done = f.observe(self.bounds, self.tags[f.name], s, label, t)
            self.tracker.covered[f.name].update(done)

    def note(self, family: str, cls: tuple) -> None:
        """A class the lockstep saw directly (the transport faults, which are not model actions)."""
        self.tracker.covered[family].add(cls)


def simulate(program: Program, black_box: bool, tracker: Tracker) -> None:
    """Run a program on the model alone, liveness phase included, recording its classes
    (what running it on an engine covers, if the engine agrees with the model)."""
    from icefloe.conformance.suite.view import converge_choice
    watch = tracker.watch(program.bounds)
    s = iceberg.initial_state(program.bounds)
    labels = list(program.labels)
    for _ in range(len(labels) + 400):
        if labels:
            label = labels.pop(0)
        else:
            label = converge_choice(program.bounds, s, black_box)
            if not label:
                return
        for lab, t, path in steps(program.bounds, s, black_box):
            if lab == label:
                for a, x, z in path:
                    watch(a, x, z)
                s = t
                break
        else:
            raise AssertionError(f"program step {label} is not enabled in the model")
