"""`icefloe conform --rest-uri URI`: the commit endpoint of somebody else's REST catalog,
judged (issue 13 item 4; spec/PROTOCOL.md 3 "The catalog's swap", 9 "Commit outcomes").

The suite's probe writers talk to the catalog through a fault-injecting HTTP proxy
(conformance.testing.rest_faults: RestFaults(Upstream(URI))) on 127.0.0.1, and every
answer is judged against the table the catalog then serves. The checks:

  config              GET /v1/config answers; whether idempotency-key-lifetime is claimed;
  bad-input           malformed JSON, an unknown update, an unknown requirement: a 4xx
                      ErrorModel and the table unchanged;
  requirements-409    a stale assert-ref-snapshot-id or a wrong assert-table-uuid: 409, unchanged;
  atomic-requirements writers racing from one parent: at most one lands, every 200 landed;
  idempotency-replay  (when claimed) a commit whose answer was lost or replaced by 502/504,
                      retried with its key: answered 200, applied once;
  answers-agree       writers committing at once under proxy faults (apply then 502/504,
                      lost answers, duplicates, delays) and retrying: a 200 is in main, a
                      409 or other 4xx is not (so no 4xx for a commit that landed), main is
                      linear (parents chain, sequence numbers rise).

The probe commits add snapshots whose manifest list is never read (a catalog does not read
it on commit); they go to a fresh table `conform_<n>.t` in a fresh namespace.
"""
from __future__ import annotations

import json
import random
import threading
from collections import Counter
from dataclasses import asdict, dataclass, field

from icefloe.conformance.testing import rest_faults as F
from icefloe.conformance.testing.rest_client import RestClient, new_key
from icefloe.conformance.testing.rest_server import AsgiServer

SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
PASS, FAIL, NOT_APPLICABLE = "pass", "FAIL", "n/a"
RACERS, RACE_ROUNDS = 4, 3
WRITERS, COMMITS_PER_WRITER, ATTEMPTS_MAX = 3, 6, 12
WORKLOAD_FAULTS = (F.Fault(F.FAIL_AFTER, 502), F.Fault(F.FAIL_AFTER, 504), F.Fault(F.LOST), F.Fault(F.DUPLICATE),
                   F.Fault(F.FAIL_BEFORE, 503), F.Fault(F.DELAY))
FAULT_P = 0.35


@dataclass
class Check:
    name: str
    status: str
    detail: str = ""


@dataclass
class RestVerdict:
    uri: str
    checks: list = field(default_factory=list)
    faults: dict = field(default_factory=dict)        # fault kind -> requests it took
    answers: dict = field(default_factory=dict)       # status -> count (None: no answer)
    idempotency_claimed: bool = False

    @property
    def passed(self) -> bool:
        return all(c.status != FAIL for c in self.checks)

    def render(self) -> str:
        lines = [f"REST catalog {self.uri}: {'PASS' if self.passed else 'FAIL'}"]
        lines += [f"  {c.status:<5} {c.name:<20} {c.detail}" for c in self.checks]
        lines.append("  faults injected: " + (", ".join(f"{k} {v}" for k, v in sorted(self.faults.items())) or "none"))
        lines.append("  answers: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.answers.items(), key=str)))
        return "\n".join(lines)

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "passed": self.passed}, indent=2, default=str)


class Probe:
    def __init__(self, url: str, namespace: str, token: str | None, seed: int):
        self.url, self.namespace, self.token = url, namespace, token
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.answers: Counter = Counter()

    def client(self, writer: int) -> RestClient:
        return RestClient(self.url, writer=writer, token=self.token)

    def snapshot_id(self) -> int:
        with self.lock:
            return self.rng.getrandbits(62) + 1

    def note(self, answer) -> None:
        with self.lock:
            self.answers[answer.status] += 1

    def state(self, client, table="t"):
        answer = client.load(self.namespace, table)
        if answer.status != 200:
            raise RuntimeError(f"cannot load {self.namespace}.{table}: {answer}")
        return answer.body["metadata"]

    def request(self, client, table="t", parent="current"):
        """(snapshot id, requirements, updates) adding a snapshot on main's head as read now."""
        m = self.state(client, table)
        head = m.get("refs", {}).get("main", {}).get("snapshot-id") if parent == "current" else parent
        sid, seq = self.snapshot_id(), m["last-sequence-number"] + 1
        snapshot = {"snapshot-id": sid, "sequence-number": seq, "timestamp-ms": m["last-updated-ms"] + 1,
                    "manifest-list": f"{m['location']}/metadata/snap-{sid}-1-conform.avro",
                    "summary": {"operation": "append"}, "schema-id": m.get("current-schema-id", 0)}
        if head is not None:
            snapshot["parent-snapshot-id"] = head
        return sid, [{"type": "assert-table-uuid", "uuid": m["table-uuid"]},
                     {"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": head}], \
            [{"action": "add-snapshot", "snapshot": snapshot},
             {"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": sid}]

    def commit(self, client, table, requirements, updates, key=None):
        answer = client.commit(self.namespace, table, requirements, updates, key=key)
        self.note(answer)
        return answer

    def chain(self, client, table="t") -> tuple[list, str | None]:
        """Main's ancestry (newest first) and what breaks linearity, if anything."""
        m = self.state(client, table)
        by_id = {s["snapshot-id"]: s for s in m.get("snapshots", [])}
        sid, out, problem = m.get("refs", {}).get("main", {}).get("snapshot-id"), [], None
        while sid is not None and sid in by_id and len(out) <= len(by_id):
            if sid in out:
                return out, f"main's ancestry loops at {sid}"
            s = by_id[sid]
            parent = by_id.get(s.get("parent-snapshot-id"))
            if parent is not None and parent["sequence-number"] >= s["sequence-number"]:
                problem = f"sequence numbers do not rise from {parent['snapshot-id']} to {sid}"
            out.append(sid)
            sid = s.get("parent-snapshot-id")
        return out, problem


