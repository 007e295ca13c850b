"""The mutation gate (`make mutants`; issue 11): curated, realistic bugs planted in the
reference implementation one at a time, each run against `icefloe conform`.

- `catalog`: the mutants: a file, an exact snippet, its replacement, the area of the code
  and the class of bug it stands for (with the real-world bug it resembles);
- `hook`: applies one mutant in a fresh process through an import hook, so no file of the
  tree is ever modified (a crashed run cannot leave a mutant behind);
- `run`: the gate: every mutant against conform (and, for the survivors, the unit tests of
  its area), the kill table, and docs/conformance.md's section of it.

A mutant whose snippet no longer matches its file fails tests/mutants: whoever moves the
code moves the mutant with it (same bug, new spelling).
"""
