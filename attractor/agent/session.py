"""One coding-agent session: the tool loop of one node attempt.

The loop asks the model, records the turn, runs the tools it called and feeds
the (truncated) results back, until the model answers without tools or the
budget ends it. The budget is checked *before* every request, so a budget of N
never yields more than N requests. The request that uses the last turn is a
*final* turn: tools are withheld and the model is asked for a summary.

The session reads as that loop; its collaborators do the rest: the budget
decides each request's kind and the notes that go with it
(``session_budget.py``), the tool calls of a work turn are run and answered by
``tool_calls.py``, and the model's report is kept by ``report.ReportTaker``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from attractor import redact
from attractor.agent import prompts
from attractor.agent.compaction import Compaction, SizeTally, compact
from attractor.agent.loop_detect import LoopDetector
from attractor.agent.report import (
    TOOL_NAME,
    OutcomeReport,
    ReportTaker,
    report_from_text,
    report_tool,
)
from attractor.agent.run_budget import RunTurnBudget
from attractor.agent.session_budget import NOTICE_AT, SessionBudget
from attractor.agent.session_config import SessionConfig
from attractor.agent.steering import SteeringQueue
from attractor.agent.subagents import spawn_tool
from attractor.agent.tool_calls import ToolCalls
from attractor.agent.tools import ToolRegistry
from attractor.agent.transcript import Transcript, TurnKind
from attractor.agent.turn_state import TurnState
from attractor.events import (
    AgentReflection,
    AgentTurnCompleted,
    AgentTurnStarted,
    AgentWarning,
    DebugNote,
    Event,
)
from attractor.llm.types import (
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ToolDefinition,
    Usage,
)
from attractor.valueclass import frozen

__all__ = ["NOTICE_AT", "AgentSession", "SessionConfig", "SessionResult"]


@frozen
class SessionResult:
    """How a session ended.

    Attributes:
        text: The model's last answer (the node's response).
        turns_used: Model requests made.
        turn_limit_reached: The node's budget forced the final turn.
        run_budget_exhausted: The run-wide budget forced the final turn or
            allowed no request at all.
        usage: Token usage summed over the session's requests.
        report: The model's own verdict (``report_outcome`` or a trailing JSON
            object), None when it gave none.
        messages: The conversation without its system prompt: the history the
            session continued, then its own prompt, answers and tool results.
    """

    text: str
    turns_used: int
    turn_limit_reached: bool
    run_budget_exhausted: bool
    usage: Usage
    report: OutcomeReport | None = None
    messages: tuple[Message, ...] = ()


class AgentSession:
    """Runs the agent loop for one node attempt; see :meth:`run`."""

    def __init__(
        self,
        model: Model,
        config: SessionConfig,
        *,
        tools: ToolRegistry,
        transcript: Transcript,
        emit: Callable[[Event], None],
        run_budget: RunTurnBudget | None = None,
        loop_detector: LoopDetector | None = None,
    ) -> None:
        if config.max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.model = model
        self.config = config
        #: The tools a subagent of this session gets (no spawn_agent of its own).
        self.base_tools = tools
        self.tools = (
            tools.with_tools(spawn_tool(self, type(self))) if config.subagent_depth > 0 else tools
        )
        self.transcript = transcript
        self.emit = emit
        self.run_budget = run_budget or RunTurnBudget()
        # What the session adds to the conversation holds no secret of the run
        # (attractor.redact); tool results are redacted by the tool registry.
        system = prompts.system_prompt(
            workdir=config.workdir,
            max_turns=config.max_turns,
            tool_names=[*self.tools.names(), *([TOOL_NAME] if config.report else [])],
            choices=config.choices if config.report else None,
            instructions=config.instructions,
            context=config.context,
        )
        self.messages: list[Message] = [
            Message.system(redact.text(system)),
            *config.history,
            Message.user(redact.text(config.prompt)),
        ]
        self.usage = Usage()
        #: The conversation's size, kept between requests (compaction).
        self.size = SizeTally()
        #: Messages a host injects before the next request; see :meth:`steer`.
        self.steering = SteeringQueue()
        #: Where the session stands between requests (budget verdicts, reflection, notices).
        self.turn_state = TurnState()
        self.budget = SessionBudget(
            self.run_budget,
            self.turn_state,
            max_turns=config.max_turns,
            sprint_limit=config.sprint_limit,
            warn=self._warn,
        )
        self.reports = ReportTaker()
        self.calls = ToolCalls(
            config,
            self.tools,
            messages=self.messages,
            transcript=transcript,
            reports=self.reports,
            emit=emit,
            warn=self._warn,
            turn=lambda: self.budget.turns_used,
            loops=loop_detector or LoopDetector(),
        )

    async def run(self) -> SessionResult:
        """Loop until the model answers without tools or the budget ends the session."""
        text = ""
        self.budget.register()
        try:
            while (kind := self.budget.next_kind()) is not None:
                response = await self._request(kind)
                text = response.text
                if kind == "reflection" or (kind == "work" and self._steered_meanwhile(response)):
                    continue
                if kind == "final" or not response.tool_calls:
                    text = self._final_text(kind, response)
                    break
                await self.calls.run(response.tool_calls)
                if self.report is not None:
                    text = response.text or self.report.notes
                    break
        finally:
            self.budget.unregister()
        if self.report is None and self.config.report:
            self.reports.report = report_from_text(text)
        return SessionResult(
            text,
            self.charged_turns,
            self.turn_state.turn_limit_reached,
            self.turn_state.run_budget_exhausted,
            self.usage,
            self.report,
            self.conversation(),
        )

    @property
    def report(self) -> OutcomeReport | None:
        """The model's own verdict so far (``report_outcome``), None before it gives one."""
        return self.reports.report

    def conversation(self) -> tuple[Message, ...]:
        """The messages so far, without the system prompt."""
        return tuple(m for m in self.messages if m.role != "system")

    def steer(self, text: str) -> None:
        """Queue a user message for the next request (safe from any thread).

        A message that arrives while the model writes what would be its last
        answer keeps the session going: the model gets it on one more turn.
        """
        self.steering.put(text)

    def _steered_meanwhile(self, response: ModelResponse) -> bool:
        return not response.tool_calls and len(self.steering) > 0

    # -- budget (session_budget.py keeps it) -----------------------------------

    @property
    def turns_used(self) -> int:
        """Requests this session made."""
        return self.budget.turns_used

    @property
    def subagent_turns(self) -> int:
        """Requests made by subagents, charged to this session's budget."""
        return self.budget.subagent_turns

    @property
    def charged_turns(self) -> int:
        """Requests charged to the budget: this session's and its subagents'."""
        return self.budget.charged_turns

    def charge_subagent(self, turns: int, usage: Usage) -> None:
        """Charge a finished subagent's requests and tokens to this session."""
        self.budget.charge_subagent(turns)
        self.usage += usage

    # -- one request ------------------------------------------------------------

    async def _request(self, kind: TurnKind) -> ModelResponse:
        steered = self.steering.drain()
        if self.config.steering is not None:
            steered += [prompts.steering_note(text) for text in self.config.steering()]
        # Notes for one request go out as one user message. A work turn right after
        # a reflection always gets one: otherwise the request would end with the
        # model's own reflection, which a Messages-API provider takes as a prefill
        # to continue and an OpenAI-compatible server simply continues.
        notes = [*steered, *self.budget.notes(kind)]
        if notes:
            self.messages.append(Message.user(redact.text("\n\n".join(notes))))
        compaction = self._compact()
        turn = self.budget.take()
        tools = self._offered() if kind == "work" else ()
        limit = self.config.max_turns
        self.emit(AgentTurnStarted(node=self.config.node_id, turn=turn, max_turns=limit, kind=kind))
        response = await self.model.request(
            ModelRequest(tuple(self.messages), tools, reasoning_effort=self.config.reasoning_effort)
        )
        # Tool calls are only kept in history when they will be run and answered.
        kept = response.tool_calls if kind == "work" else ()
        self.messages.append(Message.assistant(response.text, kept))
        self.transcript.record(
            turn=turn,
            kind=kind,
            tools_offered=[t.name for t in tools],
            response=response,
            extra=self._transcript_extra(turn, steered, compaction),
        )
        self._account(kind, turn, response)
        return response

    def _compact(self) -> Compaction | None:
        """Compact old tool outputs when the conversation nears the context window."""
        done = compact(self.messages, self.config.context_window, self.size)
        if done is not None:
            self._warn(done.summary())
        return done

    def _transcript_extra(
        self, turn: int, steered: list[str], compaction: Compaction | None
    ) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if turn == 1 and self.config.context is not None:
            extra["project_context"] = self.config.context.to_json()
        if steered:
            extra["steering"] = steered
        if compaction is not None:
            extra["compacted"] = compaction.to_json()
        return extra

    def _offered(self) -> tuple[ToolDefinition, ...]:
        if not self.config.report:
            return self.tools.definitions()
        return (*self.tools.definitions(), report_tool(self.config.choices))

    def _account(self, kind: TurnKind, turn: int, response: ModelResponse) -> None:
        usage = response.usage or Usage()
        self.usage += usage
        self.run_budget.spend(usage)
        node = self.config.node_id
        for note in response.notes:
            self.emit(DebugNote(node=node, message=note))
        self.emit(
            AgentTurnCompleted(
                node=node,
                turn=turn,
                kind=kind,
                tool_calls=len(response.tool_calls),
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                cost=usage.cost,
            )
        )
        self.budget.answered(kind)
        if kind == "reflection":
            remaining = self.config.max_turns - self.charged_turns
            self.transcript.reflection(
                turn=turn, used=turn, remaining=remaining, text=response.text
            )
            self.emit(AgentReflection(node=node, turn=turn, text=response.text))
            if response.tool_calls:
                self._warn(prompts.ignored_tools_warning(len(response.tool_calls), "reflection"))

    def _final_text(self, kind: TurnKind, response: ModelResponse) -> str:
        if kind == "final" and response.tool_calls:
            # A report is an answer, not work: it counts even on the tool-free turn.
            reports = [c for c in response.tool_calls if c.name == TOOL_NAME]
            for call in reports:
                self.reports.take(call.arguments)
            ignored = len(response.tool_calls) - len(reports)
            if ignored:
                self._warn(prompts.ignored_tools_warning(ignored, "final"))
            if self.report is not None:
                return response.text or self.report.notes
            return response.text or prompts.NO_FINAL_SUMMARY
        return response.text

    def _warn(self, message: str) -> None:
        self.emit(AgentWarning(node=self.config.node_id, turn=self.turns_used, message=message))
