"""`make bench`: run the benchmarks side by side with their peers and write docs/benchmarks.md.

Each benchmark is a module `bench/bench_<name>.py` with
    TITLE: str                       the section heading
    def run(quick: bool) -> str      measures (icefloe and its peer in the same run, on the
                                     same store) and returns the section's Markdown: tables
                                     of figures and ratios, what was measured and how.
Sections live in docs/benchmarks.md between `<!-- bench:NAME -->` and `<!-- /bench:NAME -->`
markers, so running one benchmark rewrites only its own section.

    python bench/run.py                 every benchmark
    python bench/run.py append scan     some of them
    python bench/run.py --quick         smaller sizes (a smoke run; figures marked as such)
    python bench/run.py --list
"""
from __future__ import annotations

import argparse
import fcntl
import importlib.util
import os
import platform
import re
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DOC = HERE.parent / "docs" / "benchmarks.md"
HEADER = """# Benchmarks

Written by `make bench` (`bench/run.py`); every figure below comes from a run of it, with
icefloe and its peer measured side by side in the same run on the same machine and store.
Ratios are icefloe / peer unless a table says otherwise. Tests never assert timings.
"""


def available() -> dict[str, Path]:
    return {p.stem.removeprefix("bench_"): p for p in sorted(HERE.glob("bench_*.py"))}


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def machine() -> str:
    return (f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"load average {os.getloadavg()[0]:.1f} at start")


def replace_section(doc: str, name: str, body: str) -> str:
    begin, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    block = f"{begin}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.S)
    if pattern.search(doc):
        return pattern.sub(lambda _m: block, doc)
    return doc.rstrip() + "\n\n" + block + "\n"


def write_section(path: Path, name: str, section: str) -> None:
    """Re-read the document under a lock and replace only this section, so benchmarks
    run at the same time (or by several people) never drop each other's sections."""
    with open(path.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        doc = path.read_text() if path.exists() else HEADER
        path.write_text(replace_section(doc, name, section))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="benchmarks to run (default: all)")
    ap.add_argument("--quick", action="store_true", help="smaller sizes; figures marked as a smoke run")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--doc", type=Path, default=DOC)
    args = ap.parse_args(argv)
    found = available()
    if args.list:
        print("\n".join(found))
        return 0
    unknown = [n for n in args.names if n not in found]
    if unknown:
        print(f"bench: unknown benchmark(s) {', '.join(unknown)}; have {', '.join(found)}", file=sys.stderr)
        return 2
    failed = []
    for name in args.names or list(found):
        module = load(name, found[name])
        print(f"== {name}: {module.TITLE}", flush=True)
        started = time.monotonic()
        try:
            body = module.run(args.quick)
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            failed.append(name)
            print(f"bench {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        took = time.monotonic() - started
        stamp = (f"_Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {machine()}; "
                 f"the benchmark took {took:.0f} s{' (--quick: smoke sizes)' if args.quick else ''}._")
        section = f"## {module.TITLE}\n\n{stamp}\n\n{body.strip()}\n"
        print(section, flush=True)
        write_section(args.doc, name, section)
    print(f"wrote {args.doc}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
