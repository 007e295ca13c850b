"""The explorer's breadth-first search split over forked processes (model/explore.py,
`explore(spec, workers=N)`, `python -m icefloe.model.explore --workers N`).

Every state has one owner: the worker whose number is the hash of the state's partition
key modulo N (`spec.partition_key(state)`, default the state itself; the Iceberg spec
uses the pointer's history, which only a swap changes, so about 94% of the transitions
stay within one worker at --writers 3 --ops 2). A worker
keeps the fingerprints (and parent pointers) of the states it owns and the part of each
BFS level it owns. A level runs in two phases, in lockstep across workers:
  1. expand: each worker computes the successors of its frontier; a successor it owns
     is recorded at once (if new), one another worker owns is batched for that worker
     (once per level, however many times it is reached); either is checked there, with
     its parent's help (IcebergSpec.check_safety), the first time this worker meets it
     in the level;
  2. absorb: each worker reads the batches sent to it and records the new states.
Batches travel as pickle streams, a file per ordered pair of workers in a private
temporary directory, so no pipe can fill and block two workers that send to each other;
each stream's pickler remembers what it sent for MEMO_LEVELS levels, so what a state
shares with states sent before (metadata, snapshots, store) is sent as a reference. The processes are forked, so they share
the parent's hash secret: a fingerprint means the same state in every worker, and the
parent replays a counterexample from the owners' parent pointers.

The search is the same search as the single-process one: the same states, transitions,
final states, depth, coverage and verdict (tests/model/test_explorer.py compares them);
only which process does what differs.
"""
from __future__ import annotations

import gc
import multiprocessing as mp
import os
import pickle
import shutil
import tempfile
import time
import traceback
from pathlib import Path

from icefloe.model import search as X

# Levels a stream's pickler memo lives: it keeps what it sent alive, so a longer life
# saves more re-sending and holds more memory.
MEMO_LEVELS = 4
WORKER_REPLY_S = 24 * 3600     # a level of a search that fits in memory ends well within this


class _Worker:
    """One worker's share of the search (runs in a forked child)."""

    def __init__(self, spec, index: int, workers: int, tmp: Path):
        self.spec, self.index, self.workers, self.tmp = spec, index, workers, tmp
        self.check_safety = X.safety_checker(spec)
        self.partition_key = getattr(spec, "partition_key", None) or (lambda state: state)
        self.parents: dict = {}
        self.labels: dict = {}          # one object per distinct label, shared by the parent pointers
        self.frontier: list = []
        self.level_no = 0
        # One stream per pair of workers, a file each way (no pipe can fill and block).
        self.picklers, self.unpicklers, self.out_files, self.in_files = {}, {}, {}, {}

    def owner(self, state) -> int:
        return hash(self.partition_key(state)) % self.workers

    def start(self):
        level = X._Level()
        for s0 in self.spec.initial():
            k = hash(s0)
            if self.owner(s0) != self.index or k in self.parents:
                continue
            self.parents[k] = (None, None)
            self.frontier.append((k, s0))
            why = self.check_safety(s0)
            if why and level.violation is None:
                level.violation = (why, k)
        return self._summary(level, len(self.frontier))

    def expand(self):
        """Phase 1: expand the owned frontier; write the batches for the other workers."""
        parents, partition_key, workers, me = self.parents, self.partition_key, self.workers, self.index
        labels = self.labels
        nxt: list = []
        outbox: list = [dict() for _ in range(workers)]
        where: list = [me]                # the owner of the successor is_new just saw
        # The last partition key seen and its owner: successors of one state mostly share
        # their partition key object (the pointer's history, which few actions change),
        # and the same object has the same owner.
        last: list = [None, me]

        def is_new(k, state) -> bool:
            p = partition_key(state)
            if p is not last[0]:
                last[0], last[1] = p, hash(p) % workers
            o = where[0] = last[1]
            return k not in parents if o == me else k not in outbox[o]

        def on_new(k, parent_key, label, state) -> bool:
            if where[0] == me:
                parents[k] = (parent_key, labels.setdefault(label, label))
                nxt.append((k, state))
                return True
            outbox[where[0]][k] = (parent_key, label, state)
            return True                   # checked here, where its parent is at hand

        level = X._Level()
        X._expand(self.spec, self.frontier, hash, is_new, on_new, self.check_safety, self.spec.terminal,
                  getattr(self.spec, "EVENT_ACTIONS", None), level)
        self.frontier = nxt
        for j, box in enumerate(outbox):
            if j != self.index:
                self._pickler(j).dump(list(box.items()))
                self.out_files[j].flush()
        return self._summary(level, None)

    def absorb(self):
        """Phase 2: take the states the other workers found for this one."""
        level = X._Level()
        for j in range(self.workers):
            if j == self.index:
                continue
            batch = self._unpickler(j).load()
            for k, (parent_key, label, state) in batch:
                if k in self.parents:
                    continue
                self.parents[k] = (parent_key, self.labels.setdefault(label, label))
                self.frontier.append((k, state))
        self.level_no += 1
        return self._summary(level, len(self.frontier))

    def _pickler(self, j: int):
        """The pickler of the stream to worker j. It lives for MEMO_LEVELS levels, and its
        memo remembers what it has sent: a state that shares its metadata, snapshots and
        store with one sent before is sent as references to them (and arrives sharing them
        with it). Both ends start a new pickler, and unpickler, at the same levels."""
        if j not in self.out_files:
            self.out_files[j] = open(self.tmp / f"{self.index}-{j}.pkl", "wb")
        if j not in self.picklers or self.level_no % MEMO_LEVELS == 0:
            self.picklers[j] = pickle.Pickler(self.out_files[j], protocol=pickle.HIGHEST_PROTOCOL)
        return self.picklers[j]

    def _unpickler(self, j: int):
        """The unpickler of the stream from worker j (see _pickler)."""
        if j not in self.in_files:
            self.in_files[j] = open(self.tmp / f"{j}-{self.index}.pkl", "rb")
        if j not in self.unpicklers or self.level_no % MEMO_LEVELS == 0:
            self.unpicklers[j] = pickle.Unpickler(self.in_files[j])
        return self.unpicklers[j]

    def close(self):
        for f in (*self.out_files.values(), *self.in_files.values()):
            f.close()

    def parent_of(self, key):
        return self.parents.get(key)

    def _summary(self, level, frontier_size):
        return {"transitions": level.transitions, "final_states": level.final_states,
                "coverage": level.coverage, "events": level.events, "violation": level.violation,
                "states": len(self.parents), "frontier": frontier_size}


