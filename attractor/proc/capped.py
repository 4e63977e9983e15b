"""Logs of helper processes, capped on disk: an MCP server's or ACP agent's stderr,
an ACP terminal's output.

Such a process may write for as long as its step lasts; a chatty or looping one
must not fill the disk. Its output comes through a pipe and :class:`CappedLog`
keeps the first :data:`LOG_LIMIT` bytes, then one line that says how much was
left out (written when the log is closed, with the count), and reads the rest
only to drop it, so the process never blocks on a full pipe.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream

from attractor.ownfiles import open_own, own_folder
from attractor.proc.files import file_mode

#: The most of one helper's log kept on disk (bytes).
LOG_LIMIT = 16 * 1024 * 1024
#: Seconds the copy gets to read what a stopped process left in its pipe.
DRAIN_GRACE = 1.0


class CappedLog:
    """A log file that keeps the first ``limit`` bytes written to it."""

    def __init__(self, fd: int, limit: int = LOG_LIMIT, *, owned: bool = True) -> None:
        self.fd = fd
        self.limit = limit
        self.written = 0
        self.dropped = 0
        self._owned = owned
        self._closed = False

    @classmethod
    def create(cls, path: Path, limit: int = LOG_LIMIT, *, append: bool = False) -> CappedLog:
        """A new log at ``path`` (its folder made if missing); appended to when ``append``."""
        path.parent.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder = own_folder(path.parent, 0o700)  # a link a step put there is not followed
        try:
            mode = os.O_APPEND if append else os.O_TRUNC
            fd = open_own(path.name, os.O_WRONLY | os.O_CREAT | mode, file_mode(), dir_fd=folder)
        finally:
            os.close(folder)
        return cls(fd, limit)

    def write(self, chunk: bytes) -> None:
        """Keep what fits under the limit; count the rest."""
        room = self.limit - self.written
        kept = chunk[: max(room, 0)]
        if kept:
            with suppress(OSError):  # a full disk loses the log, never the step
                os.write(self.fd, kept)
            self.written += len(kept)
        self.dropped += len(chunk) - len(kept)

    def close(self) -> None:
        """Write the note of what was left out (if anything was), then close."""
        if self._closed:
            return
        self._closed = True
        if self.dropped:
            note = (
                f"\n[attractor: this log was cut at {self.limit} bytes; "
                f"{self.dropped} more bytes were left out]\n"
            )
            with suppress(OSError):
                os.write(self.fd, note.encode())
        if self._owned:
            os.close(self.fd)


async def copy_into(stream: ByteReceiveStream, log: CappedLog) -> None:
    """Everything ``stream`` gives, into ``log``, until it ends."""
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        async for chunk in stream:
            log.write(chunk)


@asynccontextmanager
async def copying(stream: ByteReceiveStream | None, log: CappedLog | None) -> AsyncIterator[None]:
    """Copy ``stream`` into ``log`` while the block runs, and closes ``log`` after it.

    On the way out the copy gets :data:`DRAIN_GRACE` seconds to read what is
    left (the process is stopped by then; a descendant that escaped its group
    could keep the pipe open forever). An error of the block comes out as it
    came, not wrapped in an exception group.
    """
    if stream is None or log is None:
        try:
            yield
        finally:
            if log is not None:
                log.close()
        return
    failure: Exception | None = None
    done = anyio.Event()

    async def copy() -> None:
        try:
            await copy_into(stream, log)
        finally:
            done.set()

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(copy)
            try:
                yield
            except Exception as error:  # raised below, after the group
                failure = error
            finally:
                with anyio.CancelScope(shield=True), anyio.move_on_after(DRAIN_GRACE):
                    await done.wait()
                group.cancel_scope.cancel()
    finally:
        log.close()
    if failure is not None:
        raise failure
