"""The suite's commands on the `icefloe` command line: conform, conform-rest, demo-pipeline.

The command line starts in `icefloe.impl.cli` (the console script), which knows nothing of
this package: it finds these commands through the entry point `conform` of the group
`icefloe.commands` (pyproject.toml), which names `register` below. This module imports
nothing of the suite at its top, so `icefloe --help` stays a help text; each command's
module is imported when that command runs:

    icefloe conform ...          the conformance suite (icefloe.conformance.conform)
    icefloe conform --rest-uri   a REST catalog's commit endpoint (icefloe.conformance.rest.conform)
    icefloe demo-pipeline ...    the Spark example pipeline, judged by the checker
                                 (icefloe.conformance.demo.command, then demo.pipeline)

`python -m icefloe.conformance.cli ARGS` is `icefloe ARGS`.
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
    "demo-pipeline": ("icefloe.conformance.demo.command",
                      "two Spark jobs append while a third compacts; the checker judges the history",
                      ("pyspark",), "spark"),
}
EXIT_USAGE = 2


def missing_packages(packages) -> list:
    return [p for p in packages if importlib.util.find_spec(p) is None]


def register(sub) -> None:
    """Add the suite's commands to the `icefloe` parser; each parses its own arguments."""
    for name, (_, text, _, _) in COMMANDS.items():
        p = sub.add_parser(name, help=text, add_help=False)
        p.set_defaults(fn=lambda args, name=name: run(name, args.argv), own_arguments=True)


def run(name: str, argv: list) -> int:
    """Run command `name` with its own arguments, or name the extra its packages need."""
    if name == "conform" and any(a == "--rest-uri" or a.startswith("--rest-uri=") for a in argv):
        name = "conform-rest"                   # a catalog author's mode (docs/rest.md)
    module_name, _, needs, extra = COMMANDS[name]
    missing = missing_packages(needs)
    if missing:
        print(f"icefloe {name}: needs {', '.join(missing)}: pip install 'icefloe[{extra}]'", file=sys.stderr)
        return EXIT_USAGE
    return importlib.import_module(module_name).main(list(argv))


def main(argv=None) -> int:
    from icefloe.impl import cli
    return cli.main(argv)


if __name__ == "__main__":
    sys.exit(main())
