"""Ctrl-C, SIGTERM and SIGHUP mean 130, 143 and 129 from the first instant to exit.

Python's own SIGINT handler raises KeyboardInterrupt, which click turns into
``Aborted!`` and exit 1, the code reserved for a failed pipeline; SIGTERM and
SIGHUP kill the process with no word said. :func:`install` (the first thing
the entry point does, before click is even imported) replaces all three with a
handler that raises :class:`StopSignal`: a :class:`SystemExit` carrying the
shell's code, which neither click nor the event loop swallow. While a run goes,
the engine's own handlers take over (the run is saved as interrupted,
terminated or hung up), and put these back when the run's handling ends.

Inside an event loop the handler raises nothing: the signal may have cut into
one of the loop's callbacks (a child's exit or a thread's result being handed
over), which would then never finish. It has the loop cancel what :func:`run`
runs instead (every ``anyio.run`` of the CLI goes through it), and the
:class:`StopSignal` is raised once that has unwound; raising it out of the loop
would have asyncio cancel all its tasks at once, its own among them, and one that
connects a starting child's pipes, cancelled, leaves the wait for that child
without end (the process hung with no word said).

Python drops an exception raised where it cannot propagate: in a weakref
callback, a ``__del__`` or the import system's lock clean-up, any of which a
signal can interrupt. Such a stop would be lost and the run would go on, so the
handler also notes the signal: the entry point checks the note once click is
loaded, and :func:`missed` hands it to the engine's stop requests, which start
right after the engine's own handlers took over. Python would also print such a
dropped exception with its traceback ("Exception ignored in ..."); the hook
:func:`install` sets keeps quiet about a dropped stop, which is not lost.

Nothing here imports click or the engine: it must load in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any, TypeVar, cast

from attractor.run_status import STOP_SIGNALS, RunStatus

T = TypeVar("T")

#: signal -> (exit code, what the one line says)
STOPS: dict[int, tuple[int, str]] = {
    signal.SIGINT: (130, "interrupted (Ctrl-C)"),
    signal.SIGTERM: (143, "terminated (SIGTERM)"),
    signal.SIGHUP: (129, "hung up (SIGHUP)"),
}


class StopSignal(SystemExit):
    """Raised by the handler: exit with ``code`` after saying ``what`` on one line."""

    def __init__(self, signum: int) -> None:
        code, self.what = STOPS[signum]
        super().__init__(code)
        self.signum = signum


#: The last stop signal our handler took (None: none yet).
_taken: int | None = None


def _raise(signum: int, frame: FrameType | None) -> None:
    global _taken
    _taken = signum
    loop = _running_loop()
    if loop is not None:
        # Not here: the signal may have cut into one of the loop's callbacks (a child's
        # exit being handed over, say), which would then never finish and leave a task
        # waiting for it forever. The loop stops the work itself, from a callback.
        with contextlib.suppress(RuntimeError):  # a closed loop: raise at once
            loop.call_soon_threadsafe(_stop, signum)
            return
    raise StopSignal(signum)


#: The cancel scopes of the event loops :func:`run` runs, the innermost last.
_scopes: list[Any] = []


def _stop(signum: int) -> None:
    """In the event loop: cancel what :func:`run` runs (it raises the stop once that has
    unwound); outside of one, raise."""
    if not _scopes:
        raise StopSignal(signum)
    _scopes[-1].cancel()


def run(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``anyio.run(func, *args)``, stopped by a stop signal as a cancellation.

    A stop signal cancels ``func`` (its cleanup runs as for any cancellation: a
    child process being started finishes starting and is waited for), then raises
    :class:`StopSignal`. Raising it out of the event loop instead would leave asyncio
    cancelling every task at once, its own included: one that connects a starting
    child's pipes, cancelled, leaves the wait for that child without end.
    """
    import anyio

    async def cancellable() -> T | None:
        with anyio.CancelScope() as scope:
            _scopes.append(scope)
            try:
                return await func(*args)
            finally:
                _scopes.remove(scope)
        return None

    result = anyio.run(cancellable)
    check()  # cancelled: only a stop does that
    return cast(T, result)


def _running_loop() -> Any:
    """The event loop anyio runs in this thread, if any: asyncio's, looked up without
    importing asyncio (a handler must not load modules; none is loaded before a run)."""
    # Looked up by module name: a signal may land while asyncio itself is loading.
    running = getattr(sys.modules.get("asyncio.events"), "_get_running_loop", None)
    return None if running is None else running()


def check() -> None:
    """Raise the :class:`StopSignal` of a stop signal whose exception was dropped."""
    if _taken is not None:
        raise StopSignal(_taken)


async def missed() -> RunStatus:
    """The status to stop a run as when a stop signal came before the run and was lost.

    For the run's stop requests: it waits forever when no signal came (later
    ones reach the engine's own handlers).
    """
    import anyio

    if _taken is None:
        await anyio.sleep_forever()
    assert _taken is not None
    return STOP_SIGNALS[signal.Signals(_taken)]


_installed = False
#: Signals ignored when the process started (``nohup`` ignores SIGHUP, a shell
#: script's ``&`` SIGINT): they stay ignored, as Python leaves them.
_ignored: set[int] = set()


def _unraisable(info: sys.UnraisableHookArgs) -> None:
    """Python's report of an exception it dropped, except a stop (noted by the handler)."""
    if isinstance(info.exc_value, StopSignal):
        return
    _python_hook(info)


_python_hook = sys.unraisablehook


def install() -> None:
    """Make each stop signal raise :class:`StopSignal` (main thread only)."""
    global _installed
    if not _installed:
        sys.unraisablehook = _unraisable
    for signum in STOPS:
        if not _installed and signal.getsignal(signum) is signal.SIG_IGN:
            _ignored.add(signum)
        signal.signal(signum, signal.SIG_IGN if signum in _ignored else _raise)
    _installed = True


def settle(stop: StopSignal) -> int:
    """Say why the command stops, ignore further stop signals, and give the exit code.

    A second Ctrl-C while the line is written must not start another traceback;
    a terminal that went away (SIGHUP) must not turn the write into an error.
    """
    for signum in STOPS:
        signal.signal(signum, signal.SIG_IGN)
    with contextlib.suppress(Exception):
        sys.stderr.flush()  # what was written before, then the line
    with contextlib.suppress(OSError):
        # Straight to the descriptor: the signal may have cut a write to
        # sys.stderr short, leaving its buffer unusable for this one.
        os.write(2, f"error: {stop.what}\n".encode())
    code = stop.code
    return code if isinstance(code, int) else 1


def found_in(error: BaseException, seen: set[int] | None = None) -> StopSignal | None:
    """The StopSignal ``error`` is or holds.

    A task group wraps what its tasks raise; Python wraps an exception raised
    while a class is created (``__set_name__``) in a RuntimeError caused by it,
    and a signal can land there while a module loads. An exception's context
    may lead back to itself (an error raised while a task group handles it):
    each is looked at once.
    """
    seen = set() if seen is None else seen
    if id(error) in seen:
        return None
    seen.add(id(error))
    if isinstance(error, StopSignal):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = found_in(inner, seen)
            if found is not None:
                return found
    for earlier in (error.__cause__, error.__context__):
        if earlier is not None:
            found = found_in(earlier, seen)
            if found is not None:
                return found
    return None
