"""The families' searched instances (conformance.coverage.explore), kept on disk between runs.

Searching every family's instance exhaustively is the fixed cost of a run's directed phase
(tens of seconds on a loaded 2-core machine, paid again by every `icefloe conform`, every
mutant of the gate and every seed). The result is a pure function of the model's code,
the suite's class definitions and the bounds, so it is stored under a key that hashes all
three: a changed model or family is searched afresh, never served stale. A file that
cannot be read back is searched again and replaced; writes are atomic (temporary file,
then rename), so concurrent runs never see half a file.

    ICEFLOE_COVERAGE_CACHE=off     search every time
    ICEFLOE_COVERAGE_CACHE=DIR     keep the files in DIR (default ~/.cache/icefloe/coverage)
"""
from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from functools import lru_cache
from pathlib import Path

from icefloe.conformance import coverage as C
from icefloe.model import iceberg

ENV = "ICEFLOE_COVERAGE_CACHE"
FORMAT = 1


@lru_cache(maxsize=1)
def _code_digest() -> str:
    """A hash of every source file the search depends on: the model package and the
    suite's view of it (view.py, coverage.py, this file)."""
    import icefloe.conformance.view as view
    model_dir = Path(iceberg.__file__).resolve().parent
    files = sorted(model_dir.rglob("*.py")) + [Path(view.__file__), Path(C.__file__),
                                                Path(C.__file__).with_name("coverage_rows.py"), Path(__file__)]
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
            return found
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        pass
    found = compute()
    try:
        where.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=where, delete=False, suffix=".tmp") as f:
            f.write(pickle.dumps(found, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(f.name, path)
    except OSError:
        pass                          # a read-only home: search again next time
    return found


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
