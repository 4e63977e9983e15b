"""The agent's file writes, finished before its session ends.

A write the agent asks for (``fs/write_text_file``) runs in a thread. The ACP
SDK stops the requests still open when the connection closes with a bare
``task.cancel()``, which anyio's shields do not hold back: the request ends at
once, and a write it started would land later, after the stage's checkpoint,
or in a work tree already put back. So each write runs in a task of the
session's task group, shielded, and the session's end waits for it: at most
the kill grace, once :meth:`Writes.settle` is called. A write still going then
(a file system that hangs) is left to its thread, a daemon that cannot keep the
process from exiting, with a warning.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from anyio.abc import TaskGroup

from attractor.agent.tools.base import run_daemon


class Writes:
    """The writes of one session, run in ``task_group``."""

    def __init__(self, task_group: TaskGroup, warn: Callable[[str], None]) -> None:
        self.task_group = task_group
        self.warn = warn
        #: The paths of the writes the session's end gave up on.
        self.abandoned: list[str] = []
        self._running: set[anyio.CancelScope] = set()
        self._settled_at: float | None = None
        self._grace = 0.0

    async def run(self, path: str, write: Callable[[], None]) -> None:
        """Do ``write`` (of ``path``) in a thread; what it raises is raised here.

        Cancelled, this returns at once; the write goes on till it ends or the
        session's end stops waiting for it.
        """
        done = anyio.Event()
        failed: list[Exception] = []
        self.task_group.start_soon(self._write, path, write, done, failed)
        await done.wait()
        if failed:
            raise failed[0]

    async def _write(
        self, path: str, write: Callable[[], None], done: anyio.Event, failed: list[Exception]
    ) -> None:
        with anyio.CancelScope(shield=True) as scope:
            if self._settled_at is not None:
                scope.deadline = self._settled_at
            self._running.add(scope)
            try:
                await run_daemon(write)
            except Exception as exc:  # handed to the request, which answers with it
                failed.append(exc)
            finally:
                self._running.discard(scope)
                done.set()
        if scope.cancelled_caught:
            self.abandoned.append(path)
            self.warn(
                f"the agent's write of {path} was still going {self._grace:g}s after its "
                "session ended: it may land in the work tree later"
            )

    def settle(self, within: float) -> None:
        """Wait for the writes still going at most ``within`` seconds from now."""
        self._grace = within
        self._settled_at = anyio.current_time() + within
        for scope in self._running:
            scope.deadline = min(scope.deadline, self._settled_at)
