"""Apply one mutant in this process through an import hook (mutants/__init__.py).

    python -m mutants.hook NAME conform [ARGS...]     # icefloe conform with NAME planted
    ICEFLOE_MUTANT=NAME pytest -p mutants.plugin ...   # the unit tests with NAME planted

The hook sits first on sys.meta_path. For the one module the mutant targets it asks the
other finders for the module's spec, then compiles the module from its source with the
snippet replaced (never from a cached .pyc). Nothing on disk changes.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from pathlib import Path

from mutants.catalog import Mutant, by_name

ROOT = Path(__file__).resolve().parent.parent
EXIT_NOT_APPLIED = 3   # the mutated module was never imported: the run proves nothing


class _MutatedLoader(importlib.machinery.SourceFileLoader):
    def __init__(self, fullname: str, path: str, mutant: Mutant, finder: "MutantFinder"):
        super().__init__(fullname, path)
        self.mutant, self.finder = mutant, finder

    def get_code(self, fullname):
        source = Path(self.path).read_text()
        mutated = self.mutant.apply(source)       # raises if the snippet is not there once
        self.finder.applied = True
        return compile(mutated, self.path, "exec", dont_inherit=True)


class MutantFinder(importlib.abc.MetaPathFinder):
    def __init__(self, mutant: Mutant):
        self.mutant = mutant
        self.applied = False

    def find_spec(self, fullname, path, target=None):
        if fullname != self.mutant.module:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.origin is None or not spec.origin.endswith(".py"):
            raise ImportError(f"mutant {self.mutant.name}: {fullname} has no Python source ({spec.origin})")
        spec.loader = _MutatedLoader(fullname, spec.origin, self.mutant, self)
        return spec


def install(name: str) -> MutantFinder:
    mutant = by_name(name)
    if mutant.module in sys.modules:
        raise RuntimeError(f"{mutant.module} is already imported: install the mutant first")
    finder = MutantFinder(mutant)
    sys.meta_path.insert(0, finder)
    return finder


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] != "conform":
        print("usage: python -m mutants.hook NAME conform [ARGS...]", file=sys.stderr)
        return 2
    finder = install(argv[0])
    from icefloe.conformance import conform
    code = conform.main(argv[2:])
    if not finder.applied:
        print(f"mutant {argv[0]}: {finder.mutant.module} was never imported", file=sys.stderr)
        return EXIT_NOT_APPLIED
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
