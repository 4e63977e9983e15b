"""The deterministic ``simulate`` backend: no model, predictable outcomes.

A node's ``simulate`` attribute lists the statuses of its successive executions,
e.g. ``fail,fail,success`` fails twice then succeeds; the last entry repeats.
Without it every execution succeeds.
"""

from __future__ import annotations

from collections import Counter

from attractor.handlers.backend import StageRequest
from attractor.handlers.outcome import Outcome, StageStatus


def simulated_response(node_id: str) -> str:
    return f"[Simulated] Response for stage: {node_id}"


def parse_plan(text: str) -> list[StageStatus]:
    """``fail, success`` -> [FAIL, SUCCESS]; raises ValueError naming the bad entry."""
    plan = []
    for part in text.split(","):
        word = part.strip().lower()
        if not word:
            continue
        try:
            plan.append(StageStatus(word))
        except ValueError:
            allowed = ", ".join(s.value for s in StageStatus)
            raise ValueError(f"simulate: unknown status {word!r}; expected {allowed}") from None
    return plan


class SimulateBackend:
    """Answers every codergen node with a canned response and the planned status."""

    #: Nothing outside the run directory changes: the engine need not fsync its journal first.
    side_effects = False

    def __init__(self) -> None:
        self.executions: Counter[str] = Counter()

    async def run(self, request: StageRequest) -> str | Outcome:
        node = request.node
        self.executions[node.id] += 1
        plan = parse_plan(str(node.get("simulate") or ""))
        text = simulated_response(node.id)
        if not plan:
            return text
        status = plan[min(self.executions[node.id], len(plan)) - 1]
        if status == StageStatus.SUCCESS:
            return text
        n = self.executions[node.id]
        reason = "" if status.is_success else f"simulated {status.value} (execution {n})"
        return Outcome(
            status,
            notes=f"simulated {status.value}",
            failure_reason=reason,
            context_updates={"last_stage": node.id, "last_response": text},
        )

    async def aclose(self) -> None:
        return None
