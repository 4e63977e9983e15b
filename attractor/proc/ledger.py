"""Every process group a run starts: written down, guarded, and stopped on resume.

Three layers make sure that no command outlives the run that started it:

1. :func:`attractor.proc.process.run_process` stops its group when its step
   ends, times out or is cancelled (the normal path, and Ctrl-C/SIGTERM/SIGHUP).
2. While a run has commands running, a guard process (:mod:`attractor.proc.guard`)
   holds the read end of a pipe from the engine. If the engine dies - SIGKILL,
   an out-of-memory kill - the pipe closes and the guard kills every group
   still listed.
3. Each group is also appended to ``processes.jsonl`` in the run directory with
   its leader's start time. ``attractor resume`` calls :func:`stop_survivors`
   before it re-runs the interrupted node, so even a group the guard could not
   stop never runs concurrently with its own re-run. A group is recognised by
   its id *and* its leader's start time, so a reused pid is never signalled.
   The start time is not read back from ``/proc`` (a read that waits on the
   command's own start-up): the caller gives the moments just before and just
   after it started the command, and the ledger writes that window in clock
   ticks (``start``, ``start_max``). A process with that id that started in the
   window can only be the one started then: its id was not free for anyone else
   until the engine reaped it, after the window.

The ledger of the current run is found through a context variable, which every
task of the run inherits.
"""

from __future__ import annotations

import contextvars
import fcntl
import json
import math
import os
import signal
import stat
import subprocess
import sys
import time
from contextlib import suppress
from pathlib import Path

from attractor.proc.files import file_mode

#: The ledger of the run this task belongs to (None outside a run).
CURRENT: contextvars.ContextVar[ProcessLedger | None] = contextvars.ContextVar(
    "attractor_process_ledger", default=None
)

_GUARD = Path(__file__).with_name("guard.py")
#: More than any run writes (two short lines per command); a bound for damaged files.
_LEDGER_LIMIT = 64 * 1024 * 1024
_APPEND = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
#: The guard's pipe: room for tens of thousands of notes between two of its reads.
_PIPE_BYTES = 1024 * 1024


def _stat(pid: int | str) -> list[bytes] | None:
    """Fields 3 onwards of ``/proc/PID/stat`` (state, ppid, pgrp, ...), None if gone."""
    try:  # plain os calls: this runs for every command the run starts
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
        try:
            stat = os.read(fd, 4096)
        finally:
            os.close(fd)
    except OSError:
        return None
    # Field 2 (the command name) may hold spaces and parentheses: split after the last ')'.
    return stat[stat.rfind(b")") + 2 :].split()


#: Clock ticks per second of the start times in ``/proc/PID/stat``.
_TICKS = os.sysconf("SC_CLK_TCK")


