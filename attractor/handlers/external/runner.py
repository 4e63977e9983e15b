"""Run an agent CLI as a tool node runs its command, and read its stream as it grows.

The CLI runs under :func:`attractor.proc.process.run_process`: its own process
group, written in the run's process ledger, killed (SIGTERM, then SIGKILL after
the kill grace) when the node times out, the run's ``--timeout`` expires or the
user presses Ctrl-C, and when attractor stops it at the turn limit. Its stdout
goes to ``agent_stream.jsonl`` in the stage directory (the raw record of what
it said) and is read back line by line while it runs; stderr goes to
``agent_stderr.txt``; the prompt is its stdin.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from attractor.handlers.tool import redact_result
from attractor.proc.process import ProcessResult, run_process
from attractor.redact import scrub_files
from attractor.valueclass import frozen

STREAM_FILE = "agent_stream.jsonl"
STDERR_FILE = "agent_stderr.txt"
#: How often the growing stream file is read: quickly while it grows, calmly when quiet.
_POLL_FIRST, _POLL_MAX = 0.005, 0.1
#: A longer line than this is not a stream event (it is kept in the file, not parsed).
_LINE_LIMIT = 16 * 1024 * 1024


@frozen
class AgentProcess:
    """How to start the CLI for one attempt."""

    argv: list[str]
    workdir: Path
    stage_dir: Path
    prompt_file: Path
    kill_grace: float
    env: dict[str, str]


@frozen
class Ended:
    """How the CLI ended: ``result`` is None when attractor stopped it."""

    result: ProcessResult | None

    @property
    def returncode(self) -> int | None:
        return None if self.result is None else self.result.returncode

    @property
    def stderr_tail(self) -> str:
        return "" if self.result is None else self.result.stderr


async def run_agent(spec: AgentProcess, on_event: Callable[[dict[str, Any]], bool]) -> Ended:
    """Run the CLI; ``on_event`` gets each JSON line and returns True to stop the CLI."""
    stream_path = spec.stage_dir / STREAM_FILE
    stream_path.unlink(missing_ok=True)  # a retry's follower must not read the last attempt
    follower = _Follower(stream_path, on_event)
    result: ProcessResult | None = None
    try:
        async with anyio.create_task_group() as tg:
            process_scope = anyio.CancelScope()
            tg.start_soon(follower.follow, process_scope)
            with process_scope:
                result = await run_process(
                    shlex.join(spec.argv),
                    cwd=spec.workdir,
                    kill_grace=spec.kill_grace,
                    env=spec.env,
                    stdout_path=stream_path,
                    stderr_path=spec.stage_dir / STDERR_FILE,
                    stdin_path=spec.prompt_file,
                )
            follower.process_ended()
    finally:
        scrub_files((stream_path, spec.stage_dir / STDERR_FILE))  # read to the end by now
    if result is not None:
        result = redact_result(result)
    return Ended(None if process_scope.cancelled_caught else result)


class _Follower:
    """Reads complete lines from a file another process is still writing."""

    def __init__(self, path: Path, on_event: Callable[[dict[str, Any]], bool]) -> None:
        self.path = path
        self.on_event = on_event
        self._ended = anyio.Event()
        self._stopped = False
        self._offset = 0
        self._partial = b""

    def process_ended(self) -> None:
        self._ended.set()

    async def follow(self, process_scope: anyio.CancelScope) -> None:
        delay = _POLL_FIRST
        while True:
            ended = self._ended.is_set()  # read before the file: no line is missed
            grew = self._read(process_scope)
            if ended:
                self._line(self._partial, process_scope)  # a last line without newline
                return
            delay = _POLL_FIRST if grew else min(delay * 2, _POLL_MAX)
            with anyio.move_on_after(delay):
                await self._ended.wait()

    def _read(self, process_scope: anyio.CancelScope) -> bool:
        try:
            with self.path.open("rb") as fh:
                fh.seek(self._offset)
                data = fh.read()
        except FileNotFoundError:
            return False
        if not data:
            return False
        self._offset += len(data)
        *lines, self._partial = (self._partial + data).split(b"\n")
        if len(self._partial) > _LINE_LIMIT:  # no event is this long: drop it unread
            self._partial = b""
        for line in lines:
            self._line(line, process_scope)
        return True

    def _line(self, line: bytes, process_scope: anyio.CancelScope) -> None:
        if self._stopped or not line.strip() or len(line) > _LINE_LIMIT:
            return
        try:
            event = json.loads(line)
        except ValueError:
            return  # a CLI's stray non-JSON line (a warning) is kept in the file only
        if isinstance(event, dict) and self.on_event(event):
            self._stopped = True
            process_scope.cancel()
