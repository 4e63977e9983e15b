"""The run's guard: a tiny process that kills the run's process groups if the engine dies.

Started by :class:`attractor.proc.ledger.ProcessLedger` as ``python -I -S guard.py``
in a session of its own, so that neither Ctrl-C at the terminal nor a signal to
the engine's process group reaches it. It reads ``+PGID`` and ``-PGID`` lines on
stdin. When stdin reaches end of file - the engine closed it, or the kernel did
because the engine died, SIGKILL included - it sends SIGTERM to every group
still listed, SIGKILL a moment later, and exits.

This file imports nothing of attractor's and nothing outside the standard
library: it runs with ``-S`` so that it starts in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

#: Seconds between SIGTERM and SIGKILL once the engine is gone.
GRACE = 2.0


def _alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _signal(groups: set[int], sig: int) -> None:
    for pgid in groups:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, sig)


def _read_groups() -> set[int]:
    """Follow the engine's notes until end of file; the groups still running then."""
    groups: set[int] = set()
    for line in sys.stdin:
        sign, _, number = line.strip().partition(" ")
        if number.isdigit():
            if sign == "+":
                groups.add(int(number))
            elif sign == "-":
                groups.discard(int(number))
    return groups


def main() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    groups = _read_groups()
    _signal(groups, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    while time.monotonic() < deadline and any(_alive(g) for g in groups):
        time.sleep(0.05)  # a standalone process with nothing else to wait on
    _signal(groups, signal.SIGKILL)


if __name__ == "__main__":
    main()
