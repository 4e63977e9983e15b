"""Retry policy of a node: how many attempts and how long to wait between them.

``max_retries`` counts extra attempts, so ``max_retries=2`` means up to three
runs. Both FAIL and RETRY outcomes are retried (see docs/engine.md).
"""

from __future__ import annotations

import random
from dataclasses import field

from attractor.dot.graph import Graph, Node
from attractor.valueclass import frozen


@frozen
class BackoffConfig:
    """Exponential backoff in seconds; jitter scales each delay by 0.5-1.5."""

    initial_delay: float = 0.2
    factor: float = 2.0
    max_delay: float = 60.0
    jitter: bool = True

    def delay_for_attempt(self, attempt: int, rng: random.Random | None = None) -> float:
        """Delay before retry number ``attempt`` (1 is the first retry)."""
        delay = min(self.initial_delay * self.factor ** max(0, attempt - 1), self.max_delay)
        if self.jitter:
            delay *= (rng or random).uniform(0.5, 1.5)
        return delay


@frozen
class RetryPolicy:
    """``max_attempts`` is at least 1 (1 means no retries)."""

    max_attempts: int = 1
    backoff: BackoffConfig = field(default_factory=BackoffConfig)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")


#: The spec's named presets.
PRESETS: dict[str, RetryPolicy] = {
    "none": RetryPolicy(1, BackoffConfig(0.0, 1.0, 0.0, jitter=False)),
    "standard": RetryPolicy(5, BackoffConfig(0.2, 2.0)),
    "aggressive": RetryPolicy(5, BackoffConfig(0.5, 2.0)),
    "linear": RetryPolicy(3, BackoffConfig(0.5, 1.0)),
    "patient": RetryPolicy(3, BackoffConfig(2.0, 3.0)),
}


def visit_limit(node: Node, graph: Graph) -> int | None:
    """Node ``max_visits``, else graph ``default_max_visits``, else unlimited."""
    value = node.get("max_visits")
    if value is None:
        value = graph.get("default_max_visits")
    return int(value) if value is not None else None


def max_retries_for(node: Node, graph: Graph) -> int:
    """Node ``max_retries``, else graph ``default_max_retries`` (or its legacy alias), else 0."""
    if node.has("max_retries"):
        return int(node.get("max_retries") or 0)
    if graph.has("default_max_retries"):
        return int(graph.get("default_max_retries"))
    return int(graph.get("default_max_retry"))


def policy_for(node: Node, graph: Graph, backoff: BackoffConfig | None = None) -> RetryPolicy:
    """The retry policy of ``node`` with the standard backoff unless one is given."""
    return RetryPolicy(max_retries_for(node, graph) + 1, backoff or PRESETS["standard"].backoff)
