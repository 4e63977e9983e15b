"""The agent's terminals: its commands, run in the node's execution environment.

A terminal is one command run like the built-in agent's shell tool runs one:
through the node's :class:`~attractor.proc.environment.ExecutionEnvironment`
(its env policy, its sandbox, its own process group), in a task of the
attempt's task group, so the node's end, timeout or Ctrl-C kills it. Output
(stdout and stderr together) goes to ``acp_terminals/ID.log`` in the stage
directory, at most :data:`~attractor.proc.capped.LOG_LIMIT` bytes of it (then a
note of what was left out), and is read back from there.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path

import anyio
from acp import RequestError
from anyio.abc import TaskGroup

from attractor.proc.capped import LOG_LIMIT
from attractor.proc.environment import ExecutionEnvironment
from attractor.valueclass import mutable

TERMINALS_DIR = "acp_terminals"
#: Output kept for an agent that names no limit.
DEFAULT_OUTPUT_LIMIT = 1024 * 1024


@mutable
class _Terminal:
    log: Path
    limit: int
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    done: anyio.Event = field(default_factory=anyio.Event)
    exit_code: int | None = None
    signal: str | None = None


class Terminals:
    """The terminals of one attempt, by id."""

    def __init__(
        self,
        environment: ExecutionEnvironment,
        folder: Path,
        task_group: TaskGroup,
        kill_grace: float,
    ) -> None:
        self.environment = environment
        self.folder = folder
        self.task_group = task_group
        self.kill_grace = kill_grace
        self._terminals: dict[str, _Terminal] = {}
        self._started = 0

    def create(
        self, command: str, args: list[str], cwd: Path, env: Mapping[str, str], limit: int | None
    ) -> str:
        """Start the command; its terminal id."""
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._started += 1
        terminal_id = f"term-{self._started}"
        line = shlex.join([command, *args]) if args else command
        terminal = _Terminal(self.folder / f"{terminal_id}.log", limit or DEFAULT_OUTPUT_LIMIT)
        self._terminals[terminal_id] = terminal
        self.task_group.start_soon(self._run, terminal, f"exec 2>&1; {line}", cwd, dict(env))
        return terminal_id

    async def _run(self, terminal: _Terminal, line: str, cwd: Path, env: dict[str, str]) -> None:
        try:
            with terminal.scope:
                result = await self.environment.run(
                    line,
                    cwd=cwd,
                    kill_grace=self.kill_grace,
                    extra_env=env,
                    stdout_path=terminal.log,
                    stdout_limit=LOG_LIMIT,
                )
                terminal.exit_code = result.returncode
        except OSError as exc:  # the sandbox or the shell could not start
            terminal.log.write_text(f"{exc}\n", encoding="utf-8")
            terminal.exit_code = 127
        else:
            if terminal.scope.cancelled_caught:
                terminal.signal = "SIGTERM"
        finally:
            terminal.done.set()

    def _get(self, terminal_id: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None:
            raise RequestError.invalid_params({"terminalId": terminal_id, "reason": "unknown"})
        return terminal

    def output(self, terminal_id: str) -> tuple[str, bool, bool]:
        """(output so far, whether it was cut to the limit, whether the command ended)."""
        terminal = self._get(terminal_id)
        ended = terminal.done.is_set()
        data, cut = _tail(terminal.log, terminal.limit)
        return data.decode("utf-8", "replace"), cut, ended

    def status(self, terminal_id: str) -> tuple[int | None, str | None]:
        terminal = self._get(terminal_id)
        return terminal.exit_code, terminal.signal

    async def wait(self, terminal_id: str) -> tuple[int | None, str | None]:
        terminal = self._get(terminal_id)
        await terminal.done.wait()
        return terminal.exit_code, terminal.signal

    async def kill(self, terminal_id: str) -> None:
        terminal = self._get(terminal_id)
        terminal.scope.cancel()
        await terminal.done.wait()

    async def release(self, terminal_id: str) -> None:
        await self.kill(terminal_id)
        self._terminals.pop(terminal_id, None)


def _tail(path: Path, limit: int) -> tuple[bytes, bool]:
    """The last ``limit`` bytes of ``path`` (from a whole character), and whether it had more."""
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - limit))
            data = fh.read(limit)
    except FileNotFoundError:
        return b"", False
    if size <= limit:
        return data, False
    return data.lstrip(bytes(range(0x80, 0xC0))), True  # the latest output matters most
