"""The transport family of the directed programs (conformance.suite.transport's faults): each
transport fault at each phase it can hit, for the layers an engine can be faulted at, as
a program derived from the faults family's shortest program to the model fault it is
mirrored as (conformance.coverage.base, conformance.coverage.directed)."""
from __future__ import annotations

from icefloe.conformance.coverage.base import Graph, Program
from icefloe.conformance.suite.transport import OUTAGE_REQUESTS

TRANSPORT = "transport"
TRANSPORT_DESCRIPTION = "a transport fault (S3 request or answer lost, SQL COMMIT failing) at a phase"
# (layer, fault, phase, operation kind) -> where the programs run: layer "sql" on the memory
# store (its catalog is SQLite), "s3" on S3 with the S3 catalog. What the S3 store and catalog
# do with a lost request or answer does not depend on the operation (how the commit loop takes
# the outcome that results does, and the faults and unknowns families cover that per operation
# on the memory store), so on S3 an append is faulted at each of its phases.
_S3_WRITES = ("data", "manifests", "list", "metadata")
_S3_WRITE_FAULTS = ("ResponseLost", "RequestLost", "Blackout", "ServerError", "Partition")
# the swap's also: an outage of n requests (transport.fault_name), a held answer
_S3_SWAP_FAULTS = _S3_WRITE_FAULTS + tuple(f"Outage{n}" for n in OUTAGE_REQUESTS) + ("HoldAnswer", "HoldAnswer+rival")
MODEL_FAULT_AT = {"swap": "AckLost", **{phase: "WriteFails" for phase in _S3_WRITES}}


def transport_classes(kinds: tuple, layers: tuple, faults: tuple) -> list:
    """The transport classes for an engine that can be faulted at `layers`, whose mirrors
    are among the model's `faults` (a swap fault is mirrored as swap_fail, ack_lost or
    swap_delayed, a write fault as write_fail)."""
    out = []
    swaps = {"swap_fail", "ack_lost", "swap_delayed"} <= set(faults)
    writes = "write_fail" in faults
    if "sql" in layers and swaps:
        out += [("sql", fault, "swap", kind) for fault in ("ResponseLost", "RequestLost") for kind in kinds]
    if "s3" in layers and writes:
        out += [("s3", fault, phase, "append") for fault in _S3_WRITE_FAULTS for phase in _S3_WRITES if "append" in kinds]
    if "s3" in layers and swaps:
        out += [("s3", fault, "swap", "append") for fault in _S3_SWAP_FAULTS if "append" in kinds]
    return out


def transport_programs(faults: Graph, classes: list) -> dict:
    """class -> Program: the faults family's shortest program to the model fault at that
    phase of that operation, with the fault replaced by the transport fault (and, for a
    held swap answer, a rival append that commits on top before the answer is lost)."""
    out = {}
    for cls in classes:
        layer, fault, phase, kind = cls
        witness = next((p for c, p in faults.witnesses.items() if c[0] == kind and c[1] == phase
                        and c[2] == _FAULT_KIND[MODEL_FAULT_AT[phase]] and c[4] != "later"), None)
        if witness is None:
            continue
        cut = next(i for i, lab in enumerate(witness.labels) if lab[0] == MODEL_FAULT_AT[phase])
        w = witness.labels[cut][1]
        labels = witness.labels[:cut]
        if fault == "HoldAnswer+rival":
            rival = 2 if w == 1 else 1
            labels += (("HoldAnswer", w), ("Begin", rival, "append"), ("WriteData", rival), ("WriteManifests", rival),
                       ("WriteManifestList", rival), ("WriteMetadata", rival), ("Swap", rival), ("LoseAnswer", w))
        elif fault == "HoldAnswer":
            labels += (("HoldAnswer", w), ("LoseAnswer", w))
        elif fault.startswith("Outage"):
            labels += (("Outage", w, int(fault[len("Outage"):])),)
        else:
            labels += ((fault, w),)
        store, catalog = ("memory", None) if layer == "sql" else ("s3", "s3")
        out[cls] = Program(TRANSPORT, witness.bounds, labels, store, catalog, cls)
    return out


_FAULT_KIND = {"AckLost": "ack_lost", "WriteFails": "write_fail"}
