"""One commit of a black-box engine under one fault at the REST server's commit endpoint,
judged (the directed half of a REST engine's verdict; docs/verdicts.md shows each engine's
table and replays its findings).

`probe(engine, server, faults, fault, ...)` creates a fresh table through the engine
(context from `context(server, ...)`), commits a bootstrap append as writer 0, arms
`fault` for writer 1's next commit request at the server (conformance.testing.rest_faults)
and runs writer 1's operation whole. Then a parked (delayed) request is delivered or
dropped, as asked, and the table is read back through the engine. The `ProbeResult`
names what the engine reported, what the server saw (commit requests, how many applied)
and what the table holds, and `findings` what breaks the protocol:
  - a Conflict whose commit landed (P4: a failed commit is visible; what apache/iceberg
    #12818 reports: a retried POST meets 409 after the first one landed);
  - a Committed that did not land (P2: a lost commit), or that landed twice (P3);
  - a retained snapshot that cannot be read (P8: the engine deleted files it wrote
    although the outcome was unknown, duckdb-iceberg #1120).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from icefloe.conformance import adapter as A
from icefloe.conformance.engines import registry
from icefloe.conformance.testing import rest_faults as F

PROBE_WRITER = 1
WRITERS_MAX = 8
_tables = itertools.count(1)


@dataclass(frozen=True)
class ProbeResult:
    engine: str
    operation: str
    fault: str
    status: int | None
    then: str | None                      # a delayed request: "deliver" or "drop"
    outcome: str                          # committed / conflict / unknown / error
    reason: str
    attempts: int
    commit_requests: int                  # the writer's commit requests the server saw
    applied: int                          # how many of them the catalog applied
    landed: int                           # times the operation's row is in the table at the end
    findings: tuple = field(default_factory=tuple)

    def line(self) -> str:
        fault = self.fault + (f" {self.status}" if self.status else "") + (f", then {self.then}" if self.then else "")
        return (f"{self.engine} {self.operation} under {fault}: {self.outcome} after {self.attempts} attempt(s); "
                f"server: {self.commit_requests} commit request(s), {self.applied} applied; row landed "
                f"{self.landed}x" + (f"; FINDINGS: {'; '.join(self.findings)}" if self.findings else ""))


def context(server_url: str, warehouse: str, attempts_max: int = 2, s3: dict | None = None) -> A.TableContext:
    """A fresh table's context on a REST server (a new identifier per call)."""
    n = next(_tables)
    s3 = s3 or {}
    return A.TableContext(warehouse=warehouse, catalog_uri=server_url, identifier=f"db.probe{n}",
                          access_keys={w: f"w{w}" for w in range(WRITERS_MAX)}, commit_attempts_max=attempts_max,
                          seed=n, **s3)


def writer_tokens() -> dict:
    """RestFaults(tokens=...): engines that send their access key as a bearer token (DuckDB)."""
    return {f"w{w}": w for w in range(WRITERS_MAX)}


def probe(engine, ctx: A.TableContext, faults: F.RestFaults, fault: F.Fault, *, kind: str = A.APPEND,
          then: str | None = None) -> ProbeResult:
    table = engine.create_table(ctx)
    try:
        base = table.begin(0, A.OpSpec(A.APPEND, "0.1", rows=("0.1",))).run()
        if not isinstance(base, A.Committed):
            raise RuntimeError(f"{engine.name}: the bootstrap append did not commit: {base}")
        spec = _spec(kind, base)
        before = len(faults.history())
        rule = faults.add_rule(F.Rule(fault, F.Match(writer=PROBE_WRITER)))
        try:
            try:
                out = table.begin(PROBE_WRITER, spec).run()
                outcome, reason, attempts = A.outcome_name(out), getattr(out, "reason", ""), out.attempts
            except Exception as e:  # noqa: BLE001 - an engine that raises instead of an outcome
                outcome, reason, attempts = "error", f"{type(e).__name__}: {e}"[:300], 0
        finally:
            faults.remove_rule(rule)
        if fault.kind == F.DELAY:
            for request_id in faults.parked():
                faults.deliver(request_id) if then == "deliver" else faults.drop(request_id)
        mine = [x for x in faults.history()[before:] if x.writer == PROBE_WRITER and F.is_commit(x.method, x.path)]
        applied = sum(len([s for s in x.upstream_statuses if 200 <= s < 300]) for x in mine)
        findings, landed = _judge(table, spec, outcome, applied)
        return ProbeResult(engine.name, kind, fault.kind, fault.status if fault.kind in (
            F.FAIL_BEFORE, F.FAIL_AFTER, F.DELAY) else None, then, outcome, reason, attempts, len(mine),
            applied, landed, tuple(findings))
    finally:
        table.close()


def _spec(kind: str, base: A.Committed) -> A.OpSpec:
    if kind == A.APPEND:
        return A.OpSpec(A.APPEND, "1.1", rows=("1.1",))
    if kind == A.OVERWRITE:
        return A.OpSpec(A.OVERWRITE, "1.1", rows=("1.1",), where=None)
    if kind == A.DELETE:
        return A.OpSpec(A.DELETE, "1.1", where=frozenset({"0.1"}))
    raise ValueError(f"no probe for {kind!r}")


