"""The fault plans of concurrency campaigns (issue 5 item 5, issue 14 item 8; spec/PROTOCOL.md
13 names each fault): which faults the proxy injects into S3 traffic, which swaps it keeps
unresolved, and which COMMITs of a SQL catalog fail.

Two plans, both seeded and survivable (every fault is one S3, a network or a database can
really produce; none corrupts what is stored):

- `standard` (the default; `rate` scales it): transient errors at a few percent, lost
  responses of conditional writes and a late swap. The store retries each request and
  reads back after an ambiguous conditional write, so nearly every fault is absorbed there
  and no operation ends Unknown.
- `deep` (`make campaign-deep`): the standard kinds at rates that reach the issue's fault
  count in 16 x 100 operations (about a third of all requests fail once; the writers' stores
  make up to `DEEP_STORE_ATTEMPTS_MAX` attempts per request, as an SDK configured for a bad
  network would), plus the schedules that keep outcomes unresolved:
  on the S3 catalog `testing.unresolved.UnresolvedSwaps` (a swap's ack lost after it landed,
  a swap lost before it reached S3, a swap stalled past the writer's timeout; each followed
  by a blackout of the writer's pointer reads), on a SQL catalog
  `testing.faulty_sql.UnresolvedCommits` (a COMMIT lost before or after the database ran it,
  a COMMIT sent late, each followed by a refused connection).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

STANDARD, DEEP = "standard", "deep"
PLANS = (STANDARD, DEEP)
READ_TIMEOUT_S = 1.0          # a swap delayed past this is given up on, then lands late
LATE_DELAY_S = 1.5
# The deep plan's writers wait longer: on a shared 2-core machine at load 30 an honest GET of
# a manifest through the proxy can take more than a second, and a timeout is an ambiguous
# failure the plan did not inject. Its late swaps and stalls are held past this instead.
DEEP_READ_TIMEOUT_S = 5.0
DEEP_LATE_DELAY_S = DEEP_READ_TIMEOUT_S + 0.5
STORE_ATTEMPTS_MAX = 4        # S3Store's default
DEEP_STORE_ATTEMPTS_MAX = 8
# Per swap (lost ack: per swap S3 applied). Tuned so that 16 x 100 operations leave well over
# 100 outcomes unresolved each way (docs/campaigns.md).
DEEP_UNRESOLVED_SWAPS = {"lost_ack": 0.15, "lost_request": 0.02, "stall": 0.02}
DEEP_STALL_S = (DEEP_READ_TIMEOUT_S + 0.5, DEEP_READ_TIMEOUT_S + 2.5)
# Per COMMIT (a SQL catalog's swap reaches COMMIT only when its UPDATE matched).
DEEP_UNRESOLVED_COMMITS = dict(probability=0.25, weights={"after": 1.0, "before": 1.5, "stall": 1.0},
                               stall_s=(0.2, 1.5), stall_commit_share=0.4)


@dataclass
class FaultPlan:
    """What a campaign injects. `rules` go to the proxy; `swaps` (kind -> rate) configure an
    UnresolvedSwaps schedule on it (S3 catalog only); `commits` configure each writer's
    UnresolvedCommits (SQL catalogs only); `store_attempts_max` and `read_timeout_s` are the
    writers' S3Store's."""
    name: str
    rules: list = field(default_factory=list)
    swaps: dict = field(default_factory=dict)
    stall_s: tuple = DEEP_STALL_S
    commits: dict = field(default_factory=dict)
    store_attempts_max: int = STORE_ATTEMPTS_MAX
    read_timeout_s: float = READ_TIMEOUT_S

    def schedule(self, catalog: str):
        """The proxy's unresolved-swap schedule for this plan, or None."""
        from icefloe.conformance.testing.unresolved import UnresolvedSwaps, blackout_for
        if catalog != "s3" or not self.swaps:
            return None
        return UnresolvedSwaps(dict(self.swaps), blackout_for(self.store_attempts_max), stall_s=self.stall_s)


def fault_plan(seed: int, rate: float = 1.0, name: str = STANDARD) -> FaultPlan:
    """The seeded plan `name`; `rate` scales every probability (0: no faults at all)."""
    if name not in PLANS:
        raise ValueError(f"fault plan must be one of {PLANS}, not {name!r}")
    if rate <= 0:
        return FaultPlan(name)
    if name == STANDARD:
        return FaultPlan(STANDARD, _standard_rules(seed, rate))
    return FaultPlan(DEEP, _deep_rules(seed, rate),
                     swaps={k: min(1.0, rate * p) for k, p in DEEP_UNRESOLVED_SWAPS.items()},
                     commits=dict(DEEP_UNRESOLVED_COMMITS, probability=min(1.0, rate * DEEP_UNRESOLVED_COMMITS["probability"])),
                     store_attempts_max=DEEP_STORE_ATTEMPTS_MAX, read_timeout_s=DEEP_READ_TIMEOUT_S)


def _standard_rules(seed: int, rate: float) -> list:
    """One proxy rule per kind, each with a probability drawn from the seed. The store
    retries each request up to 4 times, so most are absorbed there; lost responses and
    late swaps are what reach the commit loop."""
    from icefloe.conformance.testing.proxy import Delay, LoseResponse, Match, Reject, Reset, Rule
    rng = random.Random(f"faults-{seed}")
    writes = Match(operation=frozenset({"PutObject", "ConditionalPutObject"}))
    conditional = Match(operation="ConditionalPutObject")

    def p(low: float, high: float) -> float:
        return min(1.0, rate * rng.uniform(low, high))
    return [
        Rule(Reject(503), probability=p(0.01, 0.03)),
        Rule(Reject(500), writes, probability=p(0.005, 0.015)),
        Rule(Reset(), probability=p(0.005, 0.015)),
        Rule(LoseResponse("reset"), conditional, probability=p(0.02, 0.05)),
        Rule(LoseResponse("500"), conditional, probability=p(0.01, 0.03)),
        Rule(Delay(LATE_DELAY_S), Match(operation="ConditionalPutObject", key="*pointer.json"),
             probability=p(0.01, 0.03)),
        Rule(Delay(round(rng.uniform(0.01, 0.05), 3)), probability=p(0.02, 0.05)),
    ]


def _deep_rules(seed: int, rate: float) -> list:
    """The standard kinds at high rates (module docstring). The first rule that fires
    decides, so the order below is also a priority."""
    from icefloe.conformance.testing.proxy import Delay, LoseResponse, Match, Reject, Reset, Rule
    rng = random.Random(f"deep-faults-{seed}")
    writes = Match(operation=frozenset({"PutObject", "ConditionalPutObject"}))
    conditional = Match(operation="ConditionalPutObject")

    def p(low: float, high: float) -> float:
        return min(1.0, rate * rng.uniform(low, high))
    return [
        Rule(LoseResponse("reset"), conditional, probability=p(0.04, 0.06)),
        Rule(LoseResponse("500"), conditional, probability=p(0.02, 0.04)),
        Rule(Delay(DEEP_LATE_DELAY_S), Match(operation="ConditionalPutObject", key="*pointer.json"),
             probability=p(0.01, 0.02)),
        Rule(Reject(503), probability=p(0.22, 0.26)),
        Rule(Reject(500), writes, probability=p(0.04, 0.06)),
        Rule(Reset(), probability=p(0.04, 0.06)),
        Rule(Delay(round(rng.uniform(0.005, 0.02), 3)), probability=p(0.1, 0.14)),
    ]
