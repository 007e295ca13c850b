"""The v3 model and an engine's v3 table in lockstep (spec/PROTOCOL.md 19; the model is
icefloe.model.v3, whose action labels are the program's words: `("Begin", w, file, pos)`,
`("Begin", w)` for a no-op, `("WriteData", w)`, `("WriteMetadata", w)`, `("Swap", w)`,
`("Retry", w)`).

Each step is checked enabled for the model (else InvalidProgram), applied to the model, and
the same step made on the engine: Begin asks `TableHandle.begin` for the operation on the
row (or data file) the model picked and runs its plan; the others step the engine's commit
until its phase is the model writer's. The v3 model has no manifests phase of its own: its
DATA is the engine's data, manifests and list, its WriteMetadata the engine's metadata write
(a retry of a kind that reuses its files goes from retry through manifests and list to
metadata, as the model's goes from RETRY to METADATA).

After every step: each writer's phase; when an operation ends, its outcome (the engine's
Conflict where the model commits is L3 NoSpuriousConflict, a commit where the model's
validation fails P5 ValidationSound, unless the table shows a sharper property first);
whenever main's head moves, the engine's table state (`read_v3`) is judged first by P11-P14
over the engine's history (conformance.v3.judge) and P6 for the commit, then compared with
the model's: rows and their _row_ids (P6 when the rows differ), and per live data file its
rows, their ids, first-row-id, DVs and live position delete files (an upgraded table's:
a DV written for the file removes them, PROTOCOL 19.8), and next-row-id (A0
ModelAgreement; P11 OneLiveDV counts DVs only, so a position delete file left beside a DV
is a disagreement with the model, not a P11 violation).
"""
from __future__ import annotations

from dataclasses import replace

from icefloe.conformance import adapter as A
from icefloe.conformance.v3 import judge
from icefloe.conformance.v3.families import converge_choice, key_text
from icefloe.conformance.violation import AGREEMENT, InvalidProgram, Violation
from icefloe.model import v3 as V

STEP_TO_PHASES_MAX = 8
LIVENESS_STEPS_MAX = 200
BOOTSTRAP_PHASES_MAX = 64
# The engine phases each model phase stands for (the module docstring).
ENGINE_PHASES = {V.DATA: (A.DATA, A.MANIFESTS, A.LIST), V.METADATA: (A.METADATA,), V.SWAP: (A.SWAP,),
                 V.RETRY: (A.RETRY,)}
OUTCOME_OF = {V.COMMITTED: A.Committed, V.NOOP: A.Committed, V.CONFLICT: A.Conflict}


def _id(x: int) -> int | None:
    """A model id in the engine's terms: NO_ID (an upgraded table's null) is None."""
    return None if x == V.NO_ID else x


def _positions(deletes, f) -> tuple:
    """The sorted position sets (0-based) of the deletes (model DVs or PosDeletes, 1-based)
    of data file f."""
    return tuple(sorted(tuple(sorted(p - 1 for p in d.positions)) for d in deletes if d.file == f))


def _read_positions(deletes, path) -> tuple:
    """The same of an engine's V3DeletionVectors (0-based) of the data file at path."""
    return tuple(sorted(tuple(sorted(d.positions)) for d in deletes if d.data_file == path))


def model_view(s: V.V3State) -> tuple:
    """(next-row-id, sorted per-file (rows, _row_ids, first-row-id, DVs' positions, position
    delete files' positions), DVs of no live file) of the model's current version, in the
    engine's terms (0-based positions, None for a null id). A DV written for a file merges
    and removes its position delete files (PROTOCOL 19.8): one left live beside the DV is a
    disagreement here, though the rows agree. Position delete files of no live data file are
    not compared: the model drops them with the file a compaction or copy-on-write removes,
    icefloe (as Iceberg-Java's rewrite without remove-dangling-deletes) leaves them live,
    naming a file no snapshot holds, where they delete no row."""
    m = V.meta(s, s.cat)
    files = []
    for f, first in m.files:
        rows = V.rows_of(s, f)
        files.append((tuple(key_text(r.key) for r in rows),
                      tuple(_id(V.row_id(s, m, f, i)) for i in range(1, len(rows) + 1)), _id(first),
                      _positions(m.dvs, f), _positions(m.pos_deletes, f)))
    live = {f for f, _ in m.files}
    stray = tuple(sorted(tuple(sorted(p - 1 for p in d.positions)) for d in m.dvs if d.file not in live))
    return m.next_row_id, tuple(sorted(files)), stray


