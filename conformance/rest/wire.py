"""The REST server judged at the wire on every default run (issue 30 item 4; REST spec
`updateTable` / `commitTransaction` responses, TableRequirement, TableUpdate;
spec/PROTOCOL.md 3 "The catalog's swap", 9 "Commit outcomes").

A strict client (conformance.testing.rest_client: one HTTP exchange per call, no retry, the
answer as it came) talks to the `icefloe serve` the run starts and checks, for each class
of the `rest-wire` family, the exact status code and error type the REST OpenAPI gives,
and that the table is as the answer says (a refused commit changed nothing; a 200 landed):

  (requirement, TYPE, holds|fails)  every TableRequirement type, held (200, applied) and
      failed after a rival's change (409 CommitFailedException, nothing applied);
      assert-ref-snapshot-id also with snapshot-id null ("the ref must not exist yet") for
      a branch and a tag, and two creators of one ref racing from one state;
  (update, WHAT, STATUS)            refused updates: 400 BadRequestException for an update
      that cannot apply, 409 CommitFailedException for one the table's change since the
      client's read refuses (a stale sequence number, an expiry of a ref's head), 404
      NoSuchTableException for a table that is not there;
  (drop-recreate, WHAT, 409)        the table dropped and re-created under its name between
      a writer's load and its commit: refused by the uuid, the new table untouched;
  (transaction, ...)                a multi-table commit with one failed requirement: 409,
      neither table changed.

icefloe's own REST client is no judge of this: it retries every 4xx but 409, so a wrong
status looks right through it. Each check builds its tables afresh in its own namespace.
`judge(url)` returns (covered classes, problems); conformance.coverage.directed makes it
the `rest-wire` family of the run's coverage.
"""
from __future__ import annotations

import itertools
import threading
import uuid

from icefloe.conformance.testing.rest_client import Answer, RestClient

FAMILY_NAME = "rest-wire"
FAMILY_DESCRIPTION = ("the REST server at the wire: every requirement type held and failed, refused updates' "
                      "status codes, a table dropped and re-created between load and commit")
SCHEMA = {"type": "struct", "schema-id": 0, "fields": [{"id": 1, "name": "id", "type": "long", "required": False}]}
V2 = {"format-version": "2"}
CONFLICT, BAD, MISSING = (409, "CommitFailedException"), (400, "BadRequestException"), (404, "NoSuchTableException")
ID_REQUIREMENTS = ("assert-last-assigned-field-id", "assert-current-schema-id", "assert-last-assigned-partition-id",
                   "assert-default-spec-id", "assert-default-sort-order-id")
REQUIREMENT_TYPES = ("assert-create", "assert-table-uuid", "assert-ref-snapshot-id", *ID_REQUIREMENTS)
RACERS, RACE_ROUNDS = 3, 3


class WireProblem(Exception):
    """What the server answered (or did to the table) that the REST spec does not allow;
    `applied`: a commit the spec refuses changed the table."""

    def __init__(self, message: str, applied: bool = False):
        super().__init__(message)
        self.applied = applied


class Problem(str):
    """A check's problem as judge() reports it: the sentence, and whether a refused commit
    was applied (the run names P5 then, else A0)."""
    applied: bool = False


