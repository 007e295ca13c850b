"""Real threads contending on one table (spec/PROTOCOL.md 6 "Bounded retry", 9.4): a stress
campaign judged afterwards by checks on the final history and the store's counters."""
from __future__ import annotations

import threading

from icefloe.impl.outcomes import Committed, Conflict
from icefloe.impl.table.env import Env
from icefloe.impl.table.table import Table

from table_helpers import ids_of, rows

WRITERS, APPENDS = 4, 25
CONTENTION = {"commit.retry.num-retries": "200", "commit.retry.min-wait-ms": "1",
              "commit.retry.max-wait-ms": "8", "commit.retry.total-timeout-ms": "600000"}


def _writer(stack, w: int, outcomes: list, errors: list):
    try:
        env = Env.seeded(100 + w)  # real sleep and clocks: threads really contend
        table = Table(stack.catalog, "db.t", stack.io, env)
        for k in range(APPENDS):
            outcomes.append((w, k, table.append(rows([w * 1000 + k]))))
    except BaseException as e:  # noqa: BLE001 - reported by the test thread
        errors.append(e)


def test_four_writers_append_exactly_once_with_linear_history(stack):
    """4 threads x 25 appends: every append Committed exactly once, history linear and
    complete, one manifest per append (counted in the store), nothing left by a retry."""
    table = stack.create(properties=CONTENTION)
    before = dict(stack.io.counts)
    outcomes, errors = [], []
    threads = [threading.Thread(target=_writer, args=(stack, w, outcomes, errors)) for w in range(WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(outcomes) == WRITERS * APPENDS
    assert all(isinstance(o, Committed) for _, _, o in outcomes), [o for *_, o in outcomes if not isinstance(o, Committed)][:3]
    table.refresh()
    expected = sorted(w * 1000 + k for w in range(WRITERS) for k in range(APPENDS))
    assert ids_of(table.scan()) == expected
    history = table.history()
    assert len(history) == WRITERS * APPENDS and history[0].parent_snapshot_id is None
    assert all(b.parent_snapshot_id == a.snapshot_id for a, b in zip(history, history[1:]))
    assert sorted(s.sequence_number for s in history) == list(range(1, WRITERS * APPENDS + 1))
    assert {o.snapshot_id for *_, o in outcomes} == {s.snapshot_id for s in history}
    committed_locations = {o.metadata_location for *_, o in outcomes}
    assert len(committed_locations) == WRITERS * APPENDS
    # One data file and one manifest per append; every retry wrote exactly a list + metadata.
    attempts = sum(o.attempts for *_, o in outcomes)
    puts = stack.io.counts["put_if_absent"] - before.get("put_if_absent", 0)
    assert puts == 2 * WRITERS * APPENDS + 2 * attempts
    manifests = {m.manifest_path for m in table.tree.manifests(table.current_snapshot())}
    assert len(manifests) == WRITERS * APPENDS
    assert stack.io.counts["list"] == before.get("list", 0)


def test_definite_failure_leaves_no_orphan(mem):
    """A writer that runs out of attempts on definite rejections ends Conflict and deletes
    everything it wrote: listing the table shows only committed objects."""
    table = mem.create(properties={"commit.retry.num-retries": "1"})
    table.append(rows([1]))
    objects_before = {i.location for i in mem.io.list(table.location + "/")}
    loser = table.new_commit(_append_op(rows([2])))
    for _ in range(5):  # plan .. write metadata
        loser.step()
    rival = Table(mem.catalog, "db.t", mem.io, mem.env())
    assert isinstance(rival.append(rows([3])), Committed)
    assert loser.step() == "retry"
    loser.step()                   # reconcile: validated, attempt 2 (list, metadata)
    assert loser.attempt == 2
    loser.step(); loser.step()
    rival.append(rows([4]))
    loser.step()                   # swap rejected again
    outcome = loser.run()
    assert isinstance(outcome, Conflict) and "attempts" in outcome.reason
    after = {i.location for i in mem.io.list(table.location + "/")}
    rival.refresh()
    assert not (after - objects_before - _reachable_and_chain(rival))
    assert ids_of(rival.scan()) == [1, 3, 4]


def _append_op(data):
    from icefloe.impl.table.producer import FastAppend
    return FastAppend(data)


def _reachable_and_chain(table) -> set:
    out = set()
    for s in table.metadata.snapshots:
        out |= table.tree.reach(s)
    out.add(table.metadata_location)
    out |= {e.metadata_file for e in table.metadata.metadata_log}
    return out


def test_appends_deletes_and_compactions_from_threads_keep_every_row_once(mem):
    """3 appenders, a deleter and a compactor as threads: afterwards the rows are exactly the
    appended ids minus the ids of Committed deletes (no loss, no duplicate, no resurrection),
    every outcome is Committed or Conflict, and the history is linear."""
    import random as _random
    import time as _time
    from icefloe.impl.outcomes import Unknown
    mem.create(partition="cat", properties=CONTENTION)
    appended, deleted, unexpected = [], [], []
    lock = threading.Lock()

    def appender(w):
        table = Table(mem.catalog, "db.t", mem.io, Env.seeded(w))
        for k in range(20):
            outcome = table.append(rows([w * 1000 + k], ["a", "b", "c"][k % 3]))
            if not isinstance(outcome, Committed):
                unexpected.append(outcome)
            with lock:
                appended.append(w * 1000 + k)

    def deleter():
        table, rng = Table(mem.catalog, "db.t", mem.io, Env.seeded(77)), _random.Random(1)
        for _ in range(15):
            _time.sleep(0.005)  # let appends land; how many do is irrelevant to the checks
            live = ids_of(table.refresh().scan())
            if live:
                victim = rng.choice(live)
                outcome = table.delete(f"id = {victim}")
                if isinstance(outcome, Committed) and outcome.attempts:
                    with lock:
                        deleted.append(victim)
                elif isinstance(outcome, Unknown):
                    unexpected.append(outcome)

    def compactor():
        table = Table(mem.catalog, "db.t", mem.io, Env.seeded(88))
        for _ in range(6):
            _time.sleep(0.01)
            outcome = table.rewrite_files()
            if isinstance(outcome, Unknown):
                unexpected.append(outcome)

    def guarded(fn, *args):
        try:
            fn(*args)
        except BaseException as e:  # noqa: BLE001 - reported below
            unexpected.append(e)

    threads = [threading.Thread(target=guarded, args=(appender, w)) for w in range(3)]
    threads += [threading.Thread(target=guarded, args=(deleter,)), threading.Thread(target=guarded, args=(compactor,))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not unexpected, unexpected[:3]
    table = Table(mem.catalog, "db.t", mem.io)
    assert ids_of(table.scan()) == sorted(set(appended) - set(deleted))
    assert len(deleted) == len(set(deleted))
    history = table.history()
    assert all(b.parent_snapshot_id == a.snapshot_id for a, b in zip(history, history[1:]))
