"""An ACP agent's process, and the SDK transport over its stdin and stdout.

The agent runs like a tool node's command (:mod:`attractor.proc.process`): in
its own process group, noted in the run's process ledger (the crash guard kills
it if the engine dies), and stopped with its whole group when the attempt ends
however it ends: stdin closed first (an agent exits on end of input), then
SIGTERM, then SIGKILL after the kill grace. Its stderr goes to
``agent_stderr.txt`` in the stage directory, capped on disk
(:mod:`attractor.proc.capped`).

ACP over stdio is newline-delimited JSON-RPC. The SDK's ``Connection`` does the
JSON-RPC; :class:`LineTransport` only moves whole lines, and ends the
connection at the first line that is not a JSON-RPC message (an agent printing
a log line to stdout), remembering it for the step's failure reason.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from attractor.proc.service import open_service
from attractor.valueclass import frozen

STDERR_FILE = "agent_stderr.txt"
#: The longest message line read (an agent's file read or diff can be large).
LINE_LIMIT = 64 * 1024 * 1024
#: How much of a bad line a failure reason quotes.
_QUOTE = 200


@frozen
class AgentCommand:
    """How to start the agent for one attempt."""

    argv: list[str]
    cwd: Path
    env: dict[str, str]
    stderr_path: Path
    kill_grace: float


@asynccontextmanager
async def agent_process(command: AgentCommand) -> AsyncIterator[Process]:
    """The running agent; it and its group are gone when the block ends (shielded): its
    stdin closed, ``kill_grace`` seconds to exit, then SIGTERM and SIGKILL.

    Raises:
        OSError: the program cannot be started (not found, not executable).
    """
    async with open_service(
        command.argv,
        cwd=command.cwd,
        env=command.env,
        stderr_path=command.stderr_path,
        kill_grace=command.kill_grace,
        exit_grace=command.kill_grace,
        append=False,
    ) as process:
        yield process


def stderr_tail(path: Path) -> str:
    """The agent's last non-empty stderr line (at most a few hundred characters)."""
    try:
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - 16 * 1024))
            data = fh.read()
    except OSError:
        return ""
    lines = [line.strip() for line in data.decode("utf-8", "replace").splitlines()]
    lines = [line for line in lines if line]
    return lines[-1][:300] if lines else ""


class LineTransport:
    """The SDK's message ``Transport`` over the agent's stdin and stdout."""

    def __init__(self, process: Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        #: The first line that was not a JSON-RPC message, quoted (None: none yet).
        self.garbage: str | None = None

    async def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"
        try:
            await self._stdin.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise ConnectionError("the agent's input is closed") from exc

    async def receive(self) -> dict[str, Any] | None:
        """The next message, or None at the end of the stream or at a bad line."""
        while True:
            try:
                line = await self._stdout.receive_until(b"\n", LINE_LIMIT)
            except anyio.DelimiterNotFound:
                self.garbage = f"a line longer than {LINE_LIMIT} bytes"
                return None
            except (anyio.EndOfStream, anyio.IncompleteRead):
                return None
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return None
            if not line.strip():
                continue
            message = _message(line)
            if message is None:
                self.garbage = line.decode("utf-8", "replace").strip()[:_QUOTE]
            return message

    async def close(self) -> None:
        with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            await self._stdin.aclose()


def _message(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return None
    return message
