"""attractor as the ACP client of one agent session.

Session updates feed the attempt's tracker (events, transcript, budget); a
decision to stop (the turn limit, the run's budget) sets :attr:`stopping`.
Permission requests get the node policy's answer. File reads and writes are
the node's execution environment's: walked by descriptor beneath the
workspace (symbolic links followed inside it), a write replacing a regular
file in one rename and ending before the session does (:mod:`.writes`);
terminals run in the
node's execution environment (:mod:`.terminals`). Every refusal reaches the
agent as a JSON-RPC error with a reason it can show, never as a crash.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Any

import anyio
from acp import Agent, RequestError
from acp.schema import (
    AllowedOutcome,
    CreateElicitationResponse,
    CreateTerminalResponse,
    DeniedOutcome,
    ElicitationMode,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    UsageUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from anyio.abc import TaskGroup

from attractor.agent.tools.base import run_daemon
from attractor.errors import PipelinePathError, ToolError
from attractor.events import (
    AgentWarning,
    DebugNote,
    InterviewCompleted,
    InterviewStarted,
)
from attractor.fileio.confine import confine_path
from attractor.handlers.acp.permissions import Policy
from attractor.handlers.acp.terminals import Terminals
from attractor.handlers.acp.updates import UpdateReader
from attractor.handlers.acp.writes import Writes
from attractor.handlers.external.tracker import Tracker
from attractor.handlers.interviewer import AnswerValue, Interviewer, Question, QuestionType
from attractor.llm.types import Usage
from attractor.proc.environment import ExecutionEnvironment

#: The largest file the agent may read through attractor.
READ_LIMIT = 16 * 1024 * 1024


class AttractorClient:
    """The ``acp.Client`` of one attempt (see the module docstring)."""

    def __init__(
        self,
        *,
        node_id: str,
        workdir: Path,
        environment: ExecutionEnvironment,
        policy: Policy,
        tracker: Tracker,
        terminals: Terminals,
        task_group: TaskGroup,
        interviewer: Interviewer | None = None,
    ) -> None:
        self.node_id = node_id
        self.workdir = workdir
        self.environment = environment
        self.policy = policy
        self.tracker = tracker
        self.terminals = terminals
        #: The agent's file writes, run in the session's ``task_group``.
        self.writes = Writes(task_group, self._warn)
        self.interviewer = interviewer
        self.reader = UpdateReader()
        #: Set once attractor decided the agent must stop (``tracker.stop``).
        self.stopping = anyio.Event()
        self._cost_seen = 0.0
        #: The command line of the execute tool call a person just allowed: a terminal
        #: that runs exactly it needs no second question (None: none, or not known).
        self._person_allowed_command: str | None = None

    # -- session updates -----------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        # No await before the tracker: updates are applied in the order they came.
        # The tracker emits tool_call_started for each tool call it is told of.
        self.tracker.feed(self.reader.steps(update))
        if isinstance(update, UsageUpdate) and update.cost is not None:
            self._cost(update.cost.amount, update.cost.currency)
        if self.tracker.stop is not None:
            self.stopping.set()

    def _cost(self, amount: float, currency: str) -> None:
        """The session's running cost: what it adds since the last report is spent."""
        if currency.upper() != "USD":
            note = f"ACP agent reported its cost in {currency}; only USD counts in budgets"
            self.tracker.emit(DebugNote(node=self.node_id, message=note))
            return
        added = amount - self._cost_seen
        if added <= 0:
            return
        self._cost_seen = amount
        extra = Usage(cost=added)
        self.tracker.usage = self.tracker.usage + extra
        self.tracker.run_budget.spend(extra)
        overspent = self.tracker.run_budget.overspent()
        if overspent is not None and self.tracker.stop is None:
            self.tracker.run_budget.mark_exhausted(overspent)
            self.tracker.close()
            self.tracker.stop = "run_budget"

    # -- permissions ---------------------------------------------------------

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        kind = tool_call.kind or self.reader.kinds.get(tool_call.tool_call_id, "other")
        title = tool_call.title or tool_call.tool_call_id
        if self.stopping.is_set():
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        decision = self.policy.decide(kind)
        allowed = decision == "allow"
        if decision == "ask":
            allowed = await self._ask(f"The agent asks for a tool call of kind {kind}: {title}")
            raw = tool_call.raw_input
            if raw is None:
                raw = self.reader.inputs.get(tool_call.tool_call_id)
            self._person_allowed_command = (
                command_of(raw) if allowed and kind == "execute" else None
            )
        self.tracker.transcript.tool_output(
            turn=self.tracker.turns,
            name="permission",
            arguments={"tool": title, "kind": kind, "policy": self.policy.name},
            output="allowed" if allowed else "refused",
        )
        if not allowed:
            self._warn(f"refused {kind} tool call {title!r} (acp_permissions={self.policy.name})")
        return answer(options, allowed)

    async def _ask(self, text: str) -> bool:
        """A person's yes or no through the run's interviewer (no one to ask: no)."""
        if self.interviewer is None:
            return False
        question = Question(
            f"{text}. Allow it?",
            type=QuestionType.YES_NO,
            stage=self.node_id,
            metadata={"acp_permissions": self.policy.name},
        )
        self.tracker.emit(InterviewStarted(question=question.text, stage=self.node_id))
        started = time.monotonic()
        reply = await self.interviewer.ask(question)
        self.tracker.emit(
            InterviewCompleted(
                question=question.text, answer=reply.value, duration=time.monotonic() - started
            )
        )
        return reply.value == AnswerValue.YES

    def _warn(self, message: str) -> None:
        self.tracker.emit(AgentWarning(node=self.node_id, turn=self.tracker.turns, message=message))

    def _refuse(self, what: str, needed: str) -> RequestError:
        self._warn(f"refused {what} (acp_permissions={self.policy.name})")
        reason = (
            f"attractor's acp_permissions={self.policy.name} does not allow {what}; "
            f"the pipeline must set acp_permissions={needed} on the node"
        )
        return RequestError.invalid_request({"reason": reason})

    # -- files -----------------------------------------------------------------

    def _check_going(self) -> None:
        """Once attractor stopped the session, the agent's work through it is refused."""
        if self.stopping.is_set():
            reason = f"attractor stopped this session ({self.tracker.stop}); end the turn"
            raise RequestError.invalid_request({"reason": reason})

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self._check_going()
        try:
            # A daemon thread: a read stuck in a hung file system cannot hold the exit.
            data = await run_daemon(lambda: self.environment.read_file(path, READ_LIMIT))
        except ToolError as exc:
            raise RequestError.invalid_params({"path": path, "reason": str(exc)}) from None
        except OSError as exc:
            raise self._os_error(path, exc) from None
        text = data.decode("utf-8", errors="replace")
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start : None if limit is None else start + limit])
        return ReadTextFileResponse(content=text)

    def _path(self, path: str) -> Path:
        return self.workdir / path  # an absolute path stays as it is

    @staticmethod
    def _os_error(path: str, exc: OSError) -> RequestError:
        reason = f"{path}: {exc.strerror or exc}"
        return RequestError.internal_error({"path": path, "reason": reason})

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse:
        self._check_going()
        if not self.policy.writes:
            raise self._refuse(f"writing {path}", "allow_edits")
        data = content.encode("utf-8")
        try:
            await self.writes.run(path, lambda: self.environment.write_file(path, data))
        except ToolError as exc:
            raise RequestError.invalid_params({"path": path, "reason": str(exc)}) from None
        except OSError as exc:
            raise self._os_error(path, exc) from None
        return WriteTextFileResponse()

    # -- terminals -------------------------------------------------------------

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        self._check_going()
        commands = self.policy.commands
        approved, self._person_allowed_command = self._person_allowed_command, None
        if commands == "ask" and not runs_exactly(approved, command, args or []):
            line = shlex.join([command, *(args or [])])
            if not await self._ask(f"The agent asks to run the command `{line}`"):
                raise self._refuse(f"running {line} (the person said no)", "allow_all")
        elif commands == "refuse":
            raise self._refuse(f"running commands ({command})", "allow_all")
        try:
            where = confine_path(
                self._path(cwd or "."), [self.workdir], attribute="ACP cwd", node=self.node_id
            )
        except PipelinePathError as exc:
            raise RequestError.invalid_params({"cwd": cwd, "reason": str(exc)}) from None
        variables = {item.name: item.value for item in env or []}
        terminal_id = self.terminals.create(
            command, args or [], where, variables, output_byte_limit
        )
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        output, cut, ended = self.terminals.output(terminal_id)
        status = _exit(*self.terminals.status(terminal_id)) if ended else None
        return TerminalOutputResponse(output=output, truncated=cut, exit_status=status)

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        code, signal = await self.terminals.wait(terminal_id)
        return WaitForTerminalExitResponse(exit_code=code, signal=signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse:
        await self.terminals.kill(terminal_id)
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        await self.terminals.release(terminal_id)
        return ReleaseTerminalResponse()

    # -- what attractor does not offer -----------------------------------------

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    async def create_elicitation(
        self, message: str, mode: ElicitationMode, **kwargs: Any
    ) -> CreateElicitationResponse:
        # A node has no one to ask: a question for a person belongs in a human gate.
        raise RequestError.method_not_found("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    def on_connect(self, conn: Agent) -> None:
        return None


_SHELLS = frozenset({"sh", "bash", "zsh", "/bin/sh", "/bin/bash", "/usr/bin/bash", "/bin/zsh"})


def command_of(raw: Any) -> str | None:
    """The command line an execute tool call's raw input names, as one string
    (None when it names none attractor can tell)."""
    if isinstance(raw, str):
        return raw.strip() or None
    if not isinstance(raw, dict):
        return None
    command, args = raw.get("command"), raw.get("args")
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        return shlex.join(command)
    if not isinstance(command, str) or not command.strip():
        return None
    if isinstance(args, list) and args and all(isinstance(a, str) for a in args):
        return shlex.join([command, *args])
    return command.strip() if args in (None, []) else None


def runs_exactly(approved: str | None, command: str, args: list[str]) -> bool:
    """Whether a terminal of ``command`` and ``args`` runs the approved command line
    and nothing else (itself, or through ``sh -c``)."""
    if approved is None:
        return False
    if shlex.join([command, *args]) == approved or (not args and command.strip() == approved):
        return True
    return command in _SHELLS and len(args) == 2 and args[0] == "-c" and args[1] == approved


def _exit(code: int | None, signal: str | None) -> TerminalExitStatus:
    return TerminalExitStatus(exit_code=code, signal=signal)


def answer(options: list[PermissionOption], allowed: bool) -> RequestPermissionResponse:
    """The option that says yes once (or always), or no; cancelled when none fits."""
    wanted = ("allow_once", "allow_always") if allowed else ("reject_once", "reject_always")
    for kind in wanted:
        for option in options:
            if option.kind == kind:
                chosen = AllowedOutcome(outcome="selected", option_id=option.option_id)
                return RequestPermissionResponse(outcome=chosen)
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