class Wire:
    """One strict client's session against the server at `url`."""

    def __init__(self, url: str, service=None):
        self.c = RestClient(url, writer=0)
        self.url, self.service = url, service
        self.ids = itertools.count(1)
        self.ns = f"wire_{uuid.uuid4().hex[:10]}"
        self._expect(self.c.create_namespace(self.ns), 200, None, "create the namespace")

    # -- helpers ---------------------------------------------------------------------------------

    def table(self, name: str | None = None) -> str:
        name = name or f"t{next(self.ids)}"
        body = {"name": name, "schema": SCHEMA, "properties": dict(V2)}
        self._expect(self.c.call("POST", f"/v1/namespaces/{self.ns}/tables", body), 200, None, f"create {name}")
        return name

    def meta(self, name: str) -> dict:
        return self._expect(self.c.load(self.ns, name), 200, None, f"load {name}").body["metadata"]

    def commit(self, name: str, requirements: list, updates: list, client: RestClient | None = None) -> Answer:
        return (client or self.c).commit(self.ns, name, requirements, updates)

    @staticmethod
    def _expect(answer: Answer, status: int, error_type: str | None, what: str) -> Answer:
        if answer.status != status or (error_type is not None and answer.type != error_type):
            want = f"{status} {error_type}" if error_type else str(status)
            got = f"{answer.status} {answer.type or ''}".strip()
            raise WireProblem(f"{what}: answered {got}, the REST spec says {want}"
                              + (f" ({_message(answer)})" if _message(answer) else ""))
        return answer

    def refused(self, name: str, requirements: list, updates: list, expected: tuple, what: str) -> None:
        """The commit is answered `expected` (status, type) and the table is unchanged."""
        before = self.meta(name)
        answer = self.commit(name, requirements, updates)
        changed = _comparable(self.meta(name)) != _comparable(before)
        try:
            self._expect(answer, *expected, what)
        except WireProblem as e:
            raise WireProblem(f"{e}{'; and the table changed' if changed else ''}", changed) from None
        if changed:
            raise WireProblem(f"{what}: answered {expected[0]}, yet the table changed", True)

    def landed(self, name: str, requirements: list, updates: list, what: str, check) -> dict:
        """The commit is answered 200 and the table shows `check(metadata)`."""
        self._expect(self.commit(name, requirements, updates), 200, None, what)
        m = self.meta(name)
        if not check(m):
            raise WireProblem(f"{what}: answered 200, yet the table does not show the change")
        return m

    def snapshot(self, m: dict, parent: int | None, seq_delta: int = 1) -> dict:
        sid = uuid.uuid4().int >> 66
        out = {"snapshot-id": sid, "sequence-number": m["last-sequence-number"] + seq_delta,
               "timestamp-ms": m["last-updated-ms"] + 1, "summary": {"operation": "append"},
               "manifest-list": f"{m['location']}/metadata/snap-{sid}-1-wire.avro",
               "schema-id": m.get("current-schema-id", 0)}
        if parent is not None:
            out["parent-snapshot-id"] = parent
        return out

    def append(self, name: str, ref: str = "main", client: RestClient | None = None) -> tuple[int, Answer]:
        m = self.meta(name)
        head = _head(m, ref)
        s = self.snapshot(m, head)
        answer = self.commit(name, [_uuid(m), _ref(ref, head)], [_add(s), _set_ref(ref, s["snapshot-id"])], client)
        return s["snapshot-id"], answer


def _message(a: Answer) -> str:
    return str(((a.body or {}).get("error") or {}).get("message", ""))[:200]


def _comparable(m: dict) -> dict:
    return {k: v for k, v in m.items() if k not in ("last-updated-ms",)}


def _head(m: dict, ref: str = "main"):
    return (m.get("refs", {}).get(ref) or {}).get("snapshot-id")


def _uuid(m: dict) -> dict:
    return {"type": "assert-table-uuid", "uuid": m["table-uuid"]}


def _ref(ref: str, sid) -> dict:
    return {"type": "assert-ref-snapshot-id", "ref": ref, "snapshot-id": sid}


def _add(snapshot: dict) -> dict:
    return {"action": "add-snapshot", "snapshot": snapshot}


def _set_ref(ref: str, sid: int, kind: str = "branch") -> dict:
    return {"action": "set-snapshot-ref", "ref-name": ref, "type": kind, "snapshot-id": sid}


def _props(**kv) -> dict:
    return {"action": "set-properties", "updates": {k: str(v) for k, v in kv.items()}}


def _has_prop(key: str, value: str):
    return lambda m: m.get("properties", {}).get(key) == value


# -- requirements ---------------------------------------------------------------------------------

