"""LocalStore specifics: location spellings, hidden internal files, cross-process atomicity."""
from __future__ import annotations

import multiprocessing
import os

import pytest

from icefloe.impl.io.base import AlreadyExists, PreconditionFailed
from icefloe.impl.io.local import LocalStore
from icefloe.impl.io.locations import (
    InvalidLocation,
    canonical_location,
    local_path,
    scheme_of,
)

PROCESS_RACERS = 4


def test_location_spellings_parse_to_one_path():
    """The three spellings of a local file (and file://localhost) give the same path."""
    for loc in ["file:/w/t/m.json", "file:///w/t/m.json", "file://localhost/w/t/m.json", "/w/t/m.json",
                "FILE:///w/t/m.json"]:
        assert scheme_of(loc) == "file"
        assert local_path(loc) == "/w/t/m.json"
        assert canonical_location(loc) == "file:///w/t/m.json"
    assert canonical_location("s3://b/k") == "s3://b/k"
    assert scheme_of("S3://b/k") == "s3"


@pytest.mark.parametrize("bad", ["relative/path", "file:relative", "file://otherhost/x", "file:////x",
                                 "/a/../b", "file:///a/./b", "s3://bucket/key", ""])
def test_bad_local_locations_are_refused(bad):
    """Relative, remote-host, dot-segment and non-file locations are refused, not guessed at."""
    with pytest.raises(InvalidLocation):
        local_path(bad)


def test_both_file_uri_styles_name_the_same_object(tmp_path):
    """An object written as file:/x is read as file:///x and /x, and vice versa."""
    store = LocalStore()
    store.put_if_absent(f"file:{tmp_path}/a.json", b"A")
    assert store.get(f"file://{tmp_path}/a.json") == b"A"
    assert store.get(f"{tmp_path}/a.json") == b"A"
    with pytest.raises(AlreadyExists):
        store.put_if_absent(f"file://{tmp_path}/a.json", b"B")
    info = store.stat(f"file://{tmp_path}/a.json")
    store.compare_and_swap(f"file:{tmp_path}/a.json", b"C", info.etag)
    assert (tmp_path / "a.json").read_bytes() == b"C"


def test_list_keeps_the_prefix_spelling_and_hides_internal_files(tmp_path):
    """list returns locations spelled like the prefix, never lock or temporary files."""
    store = LocalStore()
    info = store.put_if_absent(f"file://{tmp_path}/t/p", b"1")
    store.compare_and_swap(f"file://{tmp_path}/t/p", b"2", info.etag)  # removes its lock file after
    (tmp_path / "t" / ".q.0123.icefloe-tmp").write_bytes(b"crashed writer's temp")
    (tmp_path / "t" / ".r.icefloe-lock").write_bytes(b"")                # a lock being held
    assert sorted(os.listdir(tmp_path / "t")) == [".q.0123.icefloe-tmp", ".r.icefloe-lock", "p"]
    assert [i.location for i in store.list(f"file:{tmp_path}/t/")] == [f"file:{tmp_path}/t/p"]
    assert [i.location for i in store.list(f"file://{tmp_path}/t/")] == [f"file://{tmp_path}/t/p"]
    assert [i.location for i in store.list(f"{tmp_path}/t/")] == [f"{tmp_path}/t/p"]


def test_failed_create_leaves_no_temporary_file(tmp_path):
    """A put_if_absent that loses leaves only the winner's file in the directory."""
    store = LocalStore()
    store.put_if_absent(f"{tmp_path}/m.json", b"1")
    with pytest.raises(AlreadyExists):
        store.put_if_absent(f"{tmp_path}/m.json", b"2")
    assert os.listdir(tmp_path) == ["m.json"]


def test_put_if_absent_creates_parent_directories(tmp_path):
    """put_if_absent creates missing parent directories."""
    store = LocalStore()
    store.put_if_absent(f"file://{tmp_path}/deep/er/still/x", b"x")
    assert (tmp_path / "deep" / "er" / "still" / "x").read_bytes() == b"x"


def _process_racer(args):
    kind, location, etag, i, barrier = args
    store = LocalStore()
    barrier.wait()
    try:
        if kind == "put":
            store.put_if_absent(location, f"p{i}".encode())
        else:
            store.compare_and_swap(location, f"p{i}".encode(), etag)
        return "won"
    except (AlreadyExists, PreconditionFailed) as e:
        return type(e).__name__


