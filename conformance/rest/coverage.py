"""The REST family of coverage by construction (conformance.coverage.base, conformance.coverage.directed):
every commit fault kind of `icefloe serve`'s fault layer (conformance.testing.rest_faults),
each status the client can be answered with, met by an engine whose swap is a REST commit
(conformance.rest.driver). A class is `(kind, detail, operation)`: detail is the status
of fail_before / fail_after, "deliver" or "drop" for a delayed request, else None.

What the server does with each fault does not depend on the operation; what the engine's
commit loop makes of the answer does, and the faults and unknowns families cover that per
operation, through the model's swap faults (injected as reject, fail_after 500 and delay).
So here an append meets each kind. Each program is the faults family's shortest program
to an append held at its commit (cut before its swap fault), then the fault by its name,
then, for a delayed request, its delivery or its drop.
"""
from __future__ import annotations

from icefloe.conformance.coverage.base import Family, Graph, Program
from icefloe.conformance.rest.driver import COMMIT_FAULT, RestDriver
from icefloe.conformance.suite.view import REST, steps

FAMILY = Family("rest", "a commit fault at the REST catalog's commit endpoint, each kind and status")
KIND = "append"


def classes() -> list:
    out = []
    for kind, status in RestDriver.KINDS:
        if kind == "delay":
            out += [(kind, then, KIND) for then in ("deliver", "drop")]
        else:
            out.append((kind, status, KIND))
    return out


def programs(faults: Graph) -> dict:
    """class -> Program, from the faults family's instance as a REST engine sees it."""
    witness = next((p for c, p in sorted(faults.witnesses.items(), key=lambda cp: len(cp[1].labels))
                    if c[0] == KIND and c[1] == "swap" and c[2] == "swap_fail"), None)
    if witness is None:
        return {}
    cut = next(i for i, lab in enumerate(witness.labels) if lab[0] == "SwapFails")
    w = witness.labels[cut][1]
    prefix = witness.labels[:cut]
    s = _run(faults, prefix)
    wr = s.writers[w - 1]
    out = {}
    for cls in classes():
        kind, detail, _ = cls
        if kind == "delay":
            then = ("Deliver" if detail == "deliver" else "Drop", w, wr.k, wr.attempt)
            labels = prefix + ((COMMIT_FAULT, w, kind, None), then)
        else:
            labels = prefix + ((COMMIT_FAULT, w, kind, detail),)
        out[cls] = Program(FAMILY.name, witness.bounds, labels, cls=cls)
    return out


def _run(g: Graph, labels):
    """The model state a REST engine's program reaches (view.steps)."""
    from icefloe.model import iceberg
    s = iceberg.initial_state(g.bounds)
    for label in labels:
        s = next(t for lab, t, _ in steps(g.bounds, s, REST) if lab == label)
    return s
