"""Transport-level faults for stepping engines (spec/PROTOCOL.md 2, 4, 13), each mirrored on
the model by what it did and what the engine made of it.

FaultHooks fault an engine at its own storage and catalog wrappers; real engines meet
faults one layer down, where SDK retries, read-backs and ambiguous answers arise. Here
the S3 proxy (conformance.testing.proxy) loses a request or its response on the writer's
next S3 request of a phase, and a SQL catalog's COMMIT fails before or after it reached
the database (conformance.testing.faulty_sql). The program names the fault, not its
model action:

  ("ResponseLost", w)  the request reaches the server, the answer is lost;
  ("RequestLost", w)   the request is lost before it reaches the server;
  ("Blackout", w)      S3: the answer is lost and the writer's next request fails too (its
                       SDK retry or its read-back);
  ("ServerError", w)   S3: the server answers 500 without applying the write (whether it did
                       is the client's guess), and the writer's later writes in this step are
                       lost (its SDK retries); its reads get through, so a read-back sees what
                       is really there (the object as it was);
  ("Outage", w, n)     S3 swap: the answer is lost and the writer's next n requests fail, then
                       they get through again. The outage ends between its n-th and (n+1)-th
                       request, for each n from 2 to OUTAGE_REQUESTS_MAX (Blackout is n = 1),
                       so every boundary of the client's recovery is a schedule: its SDK
                       retries, its store's read-back, its catalog's own read of the pointer
                       (a read-back that failed before a read that succeeds: the catalog, not
                       the store, must then tell its own landed swap from a rival's);
  ("Partition", w)     S3: the answer is lost and every later request of the writer in this
                       step fails (its retries, read-backs, cleanup and the refresh after
                       its outcome); the partition heals before the next step;
  ("HoldAnswer", w)    S3 swap: the pointer write is applied and its answer held; the
                       writer stays in its swap call while the program goes on;
  ("LoseAnswer", w)    the held answer is lost (the connection is reset).

The model then takes the actions that match what happened and what the engine reports
(`mirror`): a swap whose request reached the catalog is `Swap` if the engine learned its
answer, `AckLost` if not; one that never reached it is `SwapFails` or, reported unknown,
`SwapDelayed` then `Drop`; a write either `WriteX` or `WriteFails`. Anything else (a swap
that S3 applied, reported rejected) has no mirror: a Violation names it.
"""
from __future__ import annotations

import functools
import threading

from icefloe.conformance import adapter as A
from icefloe.conformance.violation import AGREEMENT, Violation
from icefloe.model.state import DATA, DONE, LIST, MANIFESTS, METADATA, PHASE_ACTIONS, RETRY, SWAP, RESOLVE

RESPONSE_LOST, REQUEST_LOST, BLACKOUT, SERVER_ERROR, HOLD, RELEASE = (
    "ResponseLost", "RequestLost", "Blackout", "ServerError", "HoldAnswer", "LoseAnswer")
OUTAGE, PARTITION = "Outage", "Partition"
TRANSPORT_LABELS = (RESPONSE_LOST, REQUEST_LOST, BLACKOUT, SERVER_ERROR, OUTAGE, PARTITION, HOLD, RELEASE)
# Up to 8 failed requests after the lost answer: icefloe's S3 store makes 4 attempts at a
# write, then 4 at its read-back, so an outage of 7 ends right before its catalog reads the
# pointer. A client that retries longer meets outages that end inside its own retries only.
OUTAGE_REQUESTS_MAX = 8
OUTAGE_REQUESTS = tuple(range(2, OUTAGE_REQUESTS_MAX + 1))
# The object each phase writes, by key (impl/table/env.py names; the S3 catalog's pointer).
KEYS = {DATA: "*/data/*", MANIFESTS: "*/metadata/*-m[0-9]*.avro", LIST: "*/metadata/snap-*.avro",
        METADATA: "*.metadata.json", SWAP: "*/metadata/pointer.json"}
