"""The `icefloe` console script.

`icefloe.impl` must import neither the model nor the conformance harness, so the
commands that need them live here and are imported only when asked for:

    icefloe conform ...          the conformance suite (icefloe.conformance.conform)
    icefloe demo-pipeline ...    the Spark example pipeline, judged by the checker
                                 (icefloe.conformance.demo_pipeline)

Every other subcommand (create, append, scan, history, rollback, compact, expire) is
the implementation's own CLI, `icefloe.impl.cli`.
"""
from __future__ import annotations

import importlib
import sys

# subcommand -> module whose main(argv) -> int runs it
COMMANDS = {
    "conform": "icefloe.conformance.conform",
    "demo-pipeline": "icefloe.conformance.demo_pipeline",
}


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        module = importlib.import_module(COMMANDS[argv[0]])
        return module.main(argv[1:])
    from icefloe.impl import cli
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
