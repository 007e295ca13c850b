"""The `icefloe` console script.

`icefloe.impl` must import neither the model nor the conformance harness, so the
commands that need them live here and are imported only when asked for:

    icefloe conform ...          the conformance suite (icefloe.conformance.conform)
    icefloe demo-pipeline ...    the Spark example pipeline, judged by the checker
                                 (icefloe.conformance.demo.pipeline)

Every other subcommand (create, append, scan, history, rollback, compact, expire) is
the implementation's own CLI, `icefloe.impl.cli`.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys

# subcommand -> (module whose main(argv) -> int runs it, one line for --help, the packages it
# needs beyond icefloe's own dependencies, and the extra that installs them)
COMMANDS = {
    "conform": ("icefloe.conformance.conform", "run the conformance suite against an engine (icefloe conform --help)",
                ("hypothesis", "moto"), "conform"),
    "conform-rest": ("icefloe.conformance.rest.conform", "judge a REST catalog's commit endpoint "
                     "(icefloe conform --rest-uri URI)", ("starlette", "uvicorn", "requests"), "rest"),
    "demo-pipeline": ("icefloe.conformance.demo.pipeline",
                      "two Spark jobs append while a third compacts; the checker judges the history",
                      ("pyspark",), "spark"),
}
EXIT_USAGE = 2


def missing_packages(packages) -> list:
    return [p for p in packages if importlib.util.find_spec(p) is None]


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    from icefloe.impl import cli
    if not argv or argv[0] in ("-h", "--help"):
        parser = cli.build_parser({name: text for name, (_, text, _, _) in COMMANDS.items()})
        (parser.print_help if argv else parser.print_usage)()
        return 0 if argv else EXIT_USAGE
    if argv[0] == "conform" and any(a == "--rest-uri" or a.startswith("--rest-uri=") for a in argv):
        argv = ["conform-rest", *argv[1:]]      # a catalog author's mode (docs/rest.md)
    if argv[0] in COMMANDS:
        module_name, _, needs, extra = COMMANDS[argv[0]]
        missing = missing_packages(needs)
        if missing:
            print(f"icefloe {argv[0]}: needs {', '.join(missing)}: pip install 'icefloe[{extra}]'", file=sys.stderr)
            return EXIT_USAGE
        return importlib.import_module(module_name).main(argv[1:])
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