WRITE_PHASES = (DATA, MANIFESTS, LIST, METADATA)
PUTS = frozenset({"PutObject", "ConditionalPutObject"})
HOLD_ARRIVE_S = 30.0
HOLD_JOIN_S = 60.0


class Transport:
    def __init__(self, lock):
        self.lock = lock
        self.held: dict = {}          # w -> (thread, box, gate, rule) while its answer is held
        self.held_at: dict = {}       # w -> the model's pointer when its answer was held
        self.unfired: set = set()     # writers whose last fault found no request to hit (counted nowhere)

    # -- where a fault can hit ----------------------------------------------------------

    def layer(self, phase: str) -> str | None:
        """The transport the writer's request of this phase travels over, if faultable."""
        lock = self.lock
        caps, ctx = lock.caps, lock.ctx
        if lock.black_box:
            return None
        on_s3 = ctx.warehouse.startswith("s3://") and lock.proxy is not None and A.TRANSPORT_S3 in caps.transport
        if phase == SWAP:
            if ctx.catalog_uri:
                return A.TRANSPORT_SQL if A.TRANSPORT_SQL in caps.transport else None
            return A.TRANSPORT_S3 if on_s3 else None
        return A.TRANSPORT_S3 if on_s3 and phase in WRITE_PHASES else None

    def labels(self, enabled: dict) -> list:
        """The transport faults a program may take now: the writer's phase has a faultable
        request, and every model action that can mirror the fault is enabled."""
        out = []
        for w, wr in enumerate(self.lock.model.writers, start=1):
            if w in self.held:
                out.append((RELEASE, w))
                continue
            rec = self.lock.active.get(w)
            if rec is None or rec.commit is None or wr.k != rec.k:
                continue
            layer = self.layer(wr.phase)
            if layer is None:
                continue
            if wr.phase == SWAP:
                if not {("SwapFails", w), ("AckLost", w), ("SwapDelayed", w)} <= set(enabled):
                    continue
                out += [(RESPONSE_LOST, w), (REQUEST_LOST, w)]
                if layer == A.TRANSPORT_S3:
                    out += [(BLACKOUT, w), (SERVER_ERROR, w), (PARTITION, w), (HOLD, w)]
                    out += [(OUTAGE, w, n) for n in OUTAGE_REQUESTS]
            elif ("WriteFails", w) in enabled:
                out += [(RESPONSE_LOST, w), (REQUEST_LOST, w)]
                if layer == A.TRANSPORT_S3:
                    out += [(BLACKOUT, w), (SERVER_ERROR, w), (PARTITION, w)]
        return out

    def busy(self, w: int) -> bool:
        return w in self.held

    # -- running one --------------------------------------------------------------------

    def step(self, label) -> None:
        """Run the engine's step with the fault, then take the model's mirroring actions."""
        from icefloe.model import iceberg
        from icefloe.conformance.suite.view import FAULT_OF_ACTION
        lock = self.lock
        w = label[1]
        wr = lock.model.writers[w - 1]
        layer = self.layer(wr.phase)
        held_at = self.held_at.pop(w, None)
        classes = [] if label[0] == RELEASE else [(layer, fault_name(label), wr.phase, wr.kind)]
        if label[0] == RELEASE and held_at is not None and held_at != lock.model.cat:
            classes.append((A.TRANSPORT_S3, HOLD + "+rival", SWAP, wr.kind))   # a rival built on it meanwhile
        for name in self.run(label):
            mirrored = ("Drop", w, wr.k, wr.attempt) if name == "Drop" else (name, w)
            nxt = dict(iceberg.successors(lock.bounds, lock.model)).get(mirrored)
            if nxt is None:
                raise Violation(AGREEMENT, f"writer {w}: no model action mirrors {label[0]} as the engine took it "
                                f"(it would be {mirrored})", "a mirror", mirrored)
            if FAULT_OF_ACTION.get(name):
                lock.stats.faults[FAULT_OF_ACTION[name]] += 1
            lock.advance(mirrored, nxt)
        if label[0] == HOLD:
            self.held_at[w] = lock.model.cat
        if w in self.unfired:            # no request was faulted: no fault counted, no class covered
            self.unfired.discard(w)
            classes = []
        else:
            lock.stats.faults[f"transport {label[0]}"] += 1
        for observe in lock.observers:
            note = getattr(observe, "note", None)
            for cls in classes if note is not None else ():
                note("transport", cls)
        if not self.busy(w):
            lock._step_to(w)
        if lock.model.writers[w - 1].k != wr.k:
            lock._ended(w, wr.k)

    def run(self, label) -> list:
        """Inject the fault on the writer's request of this step, run the step, and return
        the model labels that mirror what happened."""
        name, w = label[:2]
        lock = self.lock
        wr = lock.model.writers[w - 1]
        rec = lock.active[w]
        if name == RELEASE:
            return self._release(w, wr, rec)
        layer = self.layer(wr.phase)
        if layer == A.TRANSPORT_SQL:
            lock.hooks.arm_commit(w, "after" if name == RESPONSE_LOST else "before")
            try:
                lock._engine(w, rec.commit.step)
            finally:
                missed = lock.hooks.disarm_commit(w)
            if missed is not None:
                if wr.phase == SWAP and rec.commit.phase in (RETRY, DONE):
                    # No COMMIT was sent because the conditional UPDATE matched no row (a stale
                    # base): the swap was refused inside the transaction, which then rolled
                    # back, so the fault had nothing to hit and the engine knows its answer.
                    # The model's plain Swap mirrors that (its answer is compared as usual).
                    self.unfired.add(w)
                    return ["Swap"]
                raise Violation(AGREEMENT, f"writer {w}: no COMMIT in phase {wr.phase} for the {name} fault",
                                "a COMMIT", "none")
            return mirror(wr.phase, name == RESPONSE_LOST, rec.commit, w)
        from icefloe.conformance.testing.proxy import LoseResponse, Match, Reject, Reset, Rule
        proxy, client = lock.proxy, lock.ctx.access_key(w)
        target = Match(operation=PUTS, key=KEYS[wr.phase], client=client)
        if name == HOLD:
            return self._hold(w, wr, rec, target)
        fault = Reset() if name == REQUEST_LOST else Reject(500) if name == SERVER_ERROR else LoseResponse("reset")
        rules = [proxy.add_rule(Rule(fault, target, nth=1, times=1))]
        if name == BLACKOUT:
            rules.append(proxy.add_rule(Rule(Reset(), Match(client=client), nth=2)))
        elif name == SERVER_ERROR:       # every later write (the first rule takes the first)
            rules.append(proxy.add_rule(Rule(Reset(), Match(operation=PUTS, client=client))))
        elif name in (OUTAGE, PARTITION):  # the writer's requests after the lost answer
            rules.append(proxy.add_rule(_after_rule()(Reset(), Match(client=client), times=label[2] if name == OUTAGE
                                                     else None, first=rules[0])))
        seen = len(proxy.history())
        try:
            lock._engine(w, rec.commit.step)
        finally:
            for rule in rules:
                proxy.remove_rule(rule)
        if not rules[0].fired:
            raise Violation(AGREEMENT, f"writer {w}: no S3 request in phase {wr.phase} for the {name} fault",
                            "a request", "none")
        sent = [x for x in proxy.history()[seen:] if target(_as_request(x))]
        forwarded = any(x.upstream_status is not None for x in sent)
        applied = any(x.upstream_status == 200 for x in sent)
        return mirror(wr.phase, forwarded, rec.commit, w, applied)

    def _hold(self, w, wr, rec, target) -> list:
        """Run the swap in a thread held at the proxy after the pointer write applied."""
        from icefloe.conformance.testing.proxy import LoseResponse, Rule
        proxy = self.lock.proxy
        gate = proxy.add_gate(target, stage="response")
        rule = proxy.add_rule(Rule(LoseResponse("reset"), target, nth=1, times=1))
        box: dict = {}

        def swap():
            try:
                rec.commit.step()
            except BaseException as e:  # noqa: BLE001 - reported when the answer is lost
                box["error"] = e
        thread = threading.Thread(target=swap, name=f"writer-{w}-held", daemon=True)
        thread.start()
        if not gate.wait_arrived(HOLD_ARRIVE_S):
            gate.release()
            thread.join(HOLD_JOIN_S)
            proxy.remove_rule(rule)
            raise Violation(AGREEMENT, f"writer {w}: no pointer write reached the catalog in phase {wr.phase}",
                            "a request", "none")
        self.held[w] = (thread, box, gate, rule)
        return ["AckLost"]                      # applied; the writer does not know yet

    def _release(self, w, wr, rec) -> list:
        thread, box, gate, rule = self.held.pop(w)
        gate.release()                          # the held answer goes out as a reset
        thread.join(HOLD_JOIN_S)
        self.lock.proxy.remove_rule(rule)
        if thread.is_alive():
            raise Violation("L2 OperationsTerminate", f"writer {w}: the swap did not return within {HOLD_JOIN_S:.0f} s",
                            "returned", "running")
        if "error" in box:
            from icefloe.conformance.suite.divergence import engine_failure
            raise engine_failure(self.lock, w, box["error"])
        phase = rec.commit.phase
        if phase == DONE and isinstance(rec.commit.outcome, A.Committed):
            return ["Resolve"]                 # it learned that its swap had landed
        if phase == RESOLVE:
            return []
        raise Violation(AGREEMENT, f"writer {w}: its swap was applied (and the table may have moved on from "
                        f"it), yet the engine reports {phase} {rec.commit.outcome or ''}: a retry re-applies a "
                        "landed commit (P3) or a cleanup deletes it (P8)", "committed or unknown", phase)

    def close(self) -> None:
        for w in list(self.held):
            thread, _, gate, rule = self.held.pop(w)
            gate.release()
            thread.join(HOLD_JOIN_S)


