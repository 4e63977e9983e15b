"""A stop signal whose exception Python drops (it landed in a weakref callback, a
``__del__``, the import system's lock clean-up) prints no traceback and still stops."""

from __future__ import annotations

import subprocess
import sys

_SCRIPT = """
import os, signal, weakref
from attractor.cli import stop_signals

stop_signals.install()

class Thing:
    pass

def callback(_ref):
    {action}

thing = Thing()
ref = weakref.ref(thing, callback)
del thing  # the callback runs here; what it raises is dropped
print("went on", flush=True)
stop_signals.check()
"""


def _run(action: str) -> subprocess.CompletedProcess[str]:
    code = _SCRIPT.format(action=action)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )


def test_a_dropped_stop_is_not_printed_and_still_stops() -> None:
    done = _run("os.kill(os.getpid(), signal.SIGTERM)")
    assert done.stdout == "went on\n"
    assert done.returncode == 143, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


def test_any_other_dropped_exception_is_still_reported() -> None:
    done = _run("raise ValueError('boom')")
    assert done.returncode == 0
    assert "Exception ignored" in done.stderr and "ValueError: boom" in done.stderr
