"""What the Ray run task and the Ray branch tasks share: stop requests, waiting, errors, workers.

Stopping goes through the run directory: the driver writes ``.stop`` (or
``.stop-BRANCH`` for one branch) holding the status to stop as, and the task
stops its run exactly as a signal would stop a local one, killing its tool
processes. A task that does not end within the kill grace is force-cancelled.
"""

from __future__ import annotations

import errno
import json
import socket
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

import anyio
import ray
from ray.exceptions import RayTaskError

from attractor.errors import AttractorError, InputFileError, RunError, UsageError
from attractor.fileio.reads import read_head
from attractor.fileio.writes import write_text
from attractor.run_status import STOPPED, RunStatus, run_status
from attractor.valueclass import frozen

STOP = ".stop"
#: How often a task looks for a stop request.
POLL = 0.1
#: The first look for a finished task: the interval grows from this to
#: LAST_POLL, so a short task (a branch of one quick node) is seen ended within
#: milliseconds, and a long one within LAST_POLL.
FIRST_POLL = 0.002
LAST_POLL = 0.01
#: How long past the kill grace a stopped task may take to write its last checkpoint.
_FINISH_GRACE = 10.0
#: The stop file holds the status to stop as (one of STOPPED).
_STOP_LIMIT = 64


async def stop_requested(path: Path) -> RunStatus:
    """Return the status written to ``path`` once the driver writes it."""
    while True:
        text = _read_stop(path)
        if text is not None:
            status = run_status(text)
            return status if status in STOPPED else RunStatus.INTERRUPTED
        await anyio.sleep(POLL)


def _read_stop(path: Path) -> str | None:
    try:  # a few bytes the driver writes; anything else in its place reads as a stop
        return read_head(path, _STOP_LIMIT, "stop file").decode("utf-8", "replace").strip()
    except InputFileError as exc:
        return None if exc.errno == errno.ENOENT else RunStatus.INTERRUPTED


async def cancel_on_request(stop_file: Path, scope: anyio.CancelScope) -> None:
    await stop_requested(stop_file)
    scope.cancel()


async def wait_for(ref: Any, stop_file: Path, grace: float) -> Any:
    """The task's value; on cancellation, ask it to stop, then cancel it by force."""
    try:
        await _finished(ref)
    except BaseException:
        with anyio.CancelScope(shield=True):
            write_text(stop_file, RunStatus.INTERRUPTED)
            with anyio.move_on_after(grace + _FINISH_GRACE):
                await _finished(ref)
            ray.cancel(ref, force=True)
        raise
    return value_of(ref)


class _Waiter:
    """One wait for one task: woken when its task ended or when it is to lead."""

    def __init__(self, ref: Any) -> None:
        self.ref = ref
        self.ended = False
        self.wake = anyio.Event()


class _Waits(threading.local):
    """The waits of this thread's event loop, the one that looks for all first."""

    def __init__(self) -> None:
        self.waiters: list[_Waiter] = []


_WAITS = _Waits()


async def _finished(ref: Any) -> None:
    """Return once ``ref``'s task has ended.

    Every task an event loop waits for is looked at in one ``ray.wait`` call, made by
    the first waiter; the others sleep until it tells them their task ended, or
    until it leaves and the next one leads. A run task waiting for a hundred
    branches makes one call every LAST_POLL at most, not a hundred, so it can look
    often and see a short branch end within milliseconds.
    """
    waiters = _WAITS.waiters
    me = _Waiter(ref)
    waiters.append(me)
    delay = FIRST_POLL
    try:
        while not me.ended:
            if waiters[0] is not me:
                await me.wake.wait()
                me.wake = anyio.Event()
                continue
            pending = list(dict.fromkeys(w.ref for w in waiters))  # ray.wait wants each once
            ready = set(ray.wait(pending, num_returns=len(pending), timeout=0)[0])
            for waiter in waiters:
                if waiter.ref in ready:
                    waiter.ended = True
                    waiter.wake.set()
            if not me.ended:
                await anyio.sleep(delay)
                delay = min(LAST_POLL, delay * 1.5)
    finally:
        leading = waiters[0] is me
        waiters.remove(me)
        if leading and waiters:
            waiters[0].wake.set()  # the next one looks for all now


class Failure(Exception):
    """An error of the engine on a worker, as plain values (every error pickles then)."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message, exit_code)
        self.message, self.exit_code = message, exit_code


S = TypeVar("S")
R = TypeVar("R")


def run_remote(main: Callable[[S], Awaitable[R]], spec: S) -> R:
    """The body of a Ray task: ``main(spec)`` on its own event loop; an engine
    error travels back as plain values, for :func:`value_of` to raise again."""
    try:
        return anyio.run(main, spec)
    except AttractorError as exc:
        raise Failure(str(exc), exc.exit_code) from None


def value_of(ref: Any) -> Any:
    """The task's value; its error as the one-line error the CLI prints."""
    try:
        return ray.get(ref)
    except RayTaskError as exc:
        cause = exc.cause
        if isinstance(cause, Failure):
            error = UsageError if cause.exit_code == UsageError.exit_code else RunError
            raise error(cause.message) from None
        first = str(cause).strip().splitlines()[-1:] or ["no message"]
        raise RunError(f"the Ray task failed: {first[0]}") from None


T = TypeVar("T")


@frozen
class Held(Generic[T]):
    """A task's value, or the error it ended with, carried out of a task group."""

    result: T | None = None
    error: AttractorError | None = None

    def value(self) -> T:
        if self.error is not None:
            raise self.error
        return self.result  # type: ignore[return-value]


async def unwrapped(awaitable: Awaitable[T]) -> Held[T]:
    """Await ``awaitable`` and hold its error for after the task group it runs in.

    A task group wraps an error in an ExceptionGroup; the CLI prints an
    AttractorError as one line, and so needs it as it was raised.
    """
    try:
        return Held(await awaitable)
    except AttractorError as exc:
        return Held(error=exc)


def note_worker(path: Path) -> None:
    """Write which cluster node and host this task runs on."""
    node = ray.get_runtime_context().get_node_id()
    write_text(path, json.dumps({"node_id": node, "host": socket.gethostname()}) + "\n")


def unseen(run_dir: Path) -> RunError:
    """The error of a worker that does not see the run directory."""
    host = socket.gethostname()
    return RunError(
        f"the Ray worker on {host} cannot see the run directory {run_dir}: "
        "put the logs root (--logs-dir) on a filesystem every worker mounts (docs/ray.md)"
    )
