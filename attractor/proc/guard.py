"""The run's guard: a tiny process that kills the run's process groups if the engine dies.

Started by :class:`attractor.proc.ledger.ProcessLedger` as ``python -I -S guard.py``
in a session of its own, so that neither Ctrl-C at the terminal nor a signal to
the engine's process group reaches it. It reads ``+PGID`` and ``-PGID`` lines on
stdin. When stdin reaches end of file - the engine closed it, or the kernel did
because the engine died, SIGKILL included - it sends SIGTERM to every group
still listed, SIGKILL a moment later, and exits.

It sleeps until the engine is gone and reads what the engine wrote only then,
and once every :data:`DRAIN_SECONDS` so the pipe never fills: a line left in
the pipe is as safe as a line read (the kernel keeps it after the writer dies),
and waking up for every command would cost each one two context switches on a
machine whose cores the commands need.

This file imports nothing of attractor's and nothing outside the standard
library: it runs with ``-S`` so that it starts in a few milliseconds.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time

#: Seconds between SIGTERM and SIGKILL once the engine is gone.
GRACE = 2.0
#: Seconds between two reads of the pipe while the engine lives.
DRAIN_SECONDS = 1.0


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
    fd = sys.stdin.fileno()
    os.set_blocking(fd, False)
    hangup = select.poll()
    hangup.register(fd, 0)  # no POLLIN: a write does not wake us, the writer's end does
    groups: set[int] = set()
    rest = b""
    while True:
        hangup.poll(DRAIN_SECONDS * 1000)
        data, ended = _drain(fd)
        lines = (rest + data).split(b"\n")
        rest = lines.pop()
        _apply(groups, lines)
        if ended:
            return groups


def _drain(fd: int) -> tuple[bytes, bool]:
    """What the pipe holds now, and whether the engine has closed it."""
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return b"".join(chunks), False
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)


def _apply(groups: set[int], lines: list[bytes]) -> None:
    for line in lines:
        sign, _, number = line.strip().partition(b" ")
        if number.isdigit():
            if sign == b"+":
                groups.add(int(number))
            elif sign == b"-":
                groups.discard(int(number))


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
