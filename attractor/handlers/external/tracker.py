"""The steps of an agent CLI's stream as attractor's events, files and budget.

A :class:`Tracker` follows one node attempt: it numbers turns against the
node's budget and the run's, emits the same events as the built-in agent loop
(``agent_turn_started``/``_completed``, ``tool_call_started`` as soon as the
CLI reports a call, ``tool_call_completed`` with its result), appends to
transcript.jsonl and tools.log, sums usage and cost, and says when the CLI
must be stopped (a turn past the budget).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import field
from typing import Any, Literal

from attractor.agent.report import report_from_text
from attractor.agent.run_budget import RunTurnBudget
from attractor.agent.session import SessionResult
from attractor.agent.transcript import Transcript
from attractor.events import (
    AgentTurnCompleted,
    AgentTurnStarted,
    Event,
    ToolCallCompleted,
    ToolCallStarted,
    call_summary,
)
from attractor.handlers.external.steps import (
    Failed,
    Finished,
    Said,
    Step,
    TokensUsed,
    ToolDone,
    ToolUsed,
    TurnStarted,
)
from attractor.llm.types import ModelResponse, ToolCall, Usage
from attractor.valueclass import mutable

#: Why attractor stopped the CLI before it ended by itself.
StopReason = Literal["turn_limit", "run_budget"]


@mutable
class _Turn:
    number: int
    text: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None

    def add_text(self, said: Said) -> None:
        if said.fragment and self.text:
            self.text[-1] += said.text
        else:
            self.text.append(said.text)

    @property
    def joined(self) -> str:
        return "\n\n".join(t for t in self.text if t)


@mutable
class _Call:
    name: str
    arguments: dict[str, Any]
    turn: int
    started: float


class Tracker:
    """Follows one attempt's stream; see the module docstring."""

    def __init__(
        self,
        *,
        node_id: str,
        max_turns: int,
        cli_counts_turns: bool,
        emit: Callable[[Event], None],
        transcript: Transcript,
        run_budget: RunTurnBudget,
        title_summary: bool = False,
    ) -> None:
        self.node_id = node_id
        #: A call without a telling argument is summed up by its name (an ACP
        #: tool call's name is its title, a phrase).
        self.title_summary = title_summary
        self.max_turns = max_turns
        self.cli_counts_turns = cli_counts_turns
        self.emit = emit
        self.transcript = transcript
        self.run_budget = run_budget
        self.turns = 0
        self.usage = Usage()
        self.total_usage: Usage | None = None
        self.finished: Finished | None = None
        self.errors: list[Failed] = []
        self.stop: StopReason | None = None
        self.last_text = ""
        self._turn: _Turn | None = None
        self._calls: dict[str, _Call] = {}

    @property
    def total(self) -> Usage:
        """The run's usage: the CLI's own total when it gave one, else the turns' sum."""
        return self.total_usage if self.total_usage is not None else self.usage

    @property
    def auth_failed(self) -> bool:
        return any(error.auth for error in self.errors)

    def feed(self, steps: list[Step]) -> None:
        """Apply the steps of one stream line (nothing more once a stop is decided)."""
        for step in steps:
            if self.stop is not None:
                return
            self._apply(step)

    def _apply(self, step: Step) -> None:
        if isinstance(step, TurnStarted):
            self._start_turn()
        elif isinstance(step, Said):
            self._current().add_text(step)
        elif isinstance(step, ToolUsed):
            self._tool_used(step)
        elif isinstance(step, ToolDone):
            self._tool_done(step)
        elif isinstance(step, TokensUsed):
            self._tokens(step)
        elif isinstance(step, Failed):
            self.errors.append(step)
        else:
            self.finished = step

    def _current(self) -> _Turn:
        if self._turn is None:  # output before any turn marker still belongs to one
            self._start_turn()
        assert self._turn is not None
        return self._turn

    def _start_turn(self) -> None:
        self.close()
        if self.turns >= self.max_turns:
            self.stop = "turn_limit"
            return
        overspent = self.run_budget.overspent()
        if overspent is not None:
            # The run's tokens or dollars are used up: the CLI gets no further turn.
            self.run_budget.mark_exhausted(overspent)
            self.stop = "run_budget"
            return
        if not self.run_budget.take():
            self.stop = "run_budget"
            return
        self.turns += 1
        self._turn = _Turn(self.turns)
        self.emit(
            AgentTurnStarted(
                node=self.node_id, turn=self.turns, max_turns=self.max_turns, kind="work"
            )
        )

    def _tool_used(self, step: ToolUsed) -> None:
        turn = self._current()
        if self.stop is not None:  # the call would open a turn past the budget
            return
        turn.calls.append(ToolCall(step.id, step.name, step.arguments))
        self._calls[step.id] = _Call(step.name, step.arguments, turn.number, time.monotonic())
        summary = call_summary(step.arguments)
        if not summary and self.title_summary:
            summary = step.name[:200]
        # Before its result: a follower sees the call while it runs.
        self.emit(
            ToolCallStarted(node=self.node_id, turn=turn.number, tool=step.name, summary=summary)
        )

    def _tool_done(self, step: ToolDone) -> None:
        call = self._calls.pop(step.id, None)
        if call is None:
            return
        self.transcript.tool_output(
            turn=call.turn, name=call.name, arguments=call.arguments, output=step.output
        )
        self.emit(
            ToolCallCompleted(
                node=self.node_id,
                turn=call.turn,
                tool=call.name,
                arguments=call.arguments,
                output=step.output,
                is_error=step.is_error,
                duration=time.monotonic() - call.started,
            )
        )
        # The last allowed turn asked for tools: the CLI's next request would be
        # one too many, so a CLI that cannot count turns itself stops here.
        if not self.cli_counts_turns and self.turns >= self.max_turns and not self._calls:
            self.close()
            self.stop = "turn_limit"

    def _tokens(self, step: TokensUsed) -> None:
        usage = Usage(
            step.input_tokens,
            step.output_tokens,
            step.cache_read_tokens,
            step.cache_write_tokens,
            cost=step.cost_usd,
        )
        if step.total:
            # The run budget already has the turns' tokens: only what the CLI's
            # own total adds to them is new (its cost, usually).
            counted = self.total
            self.total_usage = usage
            self.run_budget.spend(usage.beyond(counted))
            return
        self.usage = self.usage + usage
        self.run_budget.spend(usage)
        if self._turn is not None:
            self._turn.usage = usage

    def close(self) -> None:
        """Record the turn in progress (transcript line and completion event)."""
        turn, self._turn = self._turn, None
        if turn is None:
            return
        if turn.joined:
            self.last_text = turn.joined
        response = ModelResponse(turn.joined, tuple(turn.calls), turn.usage)
        self.transcript.record(turn=turn.number, kind="work", tools_offered=[], response=response)
        usage = turn.usage or Usage()
        self.emit(
            AgentTurnCompleted(
                node=self.node_id,
                turn=turn.number,
                kind="work",
                tool_calls=len(turn.calls),
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens,
                cache_write_tokens=usage.cache_write_tokens,
                cost=usage.cost,
            )
        )

    @property
    def final_text(self) -> str:
        """The agent's final answer: the CLI's result text, else its last turn's text."""
        if self.finished is not None and self.finished.text:
            return self.finished.text
        return self.last_text

    @property
    def hit_turn_limit(self) -> bool:
        """Whether the agent stopped at its turn limit (ours, or its own ``max_turns``)."""
        return self.stop == "turn_limit" or (
            self.finished is not None and self.finished.ending == "max_turns"
        )

    def session_result(self) -> SessionResult:
        """What the agent did, as the built-in agent's session reports it."""
        text = self.final_text
        return SessionResult(
            text,
            self.turns,
            self.hit_turn_limit,
            self.stop == "run_budget",
            self.total,
            report_from_text(text),
        )
