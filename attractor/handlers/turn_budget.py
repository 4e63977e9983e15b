"""The turn budget of one node attempt: how many model requests it may make.

Resolution, once per attempt:

1. the node's ``max_turns`` (an integer, or ``auto`` for an allocation from the
   prompt), else the graph's ``default_max_turns``, else the default of the
   execution profile (``settings.profile``);
2. the global cap (``--max-turns``, ``ATTRACTOR_MAX_TURNS``, config
   ``max_turns``) is a hard upper bound: effective = min(cap, step 1).
"""

from __future__ import annotations

from typing import Any, Literal

from attractor.agent.auto_turns import allocate
from attractor.dot.graph import Graph, Node
from attractor.settings import Settings
from attractor.valueclass import frozen

PROFILE_TURNS: dict[str, int] = {"smoke": 5, "fast": 15, "strict": 40, "yolo": 150}

OnTurnLimit = Literal["fail", "partial_success", "retry"]


@frozen(kw_only=True)
class TurnBudget:
    """The resolved budget and where each part came from.

    Attributes:
        effective: Model requests this attempt may make.
        source: What decided ``effective`` (``node max_turns``, ``cap from
            --max-turns``...); quoted in the turn-limit reason.
        node: The node's ``max_turns`` (an int, ``"auto"`` or None).
        graph_default: The graph's ``default_max_turns`` or None.
        profile: The execution profile in force.
        profile_default: That profile's default budget.
        auto_patterns: Task patterns matched when ``node`` is ``"auto"``.
        cap: The global cap or None.
        cap_source: Where the cap came from (``--max-turns``...) or None.
        sprint_limit: Work turns between forced reflections (0 = off).
        on_turn_limit: The node's status when the budget runs out.
    """

    effective: int
    source: str
    node: int | str | None = None
    graph_default: int | None = None
    profile: str = "fast"
    profile_default: int = PROFILE_TURNS["fast"]
    auto_patterns: tuple[str, ...] = ()
    cap: int | None = None
    cap_source: str | None = None
    sprint_limit: int = 0
    on_turn_limit: OnTurnLimit = "fail"

    def to_json(self) -> dict[str, Any]:
        """The ``turn_budget`` entry of status.json."""
        return {
            "effective": self.effective,
            "source": self.source,
            "node": self.node,
            "graph_default": self.graph_default,
            "profile": self.profile,
            "profile_default": self.profile_default,
            "auto_patterns": list(self.auto_patterns),
            "cap": self.cap,
            "cap_source": self.cap_source,
        }

    def limit_reason(self, turns_used: int) -> str:
        """The failure reason when the budget ran out."""
        return f"turn limit reached: {turns_used} of {self.effective} turns ({self.source})"


def resolve_budget(
    node: Node, graph: Graph, settings: Settings, *, prompt: str, visit: int = 1
) -> TurnBudget:
    """Resolve the turn budget of one attempt of ``node``."""
    node_value = node.get("max_turns")
    graph_default = graph.get("default_max_turns")
    profile_default = PROFILE_TURNS[settings.profile]
    patterns: tuple[str, ...] = ()
    if node_value == "auto":
        allocation = allocate(prompt, visit=visit)
        budget, source, patterns = allocation.turns, "node max_turns=auto", allocation.patterns
    elif node_value is not None:
        budget, source = int(node_value), "node max_turns"
    elif graph_default is not None:
        budget, source = int(graph_default), "graph default_max_turns"
    else:
        budget, source = profile_default, f"profile {settings.profile} default"
    cap = settings.max_turns
    cap_source = settings.source("max_turns") if cap is not None else None
    if cap is not None and cap < budget:
        budget, source = cap, f"cap from {cap_source}"
    return TurnBudget(
        effective=budget,
        source=source,
        node=node_value,
        graph_default=graph_default,
        profile=settings.profile,
        profile_default=profile_default,
        auto_patterns=patterns,
        cap=cap,
        cap_source=cap_source,
        sprint_limit=_sprint_limit(node, graph),
        on_turn_limit=node.get("on_turn_limit"),
    )


def _sprint_limit(node: Node, graph: Graph) -> int:
    value = node.get("sprint_limit")
    if value is None:
        value = graph.get("default_sprint_limit")
    return int(value or 0)