def boot_clock() -> float:
    """Seconds since boot, the clock of the start times in ``/proc/PID/stat``."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def start_time(pid: int) -> int | None:
    """The start time of process ``pid`` in clock ticks since boot, None if it is gone."""
    fields = _stat(pid)
    try:
        return int(fields[19]) if fields else None  # field 22 of the whole line
    except (IndexError, ValueError):
        return None


class ProcessLedger:
    """Records the process groups of one run and keeps a guard on them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self._guard: subprocess.Popen[bytes] | None = None
        self.running: set[int] = set()

    def started(self, pgid: int, between: tuple[float, float] | None = None) -> None:
        """Note a new group (its leader is ``pgid``) before anything else happens.

        ``between``: :func:`boot_clock` just before and just after the leader was
        started (else its start time is read from ``/proc``). The guard hears of
        the group first: once processes.jsonl names a group, the guard already
        watches it.
        """
        self.running.add(pgid)
        self._tell_guard(b"+ %d\n" % pgid)
        if between is None:
            start = json.dumps(start_time(pgid))
            window = ""
        else:
            start = str(math.floor(between[0] * _TICKS))
            window = f', "start_max": {math.ceil(between[1] * _TICKS)}'
        self._note(f'{{"pgid": {pgid}, "start": {start}{window}, "at": {time.time()!r}}}\n')

    def ended(self, pgid: int) -> None:
        """The group is stopped and reaped."""
        self.running.discard(pgid)
        self._note(f'{{"pgid": {pgid}, "ended": true}}\n')
        self._tell_guard(b"- %d\n" % pgid)

    def close(self) -> None:
        """Stop the guard (nothing left for it to do) and close the file."""
        guard, self._guard = self._guard, None
        if guard is not None:
            with suppress(OSError):
                if guard.stdin is not None:
                    guard.stdin.close()
            with suppress(subprocess.TimeoutExpired):
                guard.wait(timeout=5)
        fd, self._fd = self._fd, None
        if fd is not None:
            with suppress(OSError):
                os.close(fd)

    def _note(self, line: str) -> None:
        """Append one JSON line (one unbuffered write: on disk as soon as the engine
        could be killed)."""
        try:
            if self._fd is None:
                self._fd = os.open(self.path, _APPEND, file_mode())
            os.write(self._fd, line.encode())
        except OSError:
            pass  # the guard and the step's own cleanup still stand

    def _tell_guard(self, line: bytes) -> None:
        if self._guard is None:
            self._guard = _start_guard()
        if self._guard is not None and self._guard.stdin is not None:
            with suppress(OSError, ValueError):  # ValueError: the pipe is closed already
                os.write(self._guard.stdin.fileno(), line)  # nothing is ever buffered on it


def _start_guard() -> subprocess.Popen[bytes] | None:
    try:
        guard = subprocess.Popen(
            [sys.executable, "-I", "-S", str(_GUARD)],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            close_fds=True,
        )
    except OSError:
        return None
    if guard.stdin is not None:
        # The guard reads only now and then (see guard.py): room for a burst of notes.
        with suppress(OSError):
            fcntl.fcntl(guard.stdin.fileno(), fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
    return guard


def _group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes whose process group is ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(entry)
            if fields and len(fields) > 2 and fields[0] != b"Z" and fields[2] == b"%d" % pgid:
                members.append(int(entry))
    return members


def _is_ours(pgid: int, start: int | None, start_max: int | None) -> bool:
    """Whether group ``pgid`` still holds processes of the group the ledger recorded.

    While a group has a member its id cannot be handed to a new process. So: if a
    process with pid ``pgid`` exists, it is our leader only with the recorded
    start time (or one in the recorded window); if none exists, any member left
    is one of ours.
    """
    now = start_time(pgid)
    if now is not None:
        if start is None:
            return False
        return start <= now <= start_max if start_max is not None else now == start
    return bool(_group_members(pgid))


def survivors(path: Path) -> list[int]:
    """Groups recorded in ``path`` that were never seen to end and still run."""
    started: dict[int, tuple[int | None, int | None]] = {}
    try:
        # Resume has checked it is a regular file; O_NONBLOCK and fstat in case it
        # changed since (a FIFO would block the read for good).
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return []
        with os.fdopen(os.dup(fd), "rb") as fh:
            lines = fh.read(_LEDGER_LIMIT).decode("utf-8", "replace").splitlines()
    except OSError:
        return []
    finally:
        os.close(fd)
    for line in lines:
        with suppress(ValueError, TypeError, AttributeError, KeyError, RecursionError):
            entry = json.loads(line)
            pgid = int(entry["pgid"])
            if entry.get("ended"):
                started.pop(pgid, None)
            else:
                started[pgid] = (_count(entry.get("start")), _count(entry.get("start_max")))
    return [pgid for pgid, (start, end) in started.items() if _is_ours(pgid, start, end)]


def _count(value: object) -> int | None:
    return value if type(value) is int else None


def stop_survivors(path: Path, grace: float = 2.0) -> list[int]:
    """SIGTERM, then SIGKILL, every surviving group of a previous process; wait until gone.

    Returns the groups that were found running.
    """
    found = survivors(path)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pgid in found:
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(_group_members(g) for g in found):
            time.sleep(0.02)  # runs before the resumed run starts; nothing else to wait on
    return found
