"""Tool call hooks: shell commands that run before and after each agent tool call.

A pre hook is a gate. It learns which tool the model wants to call and with
which arguments; exit status 0 lets the call run, anything else (a timeout or a
hook that cannot start included) skips it, and the model gets an error result
saying the hook blocked the call, with the end of the hook's output as the
reason. A post hook is an observer. It learns the call and its result; when it
fails, a warning is recorded and the result stands.

Both receive one JSON object on stdin and the same facts in environment
variables (see :func:`hook_env`). They run through the shell in the agent's
working directory, each in a process group of its own that dies with it
(:func:`attractor.proc.process.run_process`), for at most :data:`HOOK_TIMEOUT`
seconds. Every run is appended to ``hooks.log`` in the stage directory.

While a hook runs, its output goes to ``hook_stdout.txt`` and ``hook_stderr.txt``
in the stage directory (the latest hook's; ``hooks.log`` keeps each run's
tail), and the lines it writes are emitted as ``stage_output`` events of
streams ``hook_stdout``/``hook_stderr`` (batched, see
:mod:`attractor.proc.follow`), so ``attractor logs`` and the web page show a
slow hook as it works. The events carry the node's visit and attempt, which
the handler that starts the session puts in :class:`ToolHooks`.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from pathlib import Path
from typing import Any, Literal

from attractor.agent.tools.base import ToolContext, ToolResult
from attractor.events import Event, StageOutput
from attractor.fileio.writes import append_text, run_dir_mode
from attractor.llm.types import ToolCall
from attractor.proc.follow import Chunk, OutputFollower
from attractor.redact import scrub_files
from attractor.valueclass import frozen

Phase = Literal["pre", "post"]
Execute = Callable[[ToolCall, ToolContext], Awaitable[ToolResult]]
Warn = Callable[[str], None]
Emit = Callable[[Event], None]

#: The streams of a running hook's output and the stage files that hold the latest's.
HOOK_STREAMS = {"hook_stdout": "hook_stdout.txt", "hook_stderr": "hook_stderr.txt"}

#: Seconds a hook may run before its process group is killed (a pre hook then blocks).
HOOK_TIMEOUT = 30.0
#: Characters of the hook's output quoted back to the model and in warnings.
OUTPUT_TAIL = 2000
#: Characters of the hook's last output line quoted in a warning.
WARNING_LINE = 200
#: ``ATTRACTOR_TOOL_ARGS`` is left empty above this size (stdin always has it all).
ENV_ARGS_LIMIT = 32 * 1024


@frozen
class HookRun:
    """How one hook command ended."""

    phase: Phase
    returncode: int | None
    timed_out: bool
    output: str
    duration: float
    start_error: str = ""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.start_error

    def describe(self, timeout: float) -> str:
        """``exit code 1``, ``timed out after 30s`` or ``could not start: ...``."""
        if self.start_error:
            return f"could not start: {self.start_error}"
        if self.timed_out:
            return f"timed out after {timeout:g}s"
        return f"exit code {self.returncode}"

    def tail(self) -> str:
        text = self.output.strip()
        if len(text) <= OUTPUT_TAIL:
            return text
        return "[...]" + text[-OUTPUT_TAIL:]

    def last_line(self) -> str:
        """The hook's last line of output, for one-line warnings."""
        lines = [line.strip() for line in self.output.splitlines() if line.strip()]
        return lines[-1][:WARNING_LINE] if lines else ""


