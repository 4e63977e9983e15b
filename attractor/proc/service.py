"""A helper process that lives as long as a step: started with pipes, stopped with the step.

An MCP server over stdio is such a process: the agent talks to it through its
stdin and stdout for the whole step. Like every command of a run it runs in a
process group of its own, written in the run's ledger (so the crash guard and
``attractor resume`` know of it), and when the step ends - normally, on its
timeout, on Ctrl-C or because it failed - the whole group is stopped in a
shielded scope: stdin closed, SIGTERM, SIGKILL after ``kill_grace`` seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anyio
from anyio.abc import Process

from attractor.proc.capped import CappedLog, copying
from attractor.proc.children import open_process
from attractor.proc.ledger import CURRENT as ledger_of_run
from attractor.proc.ledger import boot_clock

#: Seconds a service gets to exit by itself once its stdin is closed.
EXIT_GRACE = 1.0


@asynccontextmanager
async def open_service(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stderr_path: Path | None = None,
    kill_grace: float = 2.0,
    exit_grace: float = EXIT_GRACE,
    append: bool = True,
) -> AsyncIterator[Process]:
    """Start ``argv`` with piped stdin and stdout; stop its process group on exit.

    stderr goes to ``stderr_path`` (appended, or written anew without ``append``; at
    most :data:`~attractor.proc.capped.LOG_LIMIT` bytes of it, then a note), else to
    /dev/null. On exit stdin is closed and the process gets ``exit_grace`` seconds to
    end by itself before its group's SIGTERM (and SIGKILL ``kill_grace`` later).

    Raises:
        OSError: the program cannot be started (not found, not executable).
    """
    log = CappedLog.create(stderr_path, append=append) if stderr_path is not None else None
    try:
        before = boot_clock()
        process = await open_process(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE if log is not None else subprocess.DEVNULL,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
        )
    except BaseException:
        if log is not None:
            log.close()
        raise
    ledger = ledger_of_run.get()
    if ledger is not None:
        ledger.started(process.pid, (before, boot_clock()))
    async with copying(process.stderr, log):
        try:
            yield process
        finally:
            with anyio.CancelScope(shield=True):
                await stop(process, kill_grace, exit_grace)
                if ledger is not None:
                    ledger.ended(process.pid)


async def stop(process: Process, kill_grace: float, exit_grace: float = EXIT_GRACE) -> None:
    """Close stdin, give the process ``exit_grace`` seconds, then SIGTERM and SIGKILL its
    group (also when it exited by itself: whatever it left running in its group goes)."""
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(exit_grace if process.returncode is None else 0):
        await process.wait()
    _signal_group(process.pid, signal.SIGTERM)
    with anyio.move_on_after(kill_grace):
        await process.wait()
    _signal_group(process.pid, signal.SIGKILL)  # what it left in its group, too
    with anyio.move_on_after(kill_grace):
        await process.wait()
    with suppress(OSError):
        await process.aclose()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