def _judge(table, spec: A.OpSpec, outcome: str, applied: int):
    """What the table shows after the operation, against what the engine said (`applied`:
    the server's count, used when the table cannot be read any more)."""
    findings = []
    try:
        rows = list(table.read_current().rows)
    except Exception as e:  # noqa: BLE001 - the current snapshot cannot be read
        findings.append(f"P8 dangling reference: the current snapshot cannot be read: {type(e).__name__}: "
                        f"{str(e)[:200]}")
        rows = None
    if rows is None:
        landed = applied
    elif spec.kind == A.DELETE:
        landed = 0 if "0.1" in rows else 1
    else:
        landed = rows.count("1.1")
    if outcome == A.CONFLICT and landed:
        findings.append("P4 failed commit landed: the engine reported a failed commit, the commit is in the table")
    if outcome == A.COMMITTED and not landed:
        findings.append("P2 lost commit: the engine reported the commit, the table does not have it")
    if landed > 1:
        findings.append(f"P3 duplicate commit: the row landed {landed} times")
    if rows is not None:
        try:
            history = table.history()
            for sid in history.versions[-1].snapshot_ids if history.versions else ():
                table.read_at(sid)
        except Exception as e:  # noqa: BLE001 - a retained snapshot that cannot be read
            findings.append(f"P8 dangling reference: a retained snapshot cannot be read: {type(e).__name__}: "
                            f"{str(e)[:200]}")
    return findings, landed


# Every fault kind at the commit endpoint, each way an Unknown can resolve.
FAULT_CASES = (
    (F.Fault(F.REJECT), None),
    (F.Fault(F.FAIL_BEFORE, 500), None),
    (F.Fault(F.FAIL_BEFORE, 503), None),
    (F.Fault(F.FAIL_AFTER, 500), None),
    (F.Fault(F.FAIL_AFTER, 502), None),
    (F.Fault(F.FAIL_AFTER, 504), None),
    (F.Fault(F.LOST), None),
    (F.Fault(F.DELAY, 503), "deliver"),
    (F.Fault(F.DELAY, 503), "drop"),
    (F.Fault(F.DUPLICATE), None),
)


def expected(fault: F.Fault, then: str | None) -> tuple[str, int]:
    """What a correct client reports for each case, and how often its commit lands: a 409
    is retried to a commit; a 5xx or a lost answer is unknown, landed or not as the server
    applied it; a duplicate delivery changes nothing."""
    if fault.kind in (F.REJECT, F.DUPLICATE):
        return A.COMMITTED, 1
    if fault.kind == F.FAIL_BEFORE:
        return A.UNKNOWN, 0
    if fault.kind == F.DELAY:
        return A.UNKNOWN, 1 if then == "deliver" else 0
    return A.UNKNOWN, 1           # fail_after, lost: applied, the answer lost


def case_id(fault: F.Fault, then: str | None) -> str:
    return fault.kind + (f"-{fault.status}" if fault.kind in (F.FAIL_BEFORE, F.FAIL_AFTER, F.DELAY) else "") + \
        (f"-{then}" if then else "")


PROBE_KINDS = {"pyiceberg": (A.APPEND, A.OVERWRITE, A.DELETE), "duckdb": (A.APPEND, A.OVERWRITE, A.DELETE),
               "java": (A.APPEND, A.OVERWRITE, A.DELETE), "java-mor": (A.OVERWRITE, A.DELETE)}


def matrix(engine_name: str, kinds=None) -> list:
    """Every fault case x operation kind for one engine, on a fresh `icefloe serve` (SQLite,
    local warehouse) with the fault layer in front: [ProbeResult]."""
    import tempfile
    from icefloe.conformance.testing.rest_server import RestServer
    engine = registry.load_engine("pyiceberg-rest" if engine_name == "pyiceberg" else engine_name)
    out = []
    with tempfile.TemporaryDirectory(prefix="icefloe-probe-") as root:
        box = {}

        def wrap(app):
            box["faults"] = F.RestFaults(app, tokens=writer_tokens())
            return box["faults"]
        with RestServer(f"sqlite:///{root}/catalog.db", f"{root}/warehouse", wrap=wrap) as server:
            for fault, then in FAULT_CASES:
                for kind in kinds or PROBE_KINDS[engine_name]:
                    out.append(probe(engine, context(server.url, f"file://{root}/warehouse"), box["faults"],
                                     fault, kind=kind, then=then))
            box["faults"].close()
    return out


def main(argv=None) -> int:
    """python -m icefloe.conformance.testing.rest_engine_probe ENGINE [--json FILE]: the
    fault matrix of docs/verdicts.md for one engine (pyiceberg, java, java-mor, duckdb)."""
    import argparse
    import json
    import logging
    from dataclasses import asdict
    p = argparse.ArgumentParser(prog="rest_engine_probe")
    p.add_argument("engine", choices=sorted(PROBE_KINDS))
    p.add_argument("--json")
    args = p.parse_args(argv)
    logging.disable(logging.WARNING)
    results = matrix(args.engine)
    for r in results:
        print(r.line())
    found = [r for r in results if r.findings]
    print(f"{args.engine}: {len(results)} probes, {len(found)} with findings")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump([asdict(r) for r in results], f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