@frozen(kw_only=True)
class ToolHooks:
    """The hook commands of one session; empty strings mean no hook.

    Attributes:
        pre: Shell command run before each tool call; non-zero exit blocks it.
        post: Shell command run after each tool call; its failure is only recorded.
        timeout: Seconds each hook may run.
        node_id: The node the session works for (``ATTRACTOR_NODE_ID``).
        stage_dir: The node's stage directory (``ATTRACTOR_STAGE_DIR``, ``hooks.log``).
        visit: The node's visit, for the hook's ``stage_output`` events.
        attempt: The visit's attempt, likewise.
    """

    pre: str = ""
    post: str = ""
    timeout: float = HOOK_TIMEOUT
    node_id: str = ""
    stage_dir: Path | None = None
    visit: int = 1
    attempt: int = 1

    @property
    def active(self) -> bool:
        """Whether any hook command is set."""
        return bool(self.pre.strip() or self.post.strip())

    async def run(
        self,
        call: ToolCall,
        context: ToolContext,
        execute: Execute,
        warn: Warn,
        emit: Emit | None = None,
    ) -> ToolResult:
        """``execute(call, context)`` between the hooks; a failing pre hook skips it.

        ``emit`` receives the hooks' output lines as ``stage_output`` events
        while they run. Cancellation (the run's timeout, Ctrl-C) kills a running
        hook's group and propagates.
        """
        if self.pre.strip():
            gate = await self._run_hook("pre", self.pre, call, context, None, emit)
            if not gate.ok:
                warn(self._blocked_warning(call, gate))
                return ToolResult(self._blocked_answer(call, gate), is_error=True)
        result = await execute(call, context)
        if self.post.strip():
            audit = await self._run_hook("post", self.post, call, context, result, emit)
            if not audit.ok:
                warn(self._post_warning(call, audit))
        return result

    # -- one hook ---------------------------------------------------------------

    async def _run_hook(
        self,
        phase: Phase,
        command: str,
        call: ToolCall,
        context: ToolContext,
        result: ToolResult | None,
        emit: Emit | None,
    ) -> HookRun:
        payload = hook_payload(phase, call, self.node_id, result)
        env = hook_env(phase, call, self.node_id, self.stage_dir, result)
        files = self._output_files()
        try:
            with _stdin_file(payload) as stdin:
                async with self._following(files, emit):
                    ended = await context.commands().run(
                        command,
                        cwd=context.workdir,
                        timeout=self.timeout,
                        kill_grace=context.kill_grace,
                        extra_env=env,
                        stdout_path=files.get("hook_stdout"),
                        stderr_path=files.get("hook_stderr"),
                        stdin_path=stdin,
                    )
        except OSError as error:  # no such workdir, no processes left, a full disk
            run = HookRun(phase, None, False, "", 0.0, start_error=str(error))
        else:
            output = ended.stdout.strip("\n")
            if ended.stderr.strip():
                err = ended.stderr.strip("\n")
                output = f"{output}\n[stderr]\n{err}" if output.strip() else err
            run = HookRun(phase, ended.returncode, ended.timed_out, output, ended.duration)
        finally:
            scrub_files(files.values())  # written by the hook itself: no secret stays
        self._log(call, run)
        return run

    def _output_files(self) -> dict[str, Path]:
        """The files a hook writes its output to (none without a stage directory:
        then its output comes back through pipes, and is not streamed)."""
        if self.stage_dir is None:
            return {}
        with suppress(OSError):
            self.stage_dir.mkdir(mode=run_dir_mode(), parents=True, exist_ok=True)
        return {stream: self.stage_dir / name for stream, name in HOOK_STREAMS.items()}

    @asynccontextmanager
    async def _following(self, files: dict[str, Path], emit: Emit | None) -> AsyncIterator[None]:
        """While the block runs, ``emit`` each batch of lines the hook wrote."""
        if not files or emit is None:
            yield
            return
        with OutputFollower(files, self._sink(emit)).running():
            yield

    def _sink(self, emit: Emit) -> Callable[[Chunk], None]:
        def send(chunk: Chunk) -> None:
            emit(
                StageOutput(
                    node=self.node_id,
                    visit=self.visit,
                    attempt=self.attempt,
                    stream=chunk.stream,
                    text=chunk.shown(HOOK_STREAMS[chunk.stream]),
                    offset=chunk.offset,
                    skipped=chunk.skipped,
                )
            )

        return send

    def _log(self, call: ToolCall, run: HookRun) -> None:
        """Append the run to ``hooks.log`` (best effort: a log must not fail the call)."""
        if self.stage_dir is None:
            return
        verdict = "ok" if run.ok else ("blocked the call" if run.phase == "pre" else "failed")
        head = f"--- {run.phase} {call.name}: {run.describe(self.timeout)}, {verdict}"
        entry = f"{head} ({run.duration:.2f}s)\n" + (f"{run.tail()}\n" if run.output else "")
        with suppress(OSError):
            self.stage_dir.mkdir(mode=run_dir_mode(), parents=True, exist_ok=True)
            append_text(self.stage_dir / "hooks.log", entry)

    # -- what the model and the event stream are told ----------------------------

    def _blocked_answer(self, call: ToolCall, run: HookRun) -> str:
        why = run.tail() or "(the hook printed nothing)"
        return (
            f"{call.name} was not run: the tool_hooks.pre hook blocked this call "
            f"({run.describe(self.timeout)}). Hook output:\n{why}"
        )

    def _blocked_warning(self, call: ToolCall, run: HookRun) -> str:
        why = f": {run.last_line()}" if run.last_line() else ""
        return f"tool_hooks.pre blocked {call.name} ({run.describe(self.timeout)}){why}"

    def _post_warning(self, call: ToolCall, run: HookRun) -> str:
        why = f": {run.last_line()}" if run.last_line() else ""
        return (
            f"tool_hooks.post failed after {call.name} ({run.describe(self.timeout)}); "
            f"the tool result stands{why}"
        )


