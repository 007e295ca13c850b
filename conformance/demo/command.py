"""`icefloe demo-pipeline`: its arguments, parsed before the pipeline (Spark, pyarrow, the
judge) is imported, so `--help` stays a help text; then conformance/demo/pipeline.py runs.

    icefloe demo-pipeline [--workdir DIR] [--appends N] [--rows R] [--compactions C]

The pipeline's Spark applications run `python -m icefloe.conformance.demo.command --role ...`.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

EXIT_USAGE = 2
DESCRIPTION = "the example data pipeline on Spark (two jobs append while a third compacts), judged by the checker"


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="icefloe demo-pipeline", description=DESCRIPTION)
    ap.add_argument("--workdir", type=Path, help="where the table, catalog and logs go (default: a new temp dir)")
    ap.add_argument("--appends", type=int, default=3, help="appends per appending application")
    ap.add_argument("--rows", type=int, default=400, help="rows per append")
    ap.add_argument("--compactions", type=int, default=2, help="compactions the third application commits at least")
    ap.add_argument("--role", help=argparse.SUPPRESS)
    return ap


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    if args.appends < 1 or args.rows < 1 or args.compactions < 0:
        print("demo-pipeline: --appends and --rows must be positive, --compactions not negative", file=sys.stderr)
        return EXIT_USAGE
    from icefloe.conformance.demo import pipeline
    return pipeline.run(args)


if __name__ == "__main__":
    sys.exit(main())
