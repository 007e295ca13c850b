"""What a conformance run did, summed over its programs: the report's counts and the
evidence that the run was not vacuous."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from icefloe.model.state import PHASE_ACTIONS, WRITE_PHASES

WRITE_ACTIONS = frozenset(PHASE_ACTIONS[p] for p in WRITE_PHASES)


def rule_of(label) -> str:
    """The rule family a label belongs to (the per-rule step counts): the four write
    actions count as one family, "write"; every other action is its own."""
    return "write" if label[0] in WRITE_ACTIONS else label[0]


@dataclass
class Stats:
    examples: int = 0
    steps: int = 0
    rules: Counter = field(default_factory=Counter)
    faults: Counter = field(default_factory=Counter)
    commits: int = 0
    conflicts: int = 0
    retries: int = 0                   # commits that needed more than one attempt
    unknown_resolved_committed: int = 0       # a Resolve found the attempt landed
    unknown_resolved_not_committed: int = 0   # a Resolve found it had not (retry or fail)
    noops: int = 0
    crashed: int = 0
    early_aborts: int = 0              # the engine aborted sooner than the model (allowed)
    gave_up: int = 0                   # a black-box commit stopped retrying before its attempts ran out
    reads: int = 0
    backends: Counter = field(default_factory=Counter)
    writers: int = 0

    def since(self, earlier: "Stats") -> "Stats":
        """What the run did after `earlier` (a copy taken then): the random search's own
        share, for its vacuity guard (suite.vacuity)."""
        out = Stats()
        for name in ("examples", "steps", "commits", "conflicts", "retries", "unknown_resolved_committed",
                     "unknown_resolved_not_committed", "noops", "crashed", "early_aborts", "gave_up", "reads"):
            setattr(out, name, getattr(self, name) - getattr(earlier, name))
        for name in ("rules", "faults", "backends"):
            setattr(out, name, getattr(self, name) - getattr(earlier, name))
        out.writers = self.writers
        return out

    def copy(self) -> "Stats":
        return Stats(**{**vars(self), "rules": Counter(self.rules), "faults": Counter(self.faults),
                        "backends": Counter(self.backends)})

    def to_json(self) -> dict:
        return {"examples": self.examples, "steps": self.steps, "writers": self.writers,
                "faults": dict(self.faults), "commits": self.commits, "conflicts": self.conflicts,
                "retries": self.retries, "unknown_resolved_committed": self.unknown_resolved_committed,
                "unknown_resolved_not_committed": self.unknown_resolved_not_committed,
                "noops": self.noops, "crashed": self.crashed, "early_aborts": self.early_aborts,
                "gave_up": self.gave_up,
                "reads": self.reads, "backends": dict(self.backends), "rules": dict(sorted(self.rules.items()))}