def check_assert_create(w: Wire, out: set) -> None:
    name = f"c{next(w.ids)}"
    table_uuid = str(uuid.uuid4())
    create = [{"action": "assign-uuid", "uuid": table_uuid},
              {"action": "upgrade-format-version", "format-version": 2},
              {"action": "add-schema", "schema": SCHEMA, "last-column-id": 1},
              {"action": "set-current-schema", "schema-id": -1},
              {"action": "add-spec", "spec": {"spec-id": 0, "fields": []}},
              {"action": "set-default-spec", "spec-id": -1},
              {"action": "add-sort-order", "sort-order": {"order-id": 0, "fields": []}},
              {"action": "set-default-sort-order", "sort-order-id": -1}]
    w._expect(w.commit(name, [{"type": "assert-create"}], create), 200, None, "assert-create on an absent table")
    if w.meta(name)["table-uuid"] != table_uuid:
        raise WireProblem("assert-create on an absent table: answered 200, yet the table is not the one created")
    out.add(("requirement", "assert-create", "holds"))
    w.refused(name, [{"type": "assert-create"}], [_props(x="y")], CONFLICT, "assert-create on an existing table")
    out.add(("requirement", "assert-create", "fails"))


def check_assert_table_uuid(w: Wire, out: set) -> None:
    name = w.table()
    m = w.meta(name)
    w.landed(name, [_uuid(m)], [_props(k="1")], "assert-table-uuid that holds", _has_prop("k", "1"))
    out.add(("requirement", "assert-table-uuid", "holds"))
    w.refused(name, [{"type": "assert-table-uuid", "uuid": str(uuid.uuid4())}], [_props(k="2")], CONFLICT,
              "assert-table-uuid naming another table")
    out.add(("requirement", "assert-table-uuid", "fails"))


def check_assert_ref(w: Wire, out: set) -> None:
    name = w.table()
    first, answer = w.append(name)
    w._expect(answer, 200, None, "an append whose assert-ref-snapshot-id main (absent) holds")
    m = w.meta(name)
    sid, answer = w.append(name)
    w._expect(answer, 200, None, "an append whose assert-ref-snapshot-id main holds")
    if _head(w.meta(name)) != sid:
        raise WireProblem("an append answered 200 did not move main")
    out.add(("requirement", "assert-ref-snapshot-id", "holds"))
    stale = w.snapshot(w.meta(name), first)
    w.refused(name, [_uuid(m), _ref("main", first)], [_add(stale), _set_ref("main", stale["snapshot-id"])],
              CONFLICT, "assert-ref-snapshot-id main at a head it has left")
    w.refused(name, [_ref("gone", first)], [_props(k="v")], CONFLICT,
              "assert-ref-snapshot-id of a ref that does not exist (expected a snapshot)")
    out.add(("requirement", "assert-ref-snapshot-id", "fails"))


def check_ref_must_not_exist(w: Wire, out: set) -> None:
    """snapshot-id null: the ref must not exist yet (a branch or tag being created)."""
    for kind in ("branch", "tag"):
        name = w.table()
        sid, answer = w.append(name)
        w._expect(answer, 200, None, "an append")
        m = w.meta(name)
        w.landed(name, [_uuid(m), _ref("r", None)], [_set_ref("r", sid, kind)],
                 f"create {kind} r with assert-ref-snapshot-id r null while r is absent",
                 lambda x: (x.get("refs", {}).get("r") or {}).get("type") == kind)
        out.add(("requirement", f"assert-ref-snapshot-id null ({kind})", "holds"))
        other, answer = w.append(name)
        w._expect(answer, 200, None, "an append")
        w.refused(name, [_uuid(m), _ref("r", None)], [_set_ref("r", other, kind)], CONFLICT,
                  f"create {kind} r with assert-ref-snapshot-id r null after r was created")
        out.add(("requirement", f"assert-ref-snapshot-id null ({kind})", "fails"))