def model_rows(s: V.V3State) -> tuple:
    m = V.meta(s, s.cat)
    return tuple(sorted(((key_text(V.rows_of(s, f)[i - 1].key), _id(V.row_id(s, m, f, i))) for f, i in V.live(s, m)),
                        key=repr))


def engine_view(obs: A.V3Read) -> tuple:
    """model_view's shape from the engine's read (adapter.V3Read)."""
    files = [(tuple(f.rows), tuple(f.row_ids), f.first_row_id, _read_positions(obs.dvs, f.path),
              _read_positions(obs.position_deletes, f.path)) for f in obs.files]
    live = {f.path for f in obs.files}
    stray = tuple(sorted(tuple(sorted(d.positions)) for d in obs.dvs if d.data_file not in live))
    return obs.next_row_id, tuple(sorted(files)), stray


class V3Lockstep:
    def __init__(self, engine, ctx: A.TableContext, bounds: V.V3Bounds, stats=None):
        self.engine, self.bounds, self.stats = engine, bounds, stats
        self.ctx = replace(ctx, format_version=3, partitions=1, refs=False,
                           commit_attempts_max=bounds.attempts_max)
        self.model = V.initial_state(bounds)
        self.program: list = []
        self.observers: list = []            # callables (state, label, next state)
        self.commits: dict = {}              # w -> the engine's commit in progress
        self.specs: dict = {}                # w -> its OpSpec
        self.table = None
        if bounds.upgraded:
            # A table written as v2 and upgraded (spec/PROTOCOL.md 19.8): the model's initial
            # version is the engine's table as create_table leaves it, with no v3 snapshot.
            boot = V.initial_state(bounds)
            rows = tuple(key_text(r.key) for r in V.rows_of(boot, (0, 1)))
            deleted = tuple(rows[p - 1] for p in sorted(V.pos_delete_positions(V.meta(boot, boot.cat), (0, 1))))
            self.ctx = replace(self.ctx, upgraded_from_v2=(rows, deleted))
            self.table = self._engine(0, engine.create_table, self.ctx)
        else:
            self.table = engine.create_table(self.ctx)
            for k, rows in ((1, ("0.1.1", "0.1.2")), (2, ("0.2.1",)))[:bounds.data_files]:
                self._bootstrap(A.OpSpec(A.APPEND, f"0.{k}", rows=rows))
        self.history = [self._read()]        # the engine's state per committed version
        self._compare(self.history[-1], ("bootstrap", 0))

    def _bootstrap(self, spec: A.OpSpec) -> None:
        commit = self._engine(0, self.table.begin, 0, spec)
        for _ in range(BOOTSTRAP_PHASES_MAX):
            if commit.done:
                break
            self._engine(0, commit.step)
        if not isinstance(commit.outcome, A.Committed) or commit.outcome.snapshot_id is None:
            raise Violation(AGREEMENT, f"the v3 bootstrap append {spec.op_id} did not commit: {commit.outcome}")

    # -- the program ----------------------------------------------------------------------

    def apply(self, label) -> None:
        label = tuple(label)
        choices = dict(V.successors(self.bounds, self.model))
        if label not in choices:
            raise InvalidProgram(label, f"is not enabled in the v3 model here (enabled: {sorted(choices, key=repr)})")
        self.program.append(label)
        if self.stats is not None:
            self.stats.steps += 1
            self.stats.rules[f"v3 {label[0]}"] += 1
        before, nxt = self.model, choices[label]
        try:
            self._step(label, before, nxt)
        except Violation as v:
            raise v.at(len(self.program) - 1, label)

    def _step(self, label, before: V.V3State, nxt: V.V3State) -> None:
        name, w = label[0], label[1]
        self.model = nxt
        for observe in self.observers:
            observe(before, label, nxt)
        if name == "Begin":
            spec = self._spec(before, label)
            self.specs[w] = spec
            self.commits[w] = self._engine(w, self.table.begin, w, spec)
            self._engine(w, self.commits[w].step)          # refresh and plan
        else:
            self._engine(w, self.commits[w].step)
        self._step_to(w)
        if self.model.writers[w - 1].phase == V.DONE:
            self._ended(w)
        elif self._head_moved():
            self._observe_commit(w)

    def _spec(self, s: V.V3State, label) -> A.OpSpec:
        """The engine's operation for the model's Begin: the row it names by its value, a
        rewrite's data file by the rows written in it and a row live in it."""
        w = label[1]
        kind = s.writers[w - 1].kind
        op_id = f"{w}.{V.OP}"
        if kind == V.APPEND:
            return A.OpSpec(A.APPEND, op_id, rows=(key_text((w, V.OP, 1)),))
        if len(label) == 2:                                   # nothing to pick: a no-op
            return A.OpSpec(kind, op_id, row=None, where=frozenset())
        f, pos = label[2], label[3]
        rows = V.rows_of(s, f)
        if kind == V.REWRITE:
            m = V.meta(s, s.cat)
            live = [key_text(rows[i - 1].key) for g, i in V.live(s, m) if g == f]
            return A.OpSpec(A.REWRITE, op_id, where=frozenset(key_text(r.key) for r in rows),
                            row=live[0] if live else None)
        return A.OpSpec(kind, op_id, row=key_text(rows[pos - 1].key))

    def _engine(self, w: int, fn, *args):
        """Call into the engine; what it raises is its observation here (its own assertion too)."""
        try:
            return fn(*args)
        except (Violation, InvalidProgram):
            raise
        except Exception as e:  # noqa: BLE001 - the engine's failure is a finding
            raise Violation(AGREEMENT, f"writer {w}: the engine raised {type(e).__name__}: {e}",
                            "no error", f"{type(e).__name__}: {e}") from e

    def _step_to(self, w: int) -> None:
        """Step writer w's commit until its phase stands for the model writer's."""
        wr, commit = self.model.writers[w - 1], self.commits[w]
        if wr.phase == V.DONE:
            return
        want = ENGINE_PHASES[wr.phase]
        for _ in range(STEP_TO_PHASES_MAX):
            if commit.phase in want or commit.done:
                break
            self._engine(w, commit.step)
        if commit.phase not in want:
            if commit.done and isinstance(commit.outcome, A.Conflict):
                raise Violation("L3 NoSpuriousConflict", f"writer {w} ({self.specs[w].kind} {self.specs[w].row or ''}): "
                                f"the engine ended in conflict where the model's validation passes and it goes on "
                                f"to {wr.phase}: {commit.outcome}", wr.phase, commit.outcome)
            self._ran_ahead(w)
            raise Violation(AGREEMENT, f"writer {w}: the model is in phase {wr.phase}, the engine in {commit.phase}"
                            + (f", ended {commit.outcome}" if commit.done else ""), wr.phase, commit.phase)

    def _head_moved(self) -> bool:
        cheap = getattr(self.table, "current_snapshot_id", None)     # optional in the contract
        head = self._engine(0, cheap) if cheap is not None else self._read().snapshot_id
        return head != self.history[-1].snapshot_id

    def _ended(self, w: int) -> None:
        """The model ended writer w's operation: the engine's must end the same way."""
        res = self.model.outcomes[w - 1].res
        commit = self.commits[w]
        if not commit.done:
            self._ran_ahead(w)
            raise Violation(AGREEMENT, f"writer {w} ({self.specs[w].kind}): the model ended it {res}, the engine "
                            f"has not (phase {commit.phase})", res, commit.phase)
        out = commit.outcome
        if res == V.COMMITTED or self._head_moved():   # a commit the model made must show on the table
            self._observe_commit(w)
        if not isinstance(out, OUTCOME_OF[res]):
            if isinstance(out, A.Conflict) and res == V.COMMITTED:
                prop = "L3 NoSpuriousConflict"
            elif isinstance(out, A.Committed) and res == V.CONFLICT:
                prop = "P5 ValidationSound"
            else:
                prop = AGREEMENT
            raise Violation(prop, f"writer {w} ({self.specs[w].kind} {self.specs[w].row or ''}): the model's outcome is "
                            f"{res}, the engine's {out}", res, out)
        if res == V.NOOP and out.snapshot_id is not None and out.attempts != 0:
            raise Violation(AGREEMENT, f"writer {w}: a no-op for the model, the engine committed {out.snapshot_id}",
                            res, out)
        if self.stats is not None:
            self.stats.commits += res == V.COMMITTED
            self.stats.conflicts += res == V.CONFLICT
            self.stats.noops += res == V.NOOP
            self.stats.retries += res == V.COMMITTED and out.attempts > 1

    def _ran_ahead(self, w: int) -> None:
        """The engine's writer left the model's schedule: let it finish alone (bounded) so the
        table shows what it did; a property its commit breaks is named before the step's A0."""
        commit = self.commits[w]
        for _ in range(BOOTSTRAP_PHASES_MAX):
            if commit.done:
                break
            try:
                commit.step()
            except Exception:  # noqa: BLE001 - the step's own A0 reports the divergence
                return
        try:
            moved = self._head_moved()
        except Violation:
            return
        if moved:
            self._observe_commit(w, compare=False)

    # -- the table's state ---------------------------------------------------------------------

    def _read(self) -> A.V3Read:
        return self._engine(0, self.table.read_v3)

    def _observe_commit(self, w: int, compare: bool = True) -> None:
        """Main's head moved (writer w's commit, or not): P11-P14 over the engine's history,
        P6 for the commit, then the state against the model's."""
        obs = self._read()
        pre = self.history[-1]
        self.history.append(obs)
        found = judge.judge(self.history)
        if found is not None:
            raise Violation(found[0], found[1], "the property holds", obs)
        why = judge.isolation(pre, obs, self.specs[w]) if w in self.specs else None
        if why is not None:
            raise Violation("P6 Isolation", f"writer {w}: {why}", "the operation's effect", obs.rows)
        if compare:
            self._compare(obs, ("commit", w))

    def _compare(self, obs: A.V3Read, where) -> None:
        if obs.rows is None:
            raise Violation(AGREEMENT, f"{where}: the engine cannot read its own table: {obs.scan_error}",
                            model_rows(self.model), obs.scan_error)
        want_rows = model_rows(self.model)
        if tuple(sorted(obs.rows, key=repr)) != want_rows:
            prop = "P6 Isolation" if sorted(v for v, _ in obs.rows) != sorted(v for v, _ in want_rows) else AGREEMENT
            raise Violation(prop, f"{where}: rows and _row_ids differ from the model's", want_rows, obs.rows)
        want, got = model_view(self.model), engine_view(obs)
        if got != want:
            raise Violation(AGREEMENT, f"{where}: the table (next-row-id, data files with rows, _row_ids, "
                            "first-row-id, DV positions, position delete files' positions) differs from the "
                            "model's", want, got)

    # -- liveness and the end ------------------------------------------------------------------

    def finish(self) -> None:
        """Drive every writer to its end (the model's liveness order), then compare the final
        state once more and judge the whole history."""
        for _ in range(LIVENESS_STEPS_MAX):
            label = converge_choice(self.bounds, self.model)
            if label is None:
                break
            self.apply(label)
        else:
            raise Violation("L2 OperationsTerminate", f"the v3 writers did not finish in {LIVENESS_STEPS_MAX} steps")
        try:
            obs = self._read()
            if obs.snapshot_id != self.history[-1].snapshot_id:
                raise Violation(AGREEMENT, "main's head moved with no commit of the program's",
                                self.history[-1].snapshot_id, obs.snapshot_id)
            self._compare(obs, ("end", 0))
        except Violation as v:
            raise v.at(len(self.program) - 1, ("History", 0))

    def close(self) -> None:
        if self.table is not None:
            self.table.close()