def fault_name(label) -> str:
    """The transport class's name for a fault label: "Outage3" for ("Outage", w, 3)."""
    return f"{label[0]}{label[2]}" if label[0] == OUTAGE else label[0]


@functools.cache
def _after_rule():
    """The proxy's Rule class, narrowed (imported on first use, as the proxy is)."""
    from dataclasses import dataclass
    from icefloe.conformance.testing.proxy import Rule

    @dataclass(eq=False)
    class After(Rule):
        """A rule that fires only once `first` has fired: it counts the writer's requests
        after the faulted one, never one made before it in the same step (a read first)."""
        first: Rule | None = None

        def _fire(self, rng) -> bool:
            return self.first is not None and self.first.fired > 0 and super()._fire(rng)
    return After


def _as_request(x):
    from icefloe.conformance.testing.s3_requests import S3Request
    return S3Request(method=x.method, operation=x.operation, bucket=x.bucket, key=x.key, client=x.client,
                     if_match=x.if_match, if_none_match=x.if_none_match)


def mirror(phase: str, reached: bool, commit, w: int, applied: bool = False) -> list:
    """The model actions that match a transport fault in `phase` whose request `reached`
    the server (or not; `applied`: S3 answered it 200), given where the engine's commit
    stands now."""
    now = commit.phase
    if phase == SWAP:
        if now == RETRY and applied:
            raise Violation(AGREEMENT, f"writer {w}: S3 applied its pointer write (200), yet the engine reports its "
                            "swap rejected: its retry re-applies a landed commit (P3) or its cleanup deletes one "
                            "(P8)", "committed or unknown", "rejected")
        if now == RETRY and not reached:
            return ["SwapFails"]
        if now == RESOLVE:
            return ["AckLost"] if reached else ["SwapDelayed", "Drop"]
        return ["Swap"]      # it knows the answer; if the model's differs, the comparison says so
    if now == phase:
        raise Violation(AGREEMENT, f"writer {w}: phase {phase} did not end after a transport fault", "progress", now)
    return ["WriteFails"] if now == DONE else [PHASE_ACTIONS[phase]]