def hook_payload(
    phase: Phase, call: ToolCall, node_id: str, result: ToolResult | None
) -> dict[str, Any]:
    """The JSON object a hook reads on stdin."""
    payload: dict[str, Any] = {
        "phase": phase,
        "name": call.name,
        "arguments": call.arguments,
        "call_id": call.id,
        "node_id": node_id,
    }
    if result is not None:
        payload["output"] = result.output
        payload["is_error"] = result.is_error
    return payload


def hook_env(
    phase: Phase,
    call: ToolCall,
    node_id: str,
    stage_dir: Path | None,
    result: ToolResult | None,
) -> dict[str, str]:
    """The ``ATTRACTOR_*`` facts of the call, added to the step's filtered environment.

    The tool's output is only on stdin (it may be far larger than an environment
    variable can hold); so are arguments over :data:`ENV_ARGS_LIMIT` characters.
    """
    args = json.dumps(call.arguments, ensure_ascii=False)
    extra = {
        "ATTRACTOR_HOOK_PHASE": phase,
        "ATTRACTOR_TOOL_NAME": call.name,
        "ATTRACTOR_TOOL_ARGS": args if len(args) <= ENV_ARGS_LIMIT else "",
        "ATTRACTOR_TOOL_CALL_ID": call.id,
        "ATTRACTOR_NODE_ID": node_id,
        "ATTRACTOR_NODE": node_id,  # the name tool nodes' commands see
    }
    if stage_dir is not None:
        extra["ATTRACTOR_STAGE_DIR"] = str(stage_dir)
    if result is not None:
        extra["ATTRACTOR_TOOL_IS_ERROR"] = "true" if result.is_error else "false"
    return extra


@contextmanager
def _stdin_file(payload: dict[str, Any]) -> Iterator[Path]:
    """A temporary file holding ``payload`` as JSON, removed afterwards.

    The hook reads it as its stdin (a file, not a pipe: nothing has to feed it
    while the hook runs).
    """
    fd, name = tempfile.mkstemp(prefix="attractor-hook-", suffix=".json")
    path = Path(name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(payload, fh, ensure_ascii=False)
        yield path
    finally:
        with suppress(OSError):
            path.unlink()