# -- the checks ----------------------------------------------------------------------------------

def check_bad_input(p: Probe) -> Check:
    c = p.client(0)
    before = p.state(c)
    path = f"/v1/namespaces/{p.namespace}/tables/t"
    bodies = {"malformed JSON": b"{nope", "unknown update": b'{"requirements": [], "updates": [{"action": "x-nope"}]}',
              "unknown requirement": b'{"requirements": [{"type": "assert-nope"}], "updates": []}'}
    bad = []
    for what, raw in bodies.items():
        answer = c.call("POST", path, raw=raw)
        p.note(answer)
        if answer.status not in (400, 406, 422) or not (answer.body or {}).get("error", {}).get("type"):
            bad.append(f"{what}: {answer.status} {answer.body}")
    if p.state(c) != before:
        bad.append("the table changed")
    return Check("bad-input", FAIL if bad else PASS, "; ".join(bad) or "typed 4xx, table unchanged")


def check_requirements(p: Probe) -> Check:
    c = p.client(0)
    sid, reqs, ups = p.request(c)
    key = new_key()
    for _ in range(ATTEMPTS_MAX):          # a catalog may be unsure of a plain commit too: retry it
        first = p.commit(c, "t", reqs, ups, key=key)
        if first.status is not None and first.status < 500 or sid in p.chain(c)[0]:
            break
    if first.status != 200 and sid not in p.chain(c)[0]:
        return Check("requirements-409", FAIL, f"a plain commit was answered {first.status}: {first.body}")
    before = p.state(c)
    _, stale, ups2 = p.request(c, parent=before["snapshots"][0]["snapshot-id"] if len(before["snapshots"]) > 1 else None)
    answers = [p.commit(c, "t", stale, ups2).status]
    wrong_uuid = [{"type": "assert-table-uuid", "uuid": "00000000-0000-4000-8000-000000000000"}]
    answers.append(p.commit(c, "t", wrong_uuid, [{"action": "set-properties", "updates": {"x": "y"}}]).status)
    changed = p.state(c) != before
    ok = answers == [409, 409] and not changed
    return Check("requirements-409", PASS if ok else FAIL,
                 f"stale ref and wrong uuid answered {answers}" + ("; the table changed" if changed else ""))