def _serve(spec, index, workers, tmp, conn):
    # The search builds millions of immutable, acyclic tuples: the cyclic garbage collector
    # would only re-scan them (it halves the search's speed) and can free nothing. This
    # process is the search's own, so turning it off touches nobody else.
    gc.disable()
    worker = _Worker(spec, index, workers, tmp)
    while True:
        command, arg = conn.recv()
        if command == "stop":
            worker.close()
            conn.close()
            return
        try:
            reply = getattr(worker, command)(*arg)
        except BaseException:  # noqa: BLE001 - the parent reports it and stops the search
            reply = {"error": traceback.format_exc()}
        conn.send(reply)


class _Pool:
    def __init__(self, spec, workers: int):
        ctx = mp.get_context("fork")     # the same hash secret in every process
        self.tmp = Path(tempfile.mkdtemp(prefix="icefloe-explore-"))
        self.conns, self.procs = [], []
        for i in range(workers):
            parent_end, child_end = ctx.Pipe()
            p = ctx.Process(target=_serve, args=(spec, i, workers, self.tmp, child_end), daemon=True)
            p.start()
            child_end.close()
            self.conns.append(parent_end)
            self.procs.append(p)

    def all(self, command, *arg) -> list:
        for c in self.conns:
            c.send((command, arg))
        return [self._reply(c) for c in self.conns]

    def one(self, index, command, *arg):
        self.conns[index].send((command, arg))
        return self._reply(self.conns[index])

    def _reply(self, conn):
        if not conn.poll(WORKER_REPLY_S):
            raise RuntimeError("an explorer worker did not answer")
        reply = conn.recv()
        if isinstance(reply, dict) and "error" in reply:
            raise RuntimeError(f"an explorer worker failed:\n{reply['error']}")
        return reply

    def close(self):
        for c in self.conns:
            try:
                c.send(("stop", ()))
            except (BrokenPipeError, OSError):
                pass
        for p in self.procs:
            p.join(10)
            if p.is_alive():
                p.kill()
        shutil.rmtree(self.tmp, ignore_errors=True)


def explore_parallel(spec, workers: int, max_states: int | None = None, progress=None) -> "X.Result":
    if workers < 2:
        raise ValueError("explore_parallel needs at least 2 workers")
    t0 = time.monotonic()
    res = X.Result(spec.name, "holds", workers=workers)
    pool = _Pool(spec, workers)
    try:
        replies = pool.all("start")
        violation = next((r["violation"] for r in replies if r["violation"]), None)
        frontier = sum(r["frontier"] for r in replies)
        depth = 0
        while frontier and violation is None:
            expanded = pool.all("expand")
            for r in expanded:
                res.transitions += r["transitions"]
                res.final_states += r["final_states"]
                res.coverage.update(r["coverage"])
                res.events.update(r["events"])
            absorbed = pool.all("absorb")
            violation = next((r["violation"] for r in expanded + absorbed if r["violation"]), None)
            states = sum(r["states"] for r in absorbed)
            frontier = sum(r["frontier"] for r in absorbed)
            if violation is None and max_states is not None and states > max_states:
                res.verdict = "unknown"
                res.message = f"stopped after {max_states} states (--max-states)"
                break
            if frontier and violation is None:
                depth += 1
            if progress:
                progress(depth, states, frontier, time.monotonic() - t0)
        res.states = sum(r["states"] for r in pool.all("_summary", X._Level(), None))
        res.depth, res.seconds = depth, time.monotonic() - t0
        res.collision_bound = X.collision_bound(res.states)
        if violation is not None:
            (res.property, res.message), key = violation
            res.verdict = "violated"
            res.trace = X.replay(spec, lambda k: _parent_of(pool, workers, k), key)
            res.depth = len(res.trace) - 1
    finally:
        pool.close()
    return res


def _parent_of(pool, workers, key):
    """Which worker owns a fingerprint is not known from it alone: ask each (a replay asks
    once per step of the counterexample)."""
    for i in range(workers):
        found = pool.one(i, "parent_of", key)
        if found is not None:
            return found
    raise KeyError(f"no worker has state {key}")


def default_workers() -> int:
    """One worker per core this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)

