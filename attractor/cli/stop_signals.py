"""Ctrl-C, SIGTERM and SIGHUP mean 130, 143 and 129 from the first instant to exit.

Python's own SIGINT handler raises KeyboardInterrupt, which click turns into
``Aborted!`` and exit 1, the code reserved for a failed pipeline; SIGTERM and
SIGHUP kill the process with no word said. :func:`install` (the first thing
the entry point does, before click is even imported) replaces all three with a
handler that raises :class:`StopSignal`: a :class:`SystemExit` carrying the
shell's code, which neither click nor the event loop swallow. While a run goes,
the engine's own handlers take over (the run is saved as interrupted,
terminated or hung up); asyncio puts the defaults back when they are removed,
so :func:`install` is called again after the run.

Nothing here imports click or the engine: it must load in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from types import FrameType

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


def _raise(signum: int, frame: FrameType | None) -> None:
    raise StopSignal(signum)


_installed = False
#: Signals ignored when the process started (``nohup`` ignores SIGHUP, a shell
#: script's ``&`` SIGINT): they stay ignored, as Python leaves them.
_ignored: set[int] = set()


def install() -> None:
    """Make each stop signal raise :class:`StopSignal` (main thread only)."""
    global _installed
    for signum in STOPS:
        if not _installed and signal.getsignal(signum) is signal.SIG_IGN:
            _ignored.add(signum)
        signal.signal(signum, signal.SIG_IGN if signum in _ignored else _raise)
    _installed = True


def reinstall() -> None:
    """:func:`install` again after a run, if the entry point installed the handlers.

    In-process callers (click's test runner, the library) keep their own handlers.
    """
    if _installed:
        install()


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


def found_in(error: BaseException) -> StopSignal | None:
    """The StopSignal ``error`` is or holds (a task group wraps what its tasks raise)."""
    if isinstance(error, StopSignal):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = found_in(inner)
            if found is not None:
                return found
    return None
