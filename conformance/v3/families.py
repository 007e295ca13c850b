"""The v3 coverage families (after conformance.coverage.base, whose method this is: each
family sorts the transitions of a small model instance into classes by what a bug hides
behind, searches the instance exhaustively, and keeps a shortest program per class).

The model is icefloe.model.v3 at the engine's declared DV policy. Classes are tuples of the
model's names:

  dvs       deletion vectors racing (two DV writers on one data file or on two, a DV
            replacing a DV, an update's DV against a delete's, a compaction racing DV
            deletes on the other file: apache/iceberg #17764's window, which must be no
            conflict at all, L3):
              ("race", kind, rival kind, "same file" | "other file", outcome): a rival's
                commit landed while the operation was in flight, and it ended so;
              ("validation", kind, ((rival kind, where), ...) oldest first, result): a
                retry validated over the commits since its start;
              ("commit", kind, "replaces a DV" | "merges position deletes" | "first DV"): a
                DV writer committed over a file that had a DV, or (a table upgraded from
                v2, spec/PROTOCOL.md 19.8) position delete files, or neither;
              ("commit", kind, "drops position deletes"): a compaction or copy-on-write
                of a file with position delete files committed;
  lineage   row ids (append racing append, a retry after a concurrent append, compaction,
            copy-on-write and updates carrying ids):
              ("commit", kind, "attempt n", (rival kinds since its start, oldest first));
              ("ids kept", kind, "inherited" | "materialised" | "no rows"): a rewrite,
                copy-on-write delete or update wrote rows again, their ids taken from
                first-row-id + position or from the file;
              ("validation", kind, (rival kinds...), result).

Each family has a few instances (V3Bounds overrides); a class is reached by the shortest
program of the first instance (in order, smallest first) that reaches it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from icefloe.model import v3 as V
from icefloe.model.search import class_witnesses

STATES_MAX = 500_000         # an instance larger than this is a mistake in a family's bounds
PROGRAM_STEPS_MAX = 200      # a program plus its liveness phase


def key_text(key) -> str:
    """A row's COLUMN value: its model key (writer, operation, position) as "w.k.p"."""
    return ".".join(str(x) for x in key)


def _ended(s: V.V3State, t: V.V3State) -> list:
    """[(w, kind, outcome)] for each operation that ended in s -> t."""
    return [(w, a.kind, t.outcomes[w - 1].res) for w, (a, b) in enumerate(zip(s.writers, t.writers), start=1)
            if a.phase != V.DONE and b.phase == V.DONE]


def _where(op: V.OpInfo, f: V.FileId) -> str:
    if op.kind == V.APPEND or f == V.NO_FILE:
        return "no file"
    return "same file" if op.file == f else "other file"


def _landed(s: V.V3State, t: V.V3State):
    """The version a swap in s -> t committed (None: none)."""
    return V.meta(t, t.cat) if t.cat != s.cat else None


def _between(s: V.V3State, wr: V.Writer, with_where: bool) -> tuple:
    out = []
    for _, x in reversed(V.chain_since(s, wr.start)):
        out.append((x.op.kind, _where(x.op, wr.file)) if with_where else x.op.kind)
    return tuple(out)


@dataclass(frozen=True)
class Family:
    name: str
    description: str
    instances: tuple                     # V3Bounds overrides (dicts as tuples of pairs), smallest first

    def bounds(self, dv_policy: str) -> list:
        return [V.V3Bounds(dv_policy=dv_policy, **dict(i)) for i in self.instances]

    def observe(self, b, tags, s, label, t):
        raise NotImplementedError


class DVs(Family):
    def observe(self, b, tags, s, label, t):
        done = []
        m = _landed(s, t)
        if m is not None:
            by = label[1]
            for w, wr in enumerate(s.writers, start=1):
                if w != by and wr.phase not in (V.PLAN, V.DONE):
                    tags = tags | {(w, m.op.kind, _where(m.op, wr.file))}
            pre = V.meta(s, s.cat)
            had_pds = any(d.file == m.op.file for d in pre.pos_deletes)
            if m.op.kind in V.DV_KINDS:
                had = any(d.file == m.op.file for d in pre.dvs)
                done.append(("commit", m.op.kind, "replaces a DV" if had else
                             "merges position deletes" if had_pds else "first DV"))
            elif m.op.kind in V.FILE_KINDS and had_pds:
                done.append(("commit", m.op.kind, "drops position deletes"))
        if label[0] == "Retry":
            wr = s.writers[label[1] - 1]
            result = t.outcomes[label[1] - 1].res if t.writers[label[1] - 1].phase == V.DONE else "next attempt"
            done.append(("validation", wr.kind, _between(s, wr, True), result))
        for w, kind, res in _ended(s, t):
            mine = {x for x in tags if x[0] == w}
            done += [("race", kind, x[1], x[2], res) for x in mine]
            tags = tags - mine
        return tags, tuple(done)


