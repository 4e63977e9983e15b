"""What the tests of this folder look at in /proc, and a cancellation timed to a start."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
import pytest


def children() -> set[int]:
    """This process's children: running, or ended and not yet awaited (zombies)."""
    me, found = str(os.getpid()), set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with suppress(OSError):  # gone meanwhile
                stat = (entry / "stat").read_text()
                # "pid (name) state ppid ...": the name may hold spaces and parentheses.
                if stat[stat.rindex(")") + 2 :].split()[1] == me:
                    found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (one only its parent can still reap)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


def outlived(pid: int, within: float = 20) -> bool:
    """Whether ``pid`` still runs ``within`` seconds from now; its group is then killed,
    so that a failing test leaves nothing behind either."""
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if not alive(pid):
        return False
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    return True


def cancel_once_started(monkeypatch: pytest.MonkeyPatch, scope: anyio.CancelScope) -> None:
    """Cancel ``scope`` the moment the next child has been made, before anything
    else its start does (asyncio, for one, connects its pipes after that)."""

    class Popen(subprocess.Popen[bytes]):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            scope.cancel()

    monkeypatch.setattr(subprocess, "Popen", Popen)
