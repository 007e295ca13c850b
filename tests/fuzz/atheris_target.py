"""One fuzz target (tests/fuzz/fuzz_targets.py) under atheris, libFuzzer's coverage-guided
engine for Python: icefloe's modules are instrumented, so inputs that reach new branches of
the Avro, JSON, Parquet and filter readers are kept and mutated further.

    python tests/fuzz/atheris_target.py NAME INPUTS [libFuzzer options...] [CORPUS_DIR...]

After INPUTS inputs it prints "Done INPUTS runs" and leaves at once (os._exit): libFuzzer's
own exit can hang while pyarrow's thread pools are alive. A finding (any exception other
than the target's typed errors) stops the run with libFuzzer's report and a crash file."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parent))

with atheris.instrument_imports(include=["icefloe"]):
    import fuzz_targets as F


def main() -> None:
    name, inputs, rest = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    target = F.TARGETS[name]
    seen = 0

    def one_input(data: bytes) -> None:
        nonlocal seen
        target(data)
        seen += 1
        if seen >= inputs:
            print(f"Done {seen} runs", file=sys.stderr, flush=True)
            os._exit(0)

    atheris.Setup([sys.argv[0], *rest], one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