class Lineage(Family):
    def observe(self, b, tags, s, label, t):
        done = []
        m = _landed(s, t)
        if m is not None:
            wr = s.writers[label[1] - 1]
            done.append(("commit", wr.kind, f"attempt {wr.attempt}", _between(s, wr, False)))
            if wr.kind in V.FILE_KINDS + (V.ROW_UPDATE,):
                rows = V.rows_of(s, m.op.new) if m.op.new != V.NO_FILE else ()
                source = V.rows_of(s, wr.file)
                ids = "no rows" if not rows else "materialised" if any(r.id != V.NO_ID for r in source) \
                    else "inherited"
                done.append(("ids kept", wr.kind, ids))
        if label[0] == "Retry":
            wr = s.writers[label[1] - 1]
            result = t.outcomes[label[1] - 1].res if t.writers[label[1] - 1].phase == V.DONE else "next attempt"
            done.append(("validation", wr.kind, _between(s, wr, False), result))
        return tags, tuple(done)


def _instance(**bounds) -> tuple:
    return tuple(sorted(bounds.items()))


FAMILIES = (
    DVs("dvs", "deletion vectors: concurrent DV writers on one data file and on two, a DV replacing a DV, "
               "compaction racing DV deletes (apache/iceberg #17764: no conflict, L3)",
        (_instance(roles=(V.ROW_DELETE, V.ROW_DELETE), data_files=2),
         _instance(roles=(V.ROW_DELETE, V.ROW_UPDATE)),
         _instance(roles=(V.ROW_UPDATE, V.REWRITE), data_files=2),
         _instance(roles=(V.ROW_DELETE, V.ROW_DELETE, V.REWRITE), data_files=2),
         # a table upgraded from v2: DVs merging its position delete files (PROTOCOL 19.8)
         _instance(roles=(V.ROW_DELETE, V.ROW_UPDATE, V.REWRITE), position_deletes=2))),
    Lineage("lineage", "row lineage: append racing append, a retry after a concurrent append, compaction, "
                       "copy-on-write and updates keeping each row's _row_id",
            (_instance(roles=(V.APPEND, V.APPEND)),
             _instance(roles=(V.APPEND, V.REWRITE)),
             _instance(roles=(V.APPEND, V.COW_DELETE)),
             _instance(roles=(V.ROW_UPDATE, V.REWRITE)),
             _instance(roles=(V.ROW_UPDATE, V.COW_DELETE)))),
)
FAMILY_NAMES = tuple(f.name for f in FAMILIES)


@dataclass(frozen=True)
class Program:
    """A directed v3 program: the instance it runs on and its labels (the liveness phase,
    `converge_choice`, completes it)."""
    family: str
    bounds: V.V3Bounds
    labels: tuple


def converge_choice(b: V.V3Bounds, s: V.V3State):
    """The step the liveness phase takes next (None once every writer is done): writers in
    flight first, then the first Begin (in label order)."""
    labels = sorted((lab for lab, _ in V.successors(b, s)), key=repr)
    if not labels:
        return None
    busy = [lab for lab in labels if lab[0] != "Begin"]
    return busy[0] if busy else labels[0]


@lru_cache(maxsize=64)
def explore(family: Family, b: V.V3Bounds) -> dict:
    """class -> Program: every class the instance reaches, each with a shortest program
    (breadth first over (state, tags))."""
    def expand(node):
        s, tags = node
        for label, t in V.successors(b, s):
            cur, completed = family.observe(b, tags, s, label, t)
            yield label, (t, cur), completed
    _, paths = class_witnesses((V.initial_state(b), frozenset()), expand, STATES_MAX,
                               f"v3 family {family.name} at {b}")
    return {c: Program(family.name, b, labels) for c, labels in paths.items()}


def simulate(program: Program, family: Family) -> set:
    """The classes a program completes on the model alone, liveness phase included (what it
    covers on an engine that agrees with the model)."""
    s, tags, out = V.initial_state(program.bounds), frozenset(), set()
    labels = list(program.labels)
    for _ in range(PROGRAM_STEPS_MAX):
        label = labels.pop(0) if labels else converge_choice(program.bounds, s)
        if label is None:
            return out
        t = dict(V.successors(program.bounds, s))[label]
        tags, done = family.observe(program.bounds, tags, s, label, t)
        out.update(done)
        s = t
    raise AssertionError(f"program {program.labels} did not end in {PROGRAM_STEPS_MAX} steps")


def witnesses(family: Family, bounds: list) -> dict:
    """class -> the shortest program of the first instance that reaches it."""
    out: dict = {}
    for b in bounds:
        for c, p in explore(family, b).items():
            out.setdefault(c, p)
    return out


def cover(family: Family, found: dict) -> list:
    """Programs that together complete every class in `found` (each class's program, skipping
    a class an earlier program completed too)."""
    covered: set = set()
    programs = []
    for c, p in sorted(found.items(), key=lambda kv: (len(kv[1].labels), repr(kv[0]))):
        if c in covered:
            continue
        got = simulate(p, family)
        assert c in got, f"v3 family {family.name}: the program for {c} does not complete it"
        covered |= got
        programs.append(p)
    return programs


def with_policy(b: V.V3Bounds, dv_policy: str) -> V.V3Bounds:
    return replace(b, dv_policy=dv_policy)
