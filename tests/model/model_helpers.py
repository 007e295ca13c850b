"""Drive the model by action labels, as a test would write a scenario by hand."""
from __future__ import annotations

from icefloe.model.iceberg import Bounds
from icefloe.model.spec import IcebergSpec


def run(spec, *labels):
    """Apply the actions named by `labels` in order; each must be enabled."""
    state = spec.initial()[0]
    for label in labels:
        choices = {lab: t for lab, t in spec.successors(state)}
        assert label in choices, f"{label} not enabled; enabled: {sorted(choices)}"
        state = choices[label]
    return state


def spec(**kw) -> IcebergSpec:
    return IcebergSpec(Bounds(**kw))


def committed_append(w: int = 1):
    """The labels of one uncontended append by writer w."""
    return [("Begin", w, "append"), ("WriteData", w), ("WriteManifests", w), ("WriteManifestList", w),
            ("WriteMetadata", w), ("Swap", w)]
