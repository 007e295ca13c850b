"""One fuzz target (tests/fuzz/fuzz_targets.py) under atheris, libFuzzer's coverage-guided
engine for Python: icefloe's modules are instrumented, so inputs that reach new branches of
the Avro, JSON, Parquet and filter readers are kept and mutated further.

    python tests/fuzz/atheris_target.py NAME -runs=10000 [-seed=N] [CORPUS_DIR...]

Exits 0 after the runs; a finding (any exception other than the target's typed errors)
stops the run with libFuzzer's report and a crash file."""
from __future__ import annotations

import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))

with atheris.instrument_imports(include=["icefloe"]):
    import fuzz_targets as F


def main() -> None:
    name, rest = sys.argv[1], sys.argv[2:]
    target = F.TARGETS[name]
    atheris.Setup([sys.argv[0], *rest], target)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
