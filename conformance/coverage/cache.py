"""The families' searched instances (conformance.coverage.explore), kept on disk between runs.

Searching every family's instance exhaustively is the fixed cost of a run's directed phase
(tens of seconds on a loaded 2-core machine, paid again by every `icefloe conform`, every
mutant of the gate and every seed). The result is a pure function of the model's code,
the suite's class definitions and the bounds, so it is stored under a key that hashes all
three: a changed model or family is searched afresh, never served stale. A file that
cannot be read back is searched again and replaced; writes are atomic (temporary file,
then rename), so concurrent runs never see half a file.

The directory is bounded: a file read is touched, and after each write the least recently
used files beyond ENTRIES_MAX files or BYTES_MAX bytes go (with temporary files a crashed
writer left). A key hashes
the code, so every change to the model or the suite leaves its predecessors' files unused;
they are not deleted by their hash, because several checkouts of different code (worktrees,
branches) may share one home and each would then delete what the others still use.

    ICEFLOE_COVERAGE_CACHE=off     search every time
    ICEFLOE_COVERAGE_CACHE=DIR     keep the files in DIR (default ~/.cache/icefloe/coverage)
"""
from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
import time
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from icefloe.conformance.coverage import families as C
from icefloe.model import iceberg

ENV = "ICEFLOE_COVERAGE_CACHE"
FORMAT = 1
# About 40 files per engine's capabilities per version of the code (each family's instance
# twice, and its programs): room for a few versions of the suite and every variant's.
ENTRIES_MAX = 512
BYTES_MAX = 256 * 2**20        # a few hundred graphs of a grown model, whatever their size
STALE_TMP_S = 3600.0           # a temporary file this old belongs to a writer that died


@lru_cache(maxsize=1)
def _code_digest() -> str:
    """A hash of every source file the search depends on: the model package and the
    suite's view of it (suite/view.py, coverage/base.py, rows.py, families.py, this file)."""
    import icefloe.conformance.suite.view as view
    model_dir = Path(iceberg.__file__).resolve().parent
    files = sorted(model_dir.rglob("*.py")) + [Path(view.__file__), Path(C.__file__),
                                                Path(C.__file__).with_name("rows.py"),
                                                Path(C.__file__).with_name("base.py"), Path(__file__)]
    h = hashlib.sha256(f"{FORMAT} {sys.version_info[:2]}".encode())
    for f in files:
        h.update(str(f.relative_to(f.parent.parent)).encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def directory() -> Path | None:
    where = os.environ.get(ENV, "")
    if where.lower() in ("off", "0", "no"):
        return None
    return Path(where) if where else Path.home() / ".cache" / "icefloe" / "coverage"


def key(family: C.Family, bounds: iceberg.Bounds, black_box: bool) -> str:
    return hashlib.sha256(f"{_code_digest()} {family!r} {bounds!r} {black_box}".encode()).hexdigest()[:32]


def _cached(name: str, compute, valid):
    where = directory()
    if where is None:
        return compute()
    path = where / f"{name}.pickle"
    try:
        found = pickle.loads(path.read_bytes())
        if valid(found):
            _touch(path)
            return found
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        pass
    found = compute()
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=where, delete=False, suffix=".tmp") as f:
            f.write(pickle.dumps(_lean(found), protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(f.name, path)
    except OSError:
        pass                          # a read-only home: search again next time
    else:
        prune(where)
    return found


def _lean(found):
    """What is stored of a Graph or a list of Programs: the same, each Bounds a fresh copy of
    its fields alone. The model memoizes what a step plans and writes on the Bounds object
    itself (model/iceberg.py: `_planned`, `_written`), megabytes after a family's search:
    pickled beside the programs, they made every file ~3.5 MB and a warm plan ~5 s of
    unpickling per run (issue 32). Bounds compare by their fields, so a copy is the same key."""
    copies: dict = {}

    def bounds(b):
        if id(b) not in copies:
            copies[id(b)] = (b, replace(b))       # (the original kept alive: its id stays its own)
        return copies[id(b)][1]

    def program(p):
        return replace(p, bounds=bounds(p.bounds)) if isinstance(p, C.Program) else p

    if isinstance(found, C.Graph):
        return replace(found, bounds=bounds(found.bounds),
                       witnesses={c: program(p) for c, p in found.witnesses.items()})
    if isinstance(found, list):
        return [program(p) for p in found]
    return found


def _touch(path: Path) -> None:
    try:
        os.utime(path)                # used now: the last to go (prune)
    except OSError:
        pass


def prune(where: Path, entries_max: int | None = None, bytes_max: int | None = None) -> list:
    """Delete the least recently used files beyond `entries_max` files or `bytes_max` bytes
    (default ENTRIES_MAX, BYTES_MAX; the newest file always stays) and temporary files older
    than STALE_TMP_S; returns what was deleted. Races with another run are harmless: a file
    gone is searched again, one deleted twice is skipped."""
    keep = ENTRIES_MAX if entries_max is None else entries_max
    size_max = BYTES_MAX if bytes_max is None else bytes_max
    found, gone = [], []
    now = time.time()
    for f in where.iterdir():
        try:
            st = f.stat()
        except OSError:
            continue
        mtime = st.st_mtime
        if f.suffix == ".pickle":
            found.append((mtime, f.name, f, st.st_size))
        elif f.suffix == ".tmp" and now - mtime > STALE_TMP_S:
            gone.append(f)
    found.sort(reverse=True)          # newest first
    total = 0
    for i, (_, _, f, size) in enumerate(found):
        total += size
        if i > 0 and (i >= keep or total > size_max):
            gone.append(f)
    for f in gone:
        try:
            f.unlink()
        except OSError:
            pass
    return gone


def explore(family: C.Family, bounds: iceberg.Bounds, black_box: bool) -> C.Graph:
    """coverage.explore, served from disk when this code already searched these bounds."""
    return _cached(f"{family.name}-{key(family, bounds, black_box)}", lambda: C.explore(family, bounds, black_box),
                   lambda g: isinstance(g, C.Graph) and g.bounds == bounds and g.family == family)


def cover(graph: C.Graph, black_box: bool) -> list:
    """coverage.cover of a searched instance (each program simulated on the model), cached
    under the instance's key."""
    name = f"{graph.family.name}-{key(graph.family, graph.bounds, black_box)}-cover"
    return _cached(name, lambda: C.cover(graph, black_box),
                   lambda ps: isinstance(ps, list) and all(isinstance(p, C.Program) for p in ps))
