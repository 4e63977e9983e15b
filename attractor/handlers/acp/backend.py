"""An ACP agent as the codergen backend of a node: one session per attempt.

For each attempt: resolve the turn budget as for every agent, start the agent
(:mod:`.process`), ``initialize`` and open a session in the node's working
directory, send the prompt as a prompt turn (and each message a supervisor
steers in as one more), follow the session's updates into events, transcript
and budget, and judge how it ended as the built-in agent's session is judged.

Stopping: at the turn limit or an exhausted run budget attractor sends
``session/cancel`` and gives the agent the kill grace to end the turn. When the
node times out or the run is cancelled (``--timeout``, Ctrl-C), the cleanup
runs shielded: ``session/cancel``, then the agent's process group is killed.
An agent that cannot start, exits, answers with an error or writes something
other than ACP to its stdout fails the step with a reason that says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from attractor.agent.transcript import Transcript
from attractor.config_file import AcpAgent
from attractor.events import AgentWarning, TurnBudgetResolved
from attractor.handlers.acp.session import Session
from attractor.handlers.agent_backend import judge_session, session_outcome
from attractor.handlers.backend import StageRequest
from attractor.handlers.external.tracker import Tracker
from attractor.handlers.outcome import Outcome, StageStatus
from attractor.handlers.turn_budget import TurnBudget, resolve_budget


class AcpBackend:
    """A :class:`~attractor.handlers.backend.CodergenBackend` running one ACP agent."""

    def __init__(self, agent: AcpAgent) -> None:
        self.agent = agent
        self.name = f"acp:{agent.name}"

    async def aclose(self) -> None:
        return None

    async def run(self, request: StageRequest) -> Outcome:
        node = request.node
        budget = resolve_budget(
            node, request.graph, request.settings, prompt=request.prompt, visit=request.visit
        )
        request.emit(TurnBudgetResolved(node=node.id, budget=budget.to_json()))
        tracker = Tracker(
            node_id=node.id,
            max_turns=budget.effective,
            cli_counts_turns=False,
            emit=request.emit,
            transcript=Transcript(request.stage_dir, visit=request.visit, attempt=request.attempt),
            run_budget=request.run_budget,
            title_summary=True,
        )
        session = Session(self.agent, request, tracker)
        try:
            await session.drive()
        finally:
            tracker.close()
        if request.run_budget.limits.cost is not None and tracker.total.cost is None:
            note = f"ACP agent {self.agent.name} reported no cost: --max-cost cannot limit it"
            request.emit(AgentWarning(node=node.id, turn=tracker.turns, message=note))
        return self._judge(request, budget, session)

    def _judge(self, request: StageRequest, budget: TurnBudget, session: Session) -> Outcome:
        tracker = session.tracker
        finished = tracker.finished
        limit = tracker.hit_turn_limit
        result = tracker.session_result()
        # Once attractor decided to stop the agent, how it then ended does not matter.
        reason = session.failure
        if reason is None and finished is not None and finished.ending == "error":
            reason = f"ACP agent {self.agent.name}: {finished.message}"
        if tracker.stop is None and not limit and reason is not None:
            outcome = session_outcome(request, budget, result, StageStatus.FAIL, reason)
        else:
            outcome = judge_session(request, budget, result)
        details: dict[str, Any] = {**outcome.details, "backend": self.name}
        if session.agent_info:
            details["agent"] = session.agent_info
        details["exit_code"] = session.exit_code
        updates = {**outcome.context_updates, "agent.backend": self.name}
        return replace(outcome, details=details, context_updates=updates)
