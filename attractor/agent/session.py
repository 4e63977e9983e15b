"""One coding-agent session: the tool loop of one node attempt.

The loop asks the model, records the turn, runs the tools it called and feeds
the (truncated) results back, until the model answers without tools or the
budget ends it. The budget is checked *before* every request, so a budget of N
never yields more than N requests. The request that uses the last turn is a
*final* turn: tools are withheld and the model is asked for a summary.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from attractor.agent import prompts
from attractor.agent.hooks import ToolHooks
from attractor.agent.loop_detect import LoopDetector
from attractor.agent.report import (
    TOOL_NAME,
    OutcomeReport,
    ReportError,
    parse_report,
    report_from_text,
    report_tool,
)
from attractor.agent.run_budget import RunTurnBudget
from attractor.agent.tools import ToolContext, ToolRegistry
from attractor.agent.transcript import Transcript, TurnKind
from attractor.agent.truncation import limits_for, truncate_output
from attractor.events import (
    AgentReflection,
    AgentTurnCompleted,
    AgentTurnStarted,
    AgentWarning,
    DebugNote,
    Event,
    ToolCallCompleted,
    ToolCallStarted,
    call_summary,
)
from attractor.llm.types import (
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolDefinition,
    Usage,
)

#: Share of the budget after which the model is told how many turns remain.
NOTICE_AT = 0.8


@dataclass(frozen=True, kw_only=True)
class SessionConfig:
    """What one session needs to know besides its model and tools."""

    node_id: str
    prompt: str
    workdir: Path
    max_turns: int
    sprint_limit: int = 0
    reasoning_effort: str | None = None
    shell_timeout_cap: float = 600.0
    kill_grace: float = 2.0
    #: ``tool_hooks.pre`` / ``tool_hooks.post`` commands run around each tool call.
    tool_hooks: ToolHooks = ToolHooks()
    #: Offer ``report_outcome`` so the model can set the stage's outcome.
    report: bool = True
    #: The stage's outgoing edge labels the model may choose from.
    choices: tuple[str, ...] = ()


@dataclass(frozen=True)
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
    """

    text: str
    turns_used: int
    turn_limit_reached: bool
    run_budget_exhausted: bool
    usage: Usage
    report: OutcomeReport | None = None


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
        self.tools = tools
        self.transcript = transcript
        self.emit = emit
        self.run_budget = run_budget or RunTurnBudget(None)
        self.loops = loop_detector or LoopDetector()
        self.tool_context = ToolContext(config.workdir, config.shell_timeout_cap, config.kill_grace)
        self.messages: list[Message] = [
            Message.system(
                prompts.system_prompt(
                    workdir=config.workdir,
                    max_turns=config.max_turns,
                    tool_names=[*tools.names(), *([TOOL_NAME] if config.report else [])],
                    choices=config.choices if config.report else None,
                )
            ),
            Message.user(config.prompt),
        ]
        self.turns_used = 0
        self.usage = Usage()
        self.turn_limit_reached = False
        self.run_budget_exhausted = False
        self._work_since_reflection = 0
        self._after_reflection = False
        self._noticed = False
        self._registered = False
        self.report: OutcomeReport | None = None

    async def run(self) -> SessionResult:
        """Loop until the model answers without tools or the budget ends the session."""
        text = ""
        self.run_budget.register()
        self._registered = True
        try:
            while (kind := self._next_kind()) is not None:
                response = await self._request(kind)
                text = response.text
                if kind == "reflection":
                    continue
                if kind == "final" or not response.tool_calls:
                    text = self._final_text(kind, response)
                    break
                await self._run_tools(response.tool_calls)
                if self.report is not None:
                    text = response.text or self.report.notes
                    break
        finally:
            self._unregister()
        if self.report is None and self.config.report:
            self.report = report_from_text(text)
        return SessionResult(
            text,
            self.turns_used,
            self.turn_limit_reached,
            self.run_budget_exhausted,
            self.usage,
            self.report,
        )

    # -- budget ---------------------------------------------------------------

    def _next_kind(self) -> TurnKind | None:
        """The kind of the next request, or None when the run budget allows none.

        The run budget keeps one request in reserve for the final turn of every
        running agent (``active`` counts this one too): a request is the final
        one when no more than that reserve is left. An agent that starts when the
        rest is already reserved for the others makes no request at all. So the
        limit is never exceeded and no parallel agent is cut off without a summary.
        """
        budget = self.run_budget
        remaining = budget.remaining
        if remaining is not None and (remaining < budget.active or not budget.take()):
            self._run_budget_spent()
            self._unregister()
            self._warn(
                "the run's turn budget (--max-total-turns) is used up or kept for the "
                "final turns of other agents; no request made"
            )
            return None
        turn = self.turns_used + 1
        if turn >= self.config.max_turns:
            self.turn_limit_reached = True
        if remaining is not None and remaining <= budget.active:
            self._run_budget_spent()
        if self.turn_limit_reached or self.run_budget_exhausted:
            self._unregister()  # its final request is taken: no reserve needed
            return "final"
        limit = self.config.sprint_limit
        if limit > 0 and self._work_since_reflection >= limit:
            return "reflection"
        return "work"

    def _unregister(self) -> None:
        if self._registered:
            self._registered = False
            self.run_budget.unregister()

    def _run_budget_spent(self) -> None:
        self.run_budget_exhausted = True
        self.run_budget.exhausted = True

    def _add_turn_messages(self, kind: TurnKind) -> None:
        """The note that goes with this request: reflection, final, resume or budget notice.

        Notes for one request go out as one user message. A work turn right after a
        reflection always gets one: otherwise the request would end with the model's
        own reflection, which a Messages-API provider takes as a prefill to continue
        and an OpenAI-compatible server simply continues.
        """
        used = self.turns_used
        notes: list[str] = []
        if kind == "reflection":
            remaining = self.config.max_turns - used
            sprint = self.config.sprint_limit
            notes.append(
                prompts.reflection_message(used=used, remaining=remaining, sprint_limit=sprint)
            )
        elif kind == "final":
            reason = "turn budget" if self.turn_limit_reached else "run's turn budget"
            notes.append(prompts.final_turn_note(reason=reason))
        else:
            if self._after_reflection:
                notes.append(prompts.resume_after_reflection())
            if not self._noticed and used >= math.ceil(NOTICE_AT * self.config.max_turns):
                self._noticed = True
                notes.append(prompts.budget_note(used=used, max_turns=self.config.max_turns))
        self._after_reflection = False
        if notes:
            self.messages.append(Message.user("\n\n".join(notes)))

    # -- one request ------------------------------------------------------------

    async def _request(self, kind: TurnKind) -> ModelResponse:
        self._add_turn_messages(kind)
        self.turns_used += 1
        turn = self.turns_used
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
            turn=turn, kind=kind, tools_offered=[t.name for t in tools], response=response
        )
        self._account(kind, turn, response)
        return response

    def _offered(self) -> tuple[ToolDefinition, ...]:
        if not self.config.report:
            return self.tools.definitions()
        return (*self.tools.definitions(), report_tool(self.config.choices))

    def _account(self, kind: TurnKind, turn: int, response: ModelResponse) -> None:
        usage = response.usage or Usage()
        self.usage += usage
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
            )
        )
        if kind == "work":
            self._work_since_reflection += 1
        elif kind == "reflection":
            self._work_since_reflection = 0
            self._after_reflection = True
            remaining = self.config.max_turns - turn
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
                self._take_report(call)
            ignored = len(response.tool_calls) - len(reports)
            if ignored:
                self._warn(prompts.ignored_tools_warning(ignored, "final"))
            if self.report is not None:
                return response.text or self.report.notes
            return response.text or prompts.NO_FINAL_SUMMARY
        return response.text

    def _take_report(self, call: ToolCall) -> str:
        """Record a ``report_outcome`` call; the answer the model gets back."""
        try:
            self.report = parse_report(call.arguments)
        except ReportError as error:
            return f"report not recorded: {error}. Call {TOOL_NAME} again with valid fields."
        choice = f", label {self.report.preferred_label!r}" if self.report.preferred_label else ""
        return f"outcome recorded: {self.report.outcome}{choice}"

    # -- tools ----------------------------------------------------------------

    async def _run_tools(self, calls: tuple[ToolCall, ...]) -> None:
        """Run each call in order; answer each; warn once if the calls go in circles."""
        loop_warning = None
        for call in calls:
            if call.name == TOOL_NAME and self.config.report:
                answer = self._take_report(call)
                self.transcript.tool_output(
                    turn=self.turns_used, name=call.name, arguments=call.arguments, output=answer
                )
                self.messages.append(Message.tool(call, answer, is_error=self.report is None))
                continue
            self.emit(
                ToolCallStarted(
                    node=self.config.node_id,
                    turn=self.turns_used,
                    tool=call.name,
                    summary=call_summary(call.arguments),
                )
            )
            started = time.monotonic()
            result = await self.config.tool_hooks.run(
                call, self.tool_context, self.tools.execute, self._warn
            )
            self.transcript.tool_output(
                turn=self.turns_used, name=call.name, arguments=call.arguments, output=result.output
            )
            self.emit(
                ToolCallCompleted(
                    node=self.config.node_id,
                    turn=self.turns_used,
                    tool=call.name,
                    arguments=call.arguments,
                    output=result.output,
                    is_error=result.is_error,
                    duration=time.monotonic() - started,
                )
            )
            shown = truncate_output(result.output, limits_for(call.name))
            self.messages.append(Message.tool(call, shown, is_error=result.is_error))
            found = self.loops.observe(call)
            if found is not None:
                loop_warning = prompts.loop_warning(found.length, found.repeats)
        if loop_warning is not None:
            # After every tool result: providers expect results right after the calls.
            self.messages.append(Message.user(loop_warning))
            self._warn(loop_warning)

    def _warn(self, message: str) -> None:
        self.emit(AgentWarning(node=self.config.node_id, turn=self.turns_used, message=message))