@pytest.mark.parametrize("kind", ["put", "cas"])
def test_racing_processes_have_one_winner(tmp_path, kind):
    """4 processes race put_if_absent (or CAS from one etag) on one file: exactly one wins,
    so the exclusivity holds across processes, not only across threads."""
    store = LocalStore()
    location = f"file://{tmp_path}/m.json"
    etag = store.put_if_absent(location, b"base").etag if kind == "cas" else ""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Manager().Barrier(PROCESS_RACERS)
    with ctx.Pool(PROCESS_RACERS) as pool:
        results = pool.map(_process_racer, [(kind, location, etag, i, barrier) for i in range(PROCESS_RACERS)])
    assert results.count("won") == 1, results
    loser = "AlreadyExists" if kind == "put" else "PreconditionFailed"
    assert results.count(loser) == PROCESS_RACERS - 1, results
    winner = results.index("won")
    assert store.get(location) == f"p{winner}".encode()


def test_locks_leave_no_files_and_stay_exclusive(tmp_path):
    """Goal: compare-and-swap and delete leave no lock file behind (../shared/repro bug8),
    and removing the lock file does not let two lockers in at once. Method: 8 threads x 25
    compare-and-swaps incrementing a counter object (a lost update would show as a
    smaller count), deletes in between; then no file but the object remains."""
    import threading
    store = LocalStore(fsync=False)
    loc = f"file://{tmp_path}/t/counter"
    store.put_if_absent(loc, b"0")
    for i in range(5):
        store.put_if_absent(f"file://{tmp_path}/t/x{i}", b"x")
        store.delete(f"file://{tmp_path}/t/x{i}")
    done = []

    def bump():
        n = 0
        while n < 25:
            info = store.stat(loc)
            try:
                store.compare_and_swap(loc, str(int(store.get(loc)) + 1).encode(), info.etag)
            except PreconditionFailed:
                continue
            n += 1
        done.append(n)
    threads = [threading.Thread(target=bump) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.get(loc) == b"200" and sum(done) == 200
    assert sorted(os.listdir(tmp_path / "t")) == ["counter"]


def test_a_lock_file_replaced_without_end_is_given_up_with_a_typed_error(tmp_path, monkeypatch):
    """Goal: the lock gives up only when its file keeps being replaced for a long time (a count
    of start-overs is no bound: under contention every locker that waited starts over), and
    then with a typed error and the object untouched. Method: every look at the lock file's
    name sees another inode, with the limit at 0.2 s."""
    from icefloe.impl.io import local
    from icefloe.impl.io.base import StoreUnavailable
    store = LocalStore(fsync=False)
    loc = f"file://{tmp_path}/t/counter"
    etag = store.put_if_absent(loc, b"0").etag
    real_stat = os.stat

    def replaced(path, *args, **kwargs):
        st = real_stat(path, *args, **kwargs)
        if str(path).endswith(".icefloe-lock"):
            return os.stat_result((st[0], st[1] + 1) + tuple(st[2:10]))
        return st
    monkeypatch.setattr(local, "LOCK_START_OVER_S_MAX", 0.2)
    monkeypatch.setattr(os, "stat", replaced)
    with pytest.raises(StoreUnavailable, match=r"lock file replaced \d+ times in a row over 0.2 s"):
        store.compare_and_swap(loc, b"1", etag)
    monkeypatch.undo()
    assert store.get(loc) == b"0"


def test_stale_temporaries_are_found_by_age(tmp_path):
    """Goal: orphan removal can find what dead writers left. Method: two temporary files,
    one old, one fresh; only the old one is stale."""
    store = LocalStore()
    (tmp_path / "t").mkdir()
    old, fresh = tmp_path / "t" / ".a.1.icefloe-tmp", tmp_path / "t" / ".b.2.icefloe-tmp"
    old.write_bytes(b"a")
    fresh.write_bytes(b"b")
    os.utime(old, (1_000_000, 1_000_000))
    found = store.stale_temporaries(f"file://{tmp_path}/t/", int(fresh.stat().st_mtime * 1000) - 1)
    assert found == [f"file://{tmp_path}/t/.a.1.icefloe-tmp"]
