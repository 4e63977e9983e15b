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
from typing import Any

from attractor import redact
from attractor.agent import prompts
from attractor.agent.compaction import Compaction, compact
from attractor.agent.loop_detect import LoopDetector
from attractor.agent.report import (
    TOOL_NAME,
    OutcomeReport,
    ReportError,
    parse_report,
    report_from_text,
    report_tool,
)
from attractor.agent.run_budget import BudgetKind, RunTurnBudget, budget_label, budget_name
from attractor.agent.session_config import SessionConfig
from attractor.agent.steering import SteeringQueue
from attractor.agent.subagents import spawn_tool
from attractor.agent.tool_batches import run_calls
from attractor.agent.tools import ToolContext, ToolRegistry, ToolResult
from attractor.agent.transcript import Transcript, TurnKind
from attractor.agent.truncation import limits_for, truncate_output
from attractor.agent.turn_state import CallOutcome, TurnState
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

__all__ = ["NOTICE_AT", "AgentSession", "SessionConfig", "SessionResult"]

#: Share of the budget after which the model is told how many turns remain.
NOTICE_AT = 0.8


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
        self.loops = loop_detector or LoopDetector()
        self.tool_context = ToolContext(
            config.workdir, config.shell_timeout_cap, config.kill_grace, config.environment
        )
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
        self.turns_used = 0
        #: Requests made by subagents, charged to this session's budget.
        self.subagent_turns = 0
        self.usage = Usage()
        #: Messages a host injects before the next request; see :meth:`steer`.
        self.steering = SteeringQueue()
        #: Where the session stands between requests (budget verdicts, reflection, notices).
        self.turn_state = TurnState()
        self.report: OutcomeReport | None = None

    async def run(self) -> SessionResult:
        """Loop until the model answers without tools or the budget ends the session."""
        text = ""
        self.turn_state.registered = self.run_budget.register()
        try:
            while (kind := self._next_kind()) is not None:
                response = await self._request(kind)
                text = response.text
                if kind == "reflection" or (kind == "work" and self._steered_meanwhile(response)):
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
            self.charged_turns,
            self.turn_state.turn_limit_reached,
            self.turn_state.run_budget_exhausted,
            self.usage,
            self.report,
            self.conversation(),
        )

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

    # -- budget ---------------------------------------------------------------

    @property
    def charged_turns(self) -> int:
        """Requests charged to the budget: this session's and its subagents'."""
        return self.turns_used + self.subagent_turns

    def charge_subagent(self, turns: int, usage: Usage) -> None:
        """Charge a finished subagent's requests and tokens to this session."""
        self.subagent_turns += turns
        self.usage += usage

    def _next_kind(self) -> TurnKind | None:
        """The kind of the next request, or None when the run budget allows none.

        The run budget keeps one request in reserve for the final turn of every
        running agent (``active`` counts this one too): a request is the final
        one when no more than that reserve is left. An agent that starts when the
        rest is already reserved for the others makes no request at all. So the
        limit is never exceeded and no parallel agent is cut off without a summary.
        """
        budget = self.run_budget
        # Tokens or cost used up: a running agent gets its final turn, a new one none.
        overspent = budget.overspent()
        if overspent is not None and self.turns_used == 0:
            self._run_budget_spent(overspent)
            self._unregister()
            self._warn(f"the {budget_name(budget, overspent)} is used up; no request made")
            return None
        granted, last = budget.reserve() if self.turn_state.registered else (False, False)
        if not granted:
            self._run_budget_spent("turns")
            self._unregister()
            self._warn(
                f"the {budget_name(budget, 'turns')} is used up or kept for the "
                "final turns of other agents; no request made"
            )
            return None
        turn = self.charged_turns + 1
        if turn >= self.config.max_turns:
            self.turn_state.turn_limit_reached = True
        if overspent is not None:
            self._run_budget_spent(overspent)
        if last:
            self._run_budget_spent("turns")
        if self.turn_state.turn_limit_reached or self.turn_state.run_budget_exhausted:
            self._unregister()  # its final request is taken: no reserve needed
            return "final"
        limit = self.config.sprint_limit
        if limit > 0 and self.turn_state.work_since_reflection >= limit:
            return "reflection"
        return "work"

    def _unregister(self) -> None:
        if self.turn_state.registered:
            self.turn_state.registered = False
            self.run_budget.unregister()

    def _run_budget_spent(self, kind: BudgetKind) -> None:
        self.turn_state.run_budget_exhausted = True
        self.run_budget.mark_exhausted(kind)

    def _add_turn_messages(self, kind: TurnKind, steered: list[str]) -> None:
        """The note that goes with this request: reflection, final, resume or budget notice.

        Notes for one request go out as one user message. A work turn right after a
        reflection always gets one: otherwise the request would end with the model's
        own reflection, which a Messages-API provider takes as a prefill to continue
        and an OpenAI-compatible server simply continues.
        """
        used = self.charged_turns
        notes: list[str] = [*steered]
        if kind == "reflection":
            remaining = self.config.max_turns - used
            sprint = self.config.sprint_limit
            notes.append(
                prompts.reflection_message(used=used, remaining=remaining, sprint_limit=sprint)
            )
        elif kind == "final":
            forced_by_turns = self.turn_state.turn_limit_reached
            reason = "turn budget" if forced_by_turns else budget_label(self.run_budget)
            notes.append(prompts.final_turn_note(reason=reason))
        else:
            if self.turn_state.after_reflection:
                notes.append(prompts.resume_after_reflection())
            if not self.turn_state.noticed and used >= math.ceil(NOTICE_AT * self.config.max_turns):
                self.turn_state.noticed = True
                notes.append(prompts.budget_note(used=used, max_turns=self.config.max_turns))
        self.turn_state.after_reflection = False
        if notes:
            self.messages.append(Message.user(redact.text("\n\n".join(notes))))

    # -- one request ------------------------------------------------------------

    async def _request(self, kind: TurnKind) -> ModelResponse:
        steered = self.steering.drain()
        if self.config.steering is not None:
            steered += [prompts.steering_note(text) for text in self.config.steering()]
        self._add_turn_messages(kind, steered)
        compaction = self._compact()
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
        done = compact(self.messages, self.config.context_window)
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
        if kind == "work":
            self.turn_state.work_since_reflection += 1
        elif kind == "reflection":
            self.turn_state.work_since_reflection = 0
            self.turn_state.after_reflection = True
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
        """Run the calls (read-only neighbours at once); answer each; warn on circles."""
        self.turn_state.loop_warning = None
        await run_calls(calls, overlaps=self._overlaps, execute=self._execute, done=self._answer)
        if self.turn_state.loop_warning is not None:
            # After every tool result: providers expect results right after the calls.
            self.messages.append(Message.user(self.turn_state.loop_warning))
            self._warn(self.turn_state.loop_warning)

    def _overlaps(self, call: ToolCall) -> bool:
        """Whether ``call`` may run alongside its read-only neighbours.

        With tool hooks every call runs alone, so hooks see one call at a time.
        """
        return not self.config.tool_hooks.active and self.tools.is_read_only(call.name)

    async def _execute(self, call: ToolCall) -> CallOutcome:
        if call.name == TOOL_NAME and self.config.report:
            answer = self._take_report(call)
            return CallOutcome(ToolResult(answer, is_error=self.report is None))
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
            call, self.tool_context, self.tools.execute, self._warn, self.emit
        )
        return CallOutcome(result, time.monotonic() - started)

    def _answer(self, call: ToolCall, outcome: CallOutcome) -> None:
        """Record one call's result and give it to the model."""
        result, duration = outcome.result, outcome.duration
        self.transcript.tool_output(
            turn=self.turns_used, name=call.name, arguments=call.arguments, output=result.output
        )
        if duration is None:  # the outcome report: answered, not a tool run
            self.messages.append(Message.tool(call, result.output, is_error=result.is_error))
            return
        self.emit(
            ToolCallCompleted(
                node=self.config.node_id,
                turn=self.turns_used,
                tool=call.name,
                arguments=call.arguments,
                output=result.output,
                is_error=result.is_error,
                duration=duration,
            )
        )
        shown = truncate_output(result.output, limits_for(call.name))
        self.messages.append(Message.tool(call, shown, is_error=result.is_error))
        found = self.loops.observe(call)
        if found is not None:
            self.turn_state.loop_warning = prompts.loop_warning(found.length, found.repeats)

    def _warn(self, message: str) -> None:
        self.emit(AgentWarning(node=self.config.node_id, turn=self.turns_used, message=message))
