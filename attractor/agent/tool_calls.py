"""The tool calls of one work turn: run, answered in the conversation, recorded.

:class:`ToolCalls` runs a turn's calls (read-only neighbours at once, unless
tool hooks want to see one call at a time), answers the ``report_outcome`` call
itself, gives the model each result (truncated), records it in the transcript
and the event stream, and warns of circles of repeated calls once every result
is in.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from attractor.agent import prompts
from attractor.agent.loop_detect import LoopDetector
from attractor.agent.report import TOOL_NAME, ReportTaker
from attractor.agent.session_config import SessionConfig
from attractor.agent.tool_batches import run_calls
from attractor.agent.tools import ToolContext, ToolRegistry, ToolResult
from attractor.agent.transcript import Transcript
from attractor.agent.truncation import limits_for, truncate_output
from attractor.agent.turn_state import CallOutcome
from attractor.events import Event, ToolCallCompleted, ToolCallStarted, call_summary
from attractor.llm.types import Message, ToolCall


class ToolCalls:
    """Runs a session's tool calls; ``turn`` is the number of the request that made them."""

    def __init__(
        self,
        config: SessionConfig,
        tools: ToolRegistry,
        *,
        messages: list[Message],
        transcript: Transcript,
        reports: ReportTaker,
        emit: Callable[[Event], None],
        warn: Callable[[str], None],
        turn: Callable[[], int],
        loops: LoopDetector,
    ) -> None:
        self.config = config
        self.tools = tools
        self.messages = messages
        self.transcript = transcript
        self.reports = reports
        self.emit = emit
        self.warn = warn
        self.turn = turn
        self.loops = loops
        self.context = ToolContext(
            config.workdir, config.shell_timeout_cap, config.kill_grace, config.environment
        )
        #: The circle of repeated calls found in this batch, to warn of after it.
        self._loop_warning: str | None = None

    async def run(self, calls: tuple[ToolCall, ...]) -> None:
        """Run the calls (read-only neighbours at once); answer each; warn on circles."""
        self._loop_warning = None
        await run_calls(calls, overlaps=self._overlaps, execute=self._execute, done=self._answer)
        if self._loop_warning is not None:
            # After every tool result: providers expect results right after the calls.
            self.messages.append(Message.user(self._loop_warning))
            self.warn(self._loop_warning)

    def _overlaps(self, call: ToolCall) -> bool:
        """Whether ``call`` may run alongside its read-only neighbours.

        With tool hooks every call runs alone, so hooks see one call at a time.
        """
        return not self.config.tool_hooks.active and self.tools.is_read_only(call.name)

    async def _execute(self, call: ToolCall) -> CallOutcome:
        if call.name == TOOL_NAME and self.config.report:
            answer = self.reports.take(call.arguments)
            return CallOutcome(ToolResult(answer, is_error=self.reports.report is None))
        self.emit(
            ToolCallStarted(
                node=self.config.node_id,
                turn=self.turn(),
                tool=call.name,
                summary=call_summary(call.arguments),
            )
        )
        started = time.monotonic()
        result = await self.config.tool_hooks.run(
            call, self.context, self.tools.execute, self.warn, self.emit
        )
        return CallOutcome(result, time.monotonic() - started)

    def _answer(self, call: ToolCall, outcome: CallOutcome) -> None:
        """Record one call's result and give it to the model."""
        result, duration, turn = outcome.result, outcome.duration, self.turn()
        self.transcript.tool_output(
            turn=turn, name=call.name, arguments=call.arguments, output=result.output
        )
        if duration is None:  # the outcome report: answered, not a tool run
            self.messages.append(Message.tool(call, result.output, is_error=result.is_error))
            return
        self.emit(
            ToolCallCompleted(
                node=self.config.node_id,
                turn=turn,
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
            self._loop_warning = prompts.loop_warning(found.length, found.repeats)