def check_ref_creators_race(w: Wire, out: set) -> None:
    """Creators of one branch, each built on the state without it, at once (RACERS of them,
    RACE_ROUNDS times, so the server's own retry after a lost swap is met too): exactly one
    200, the others 409, and the branch where the winner put it."""
    name = w.table()
    heads = []
    for _ in range(RACERS):
        sid, answer = w.append(name)
        w._expect(answer, 200, None, "an append")
        heads.append(sid)
    m = w.meta(name)
    clients = [RestClient(w.url, writer=10 + i) for i in range(RACERS)]
    for n in range(RACE_ROUNDS):
        ref = f"x{n}"
        barrier, answers = threading.Barrier(RACERS), [None] * RACERS

        def create(i, ref=ref, barrier=barrier, answers=answers):
            barrier.wait()
            answers[i] = w.commit(name, [_uuid(m), _ref(ref, None)], [_set_ref(ref, heads[i])], clients[i])
        threads = [threading.Thread(target=create, args=(i,), daemon=True) for i in range(RACERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        statuses = sorted(a.status for a in answers if a is not None)
        won = [i for i, a in enumerate(answers) if a is not None and a.status == 200]
        if statuses != [200] + [409] * (RACERS - 1) or any(a.type != CONFLICT[1] for a in answers if a.status == 409):
            raise WireProblem(f"{RACERS} creators of branch {ref} from one state (assert-ref-snapshot-id {ref} null) "
                              f"were answered {statuses}: exactly one 200 and 409 CommitFailedException for the others",
                              statuses.count(200) > 1)
        if _head(w.meta(name), ref) != heads[won[0]]:
            raise WireProblem(f"branch {ref} is not where the racer answered 200 put it")
    out.add(("race", "two creators of one ref", "one 200, the rest 409"))


class _RivalBeforeSwap:
    """The store of the suite's own server, wrapped for one check (test infrastructure over
    the server the run started, as the commit fault layer is): before the next swap of
    `table`, `rival()` commits through the server, so that swap loses its race and the
    server's own retry (commit.py, SERVER_ATTEMPTS_MAX) must check the requirements again."""

    def __init__(self, inner, table: str, rival):
        self.inner, self.table, self.rival, self.armed = inner, table, rival, True

    def commit(self, changes, key):
        if self.armed and any(c.identifier.name == self.table for c in changes):
            self.armed = False
            self.rival()
        return self.inner.commit(changes, key)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def check_server_retry(w: Wire, out: set) -> None:
    """A creator of branch y passes its requirement (y absent) on the server's first read; a
    rival creates y before its swap; the swap loses and the server retries on its own: the
    retry must find y and answer 409, y left where the rival put it. Needs the server in
    this process (`Wire.service`); against another server it is not run."""
    if w.service is None:
        return
    name = w.table()
    first, answer = w.append(name)
    w._expect(answer, 200, None, "an append")
    second, answer = w.append(name)
    w._expect(answer, 200, None, "an append")
    m = w.meta(name)
    rival = RestClient(w.url, writer=20)
    box = {}

    def rival_creates():
        box["rival"] = w.commit(name, [_uuid(m), _ref("y", None)], [_set_ref("y", first)], rival)
    store = w.service.store
    w.service.store = _RivalBeforeSwap(store, name, rival_creates)
    try:
        answer = w.commit(name, [_uuid(m), _ref("y", None)], [_set_ref("y", second)])
    finally:
        w.service.store = store
    if box.get("rival") is None or box["rival"].status != 200:
        raise WireProblem(f"the rival's create of branch y (alone) was answered {box.get('rival')}")
    applied = _head(w.meta(name), "y") != first
    try:
        w._expect(answer, *CONFLICT, "a create of branch y whose swap lost to a rival's create of y (the server's "
                  "retry re-reads the table)")
    except WireProblem as e:
        raise WireProblem(f"{e}{'; and y moved off the rival' if applied else ''}", applied) from None
    if applied:
        raise WireProblem("a create of branch y answered 409 moved the rival's y", True)
    out.add(("race", "the server's own retry after a lost swap", 409))


_RIVAL = {   # requirement -> the field of the table metadata it asserts
    "assert-last-assigned-field-id": "last-column-id",
    "assert-current-schema-id": "current-schema-id",
    "assert-last-assigned-partition-id": "last-partition-id",
    "assert-default-spec-id": "default-spec-id",
    "assert-default-sort-order-id": "default-sort-order-id",
}
_JSON_FIELD = {"assert-last-assigned-field-id": "last-assigned-field-id",
               "assert-current-schema-id": "current-schema-id",
               "assert-last-assigned-partition-id": "last-assigned-partition-id",
               "assert-default-spec-id": "default-spec-id",
               "assert-default-sort-order-id": "default-sort-order-id"}


def _evolve(m: dict, kind: str, n: int) -> list:
    """A change that moves what requirement `kind` asserts (n makes it new each time)."""
    if kind in ("assert-last-assigned-field-id", "assert-current-schema-id"):
        fid = m["last-column-id"] + 1
        fields = m["schemas"][-1]["fields"] + [{"id": fid, "name": f"c{fid}", "type": "long", "required": False}]
        return [{"action": "add-schema", "schema": {"type": "struct", "schema-id": 0, "fields": fields},
                 "last-column-id": fid}, {"action": "set-current-schema", "schema-id": -1}]
    if kind in ("assert-last-assigned-partition-id", "assert-default-spec-id"):
        fid = m["last-partition-id"] + 1
        return [{"action": "add-spec", "spec": {"spec-id": n, "fields": [
            {"source-id": 1, "field-id": fid, "name": f"b{n}", "transform": f"bucket[{n + 1}]"}]}},
                {"action": "set-default-spec", "spec-id": -1}]
    return [{"action": "add-sort-order", "sort-order": {"order-id": n, "fields": [
        {"source-id": 1, "transform": f"bucket[{n + 1}]", "direction": "asc", "null-order": "nulls-first"}]}},
            {"action": "set-default-sort-order", "sort-order-id": -1}]


def check_id_requirements(w: Wire, out: set) -> None:
    for kind in ID_REQUIREMENTS:
        name = w.table()
        m = w.meta(name)
        value = m[_RIVAL[kind]]

        def holds(x, before=value):
            return x[_RIVAL[kind]] != before
        w.landed(name, [{"type": kind, _JSON_FIELD[kind]: value}], _evolve(m, kind, 1),
                 f"{kind} that holds, with a change of what it asserts", holds)
        out.add(("requirement", kind, "holds"))
        m2 = w.meta(name)       # the rival's change landed: the writer's value is now stale
        w.refused(name, [{"type": kind, _JSON_FIELD[kind]: value}], _evolve(m2, kind, 2), CONFLICT,
                  f"{kind} asserting {value} after a change moved it to {m2[_RIVAL[kind]]}")
        out.add(("requirement", kind, "fails"))


# -- refused updates ------------------------------------------------------------------------------

def check_refused_updates(w: Wire, out: set) -> None:
    name = w.table()
    sid, answer = w.append(name)
    w._expect(answer, 200, None, "an append")
    m = w.meta(name)
    renumbered = w.snapshot(m, sid, seq_delta=0)
    cases = [
        ("unknown action", [_uuid(m)], [{"action": "x-wire-nope"}], BAD),
        ("set-current-schema of no schema", [_uuid(m)], [{"action": "set-current-schema", "schema-id": 77}], BAD),
        ("set-snapshot-ref to no snapshot", [_uuid(m)], [_set_ref("main", sid + 1)], BAD),
        ("add-snapshot of an id the table has", [_uuid(m)], [_add(w.snapshot(m, sid) | {"snapshot-id": sid})], BAD),
        ("upgrade-format-version down", [_uuid(m)], [{"action": "upgrade-format-version", "format-version": 1}], BAD),
        ("set-properties format-version", [_uuid(m)], [_props(**{"format-version": "3"})], BAD),
        ("malformed requirement", [{"type": "assert-ref-snapshot-id", "snapshot-id": sid}], [_props(k="v")], BAD),
        ("unknown requirement", [{"type": "assert-wire-nope"}], [_props(k="v")], BAD),
        ("add-snapshot numbered for an older version", [_uuid(m), _ref("main", sid)],
         [_add(renumbered), _set_ref("main", renumbered["snapshot-id"])], CONFLICT),
        ("remove-snapshots of a ref's head", [_uuid(m)], [{"action": "remove-snapshots", "snapshot-ids": [sid]}],
         CONFLICT),
    ]
    for what, reqs, ups, expected in cases:
        w.refused(name, reqs, ups, expected, f"refused update: {what}")
        out.add(("update", what, expected[0]))
    missing = w.commit("no_such_table", [], [_props(k="v")])
    w._expect(missing, *MISSING, "a commit to a table that does not exist")
    out.add(("update", "a table that does not exist", 404))


# -- drop and re-create, transactions -------------------------------------------------------------

def check_drop_recreate(w: Wire, out: set) -> None:
    """A writer loads the table, it is dropped and created again under its name, then the
    writer commits as it planned: its uuid no longer names the table (409), and the new
    table is untouched, whether the old one was empty or had a head."""
    for had_head in (False, True):
        name = w.table()
        if had_head:
            w._expect(w.append(name)[1], 200, None, "an append")
        m = w.meta(name)
        head = _head(m)
        s = w.snapshot(m, head)
        w._expect(w.c.call("DELETE", f"/v1/namespaces/{w.ns}/tables/{name}"), 204, None, f"drop {name}")
        w.table(name)
        w.refused(name, [_uuid(m), _ref("main", head)], [_add(s), _set_ref("main", s["snapshot-id"])], CONFLICT,
                  f"a commit planned on {name} ({'a head' if had_head else 'empty'}) after it was dropped and "
                  "re-created under its name")
        out.add(("drop-recreate", "old table had a head" if had_head else "old table was empty", 409))


def check_transaction(w: Wire, out: set) -> None:
    a, b = w.table(), w.table()
    ma, mb = w.meta(a), w.meta(b)
    changes = [{"identifier": {"namespace": [w.ns], "name": a}, "requirements": [_uuid(ma)],
                "updates": [_props(k="a")]},
               {"identifier": {"namespace": [w.ns], "name": b},
                "requirements": [{"type": "assert-table-uuid", "uuid": str(uuid.uuid4())}],
                "updates": [_props(k="b")]}]
    answer = w.c.transaction(changes)
    changed = _comparable(w.meta(a)) != _comparable(ma) or _comparable(w.meta(b)) != _comparable(mb)
    try:
        w._expect(answer, *CONFLICT, "a transaction with a failed requirement in one table")
    except WireProblem as e:
        raise WireProblem(f"{e}{'; and a table changed' if changed else ''}", changed) from None
    if changed:
        raise WireProblem("a transaction answered 409 changed a table", True)
    out.add(("transaction", "one table's requirement fails", 409))


CHECKS = (check_assert_create, check_assert_table_uuid, check_assert_ref, check_ref_must_not_exist,
          check_ref_creators_race, check_server_retry, check_id_requirements, check_refused_updates, check_drop_recreate,
          check_transaction)


def classes() -> frozenset:
    """Every class of the family (what a correct server's run covers)."""
    out = {("requirement", t, o) for t in REQUIREMENT_TYPES for o in ("holds", "fails")}
    out |= {("requirement", f"assert-ref-snapshot-id null ({k})", o) for k in ("branch", "tag")
            for o in ("holds", "fails")}
    out.add(("race", "two creators of one ref", "one 200, the rest 409"))
    out.add(("race", "the server's own retry after a lost swap", 409))
    out |= {("update", what, status) for what, status in (
        ("unknown action", 400), ("set-current-schema of no schema", 400), ("set-snapshot-ref to no snapshot", 400),
        ("add-snapshot of an id the table has", 400), ("upgrade-format-version down", 400),
        ("set-properties format-version", 400), ("malformed requirement", 400), ("unknown requirement", 400),
        ("add-snapshot numbered for an older version", 409), ("remove-snapshots of a ref's head", 409),
        ("a table that does not exist", 404))}
    out |= {("drop-recreate", w, 409) for w in ("old table was empty", "old table had a head")}
    out.add(("transaction", "one table's requirement fails", 409))
    return frozenset(out)


def judge(url: str, service=None) -> tuple[set, list]:
    """Every check against the server at `url`: (classes covered, problems found). A check
    stops at its first problem; the others still run. `service`: the server's CatalogService
    when it runs in this process (the server's own retry is then checked too)."""
    w = Wire(url, service)
    covered: set = set()
    problems: list = []
    for check in CHECKS:
        try:
            check(w, covered)
        except WireProblem as e:
            problem = Problem(f"{check.__name__[len('check_'):]}: {e}")
            problem.applied = e.applied
            problems.append(problem)
    return covered, problems
