"""The gate's rule settings and one rule's result: what the gate (gate.py) and the baseline rules
(baseline.py) share, in a module of their own so neither imports the other's."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Rules:
    max_long_calls: int = 0
    count: str = "blocking"            # blocking | long
    max_blocked_per_step_ns: int | None = None
    max_gpu_idle_per_step_ns: int | None = None
    kinds: tuple[str, ...] = ()        # source memory kinds (file labels) the rules look at; empty: all
    tolerance: float = 0.10            # baseline growth allowed (fraction)
    warmup_steps: int = 0              # with step ranges: the first N steps are not judged
    fail_causes: tuple[str, ...] = ()  # causes of long calls that fail the gate (CAUSES; by_cause.sql)
    source_root: str | None = None     # where the sites' source files are read (accepted in source); None: cwd

    # The report fields and wording the rules use for what they count.
    @property
    def count_key(self) -> str:
        return "blocking_calls" if self.count == "blocking" else "long_calls"

    @property
    def time_key(self) -> str:
        return "blocking_ns" if self.count == "blocking" else "long_ns"

    @property
    def what(self) -> str:
        return "long-blocking" if self.count == "blocking" else "long"


# The causes a long call can have, in the order queries/model/rules.sql's call_cause tries them (and
# queries/analyses/by_cause.sql's host_allocation).
CAUSES = ("backlog", "launch_queue", "own_transfer", "host_allocation", "new_host_allocation", "unknown")


@dataclass
class RuleResult:
    name: str
    passed: bool
    message: str
    offenders: list[dict] = field(default_factory=list)   # the longest (a report's top calls: at most 20)
    accepted: list[dict] = field(default_factory=list)   # offenders accepted in source, each with its `accepted` reason
    offenders_total: int | None = None   # how many copies the rule counted, when more than the list may hold