def check_atomic(p: Probe) -> Check:
    problems = []
    for _ in range(RACE_ROUNDS):
        clients = [p.client(100 + i) for i in range(RACERS)]
        before, _ = p.chain(clients[0])
        requests = [p.request(c) for c in clients]
        barrier, answers = threading.Barrier(RACERS), [None] * RACERS

        def race(i):
            barrier.wait()
            answers[i] = p.commit(clients[i], "t", requests[i][1], requests[i][2])
        threads = [threading.Thread(target=race, args=(i,)) for i in range(RACERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        after, broken = p.chain(clients[0])
        new = after[:len(after) - len(before)]
        won = [requests[i][0] for i, a in enumerate(answers) if a.status == 200]
        if len(won) > 1 or any(s not in after for s in won) or len(new) > 1 or broken:
            problems.append(f"{len(won)} racers answered 200 from one parent, {len(new)} landed"
                            + (f"; {broken}" if broken else ""))
    return Check("atomic-requirements", FAIL if problems else PASS,
                 "; ".join(problems) or f"{RACE_ROUNDS} rounds of {RACERS} racers: at most one landed each")


def check_replay(p: Probe, faults: F.RestFaults, claimed: bool) -> Check:
    if not claimed:
        return Check("idempotency-replay", NOT_APPLICABLE, "the catalog does not claim idempotency-key-lifetime")
    problems = []
    for fault in (F.Fault(F.LOST), F.Fault(F.FAIL_AFTER, 504), F.Fault(F.FAIL_AFTER, 502)):
        c, key = p.client(200), new_key()
        sid, reqs, ups = p.request(c)
        rule = faults.add_rule(F.Rule(fault, F.Match(writer=200)))
        first = p.commit(c, "t", reqs, ups, key=key)
        faults.remove_rule(rule)
        retry = p.commit(c, "t", reqs, ups, key=key)
        chain, _ = p.chain(c)
        if retry.status != 200 or chain.count(sid) != 1:
            problems.append(f"after {fault.kind} {fault.status} (first answer {first.status}), the retry with "
                            f"the same key was answered {retry.status} {retry.type or ''}; "
                            f"{'applied' if sid in chain else 'not applied'}")
    return Check("idempotency-replay", FAIL if problems else PASS, "; ".join(problems) or
                 "lost answer, 504 and 502: each retry answered 200, applied once")


def check_answers_agree(p: Probe, faults: F.RestFaults, claimed: bool, seed: int) -> Check:
    """Writers at once under proxy faults; every definite answer is checked against main."""
    rng = random.Random(seed)
    for w in range(1, WRITERS + 1):
        for n in range(1, COMMITS_PER_WRITER * 2):
            if rng.random() < FAULT_P:
                faults.add_rule(F.Rule(rng.choice(WORKLOAD_FAULTS), F.Match(writer=w), nth=n))
    told: dict = {}          # snapshot id -> statuses its requests were answered
    acked, lock = [], threading.Lock()

    def writer(w):
        c = p.client(w)
        for _ in range(COMMITS_PER_WRITER):
            for _ in range(ATTEMPTS_MAX):
                sid, reqs, ups = p.request(c)
                key = new_key() if claimed else None
                status = None
                for _ in range(ATTEMPTS_MAX):
                    status = p.commit(c, "t", reqs, ups, key=key).status
                    with lock:
                        told.setdefault(sid, []).append(status)
                    if status is not None and status < 500:
                        break
                    if not claimed and sid in p.chain(c)[0]:
                        status = 200           # no key: the client resolves by reading
                        break
                if status == 200:
                    with lock:
                        acked.append(sid)
                    break
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(1, WRITERS + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for request_id in faults.parked():
        faults.deliver(request_id)
    chain, broken = p.chain(p.client(0))
    lost = [s for s in acked if s not in chain]
    contradicted = {s: st for s, st in told.items() if s in chain and any(x is not None and 400 <= x < 500 for x in st)}
    problems = ([f"acknowledged but not in main: {lost}"] if lost else []) + \
        [f"snapshot {s} landed but its requests were answered {st}" for s, st in sorted(contradicted.items())][:5] + \
        ([broken] if broken else [])
    return Check("answers-agree", FAIL if problems else PASS, "; ".join(problems) or
                 f"{len(acked)} commits by {WRITERS} writers under faults; every answer agrees with main")


# -- the run --------------------------------------------------------------------------------------

def run(uri: str, *, token: str | None = None, seed: int = 0, after_setup=None) -> RestVerdict:
    """Judge the REST catalog at `uri`; `after_setup()` is called once the probe table exists
    (a test arms its server's own faults there)."""
    faults = F.RestFaults(F.Upstream(uri))
    proxy = AsgiServer(faults).start()
    verdict = RestVerdict(uri)
    try:
        c = RestClient(proxy.url, token=token)
        config = c.config()
        if config.status != 200 or not isinstance(config.body, dict) or "defaults" not in config.body:
            verdict.checks.append(Check("config", FAIL, f"GET /v1/config answered {config.status} {config.body}"))
            return verdict
        verdict.idempotency_claimed = "idempotency-key-lifetime" in config.body
        verdict.checks.append(Check("config", PASS, "idempotency-key-lifetime "
                                    + (config.body["idempotency-key-lifetime"] if verdict.idempotency_claimed
                                       else "not claimed")))
        namespace = f"conform_{random.Random(seed).getrandbits(32):08x}_{new_key()[:8]}"
        if c.create_namespace(namespace).status != 200 or c.create_table(namespace, "t", SCHEMA).status != 200:
            verdict.checks.append(Check("setup", FAIL, f"cannot create {namespace}.t"))
            return verdict
        if after_setup is not None:
            after_setup()
        p = Probe(proxy.url, namespace, token, seed)
        for fn in (check_bad_input, check_requirements, check_atomic):
            verdict.checks.append(fn(p))
        verdict.checks.append(check_replay(p, faults, verdict.idempotency_claimed))
        verdict.checks.append(check_answers_agree(p, faults, verdict.idempotency_claimed, seed))
        verdict.faults = dict(Counter(x.fault for x in faults.history() if x.fault))
        verdict.answers = dict(p.answers)
        return verdict
    finally:
        faults.close()
        proxy.stop()


def main(argv) -> int:
    import argparse
    ap = argparse.ArgumentParser(prog="icefloe conform --rest-uri",
                                 description="judge a REST catalog's commit endpoint (docs/rest.md)")
    ap.add_argument("--rest-uri", required=True, help="the catalog's base URI, e.g. http://127.0.0.1:8181")
    ap.add_argument("--token", help="a bearer token for the catalog")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--report", help="write the verdict as JSON to this file")
    args = ap.parse_args(argv)
    verdict = run(args.rest_uri, token=args.token, seed=args.seed)
    print(verdict.render())
    if args.report:
        with open(args.report, "w") as f:
            f.write(verdict.to_json())
    return 0 if verdict.passed else 1
