"""The process ledger: which recorded groups resume may stop, recognised by id and start time."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from attractor.proc.ledger import ProcessLedger, boot_clock, start_time, stop_survivors, survivors
from tests.proc.prockit import outlived


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    child = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        yield child
    finally:
        child.kill()
        child.wait()


def _started(tmp_path: Path, pid: int, between: tuple[float, float] | None) -> Path:
    """The ledger as an engine killed just after starting ``pid`` leaves it."""
    ledger = ProcessLedger(tmp_path / "processes.jsonl")
    left = tmp_path / "left.jsonl"
    try:
        ledger.started(pid, between)
        left.write_bytes(ledger.path.read_bytes())
        ledger.ended(pid)  # so that this ledger's own guard leaves the process alone
    finally:
        ledger.close()
    return left


def test_a_group_started_in_the_noted_window_is_stopped(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    # The window the engine notes: the boot clock around the start (here, around now).
    before = boot_clock() - 60
    path = _started(tmp_path, sleeper.pid, (before, boot_clock()))
    entry = json.loads(path.read_text())
    assert entry["start"] <= start_time(sleeper.pid) <= entry["start_max"]
    assert survivors(path) == [sleeper.pid]
    assert stop_survivors(path, grace=2.0) == [sleeper.pid]
    assert sleeper.wait(timeout=5) != 0


def test_a_process_that_started_after_the_window_is_left_alone(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    # Same id, later start: the id was reused by a process that is not ours.
    long_ago = boot_clock() - 3600
    path = _started(tmp_path, sleeper.pid, (long_ago, long_ago + 1))
    assert survivors(path) == []
    assert stop_survivors(path, grace=0.1) == []
    assert sleeper.poll() is None


def test_an_exact_start_time_is_still_understood(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    path = _started(tmp_path, sleeper.pid, None)
    assert json.loads(path.read_text())["start"] == start_time(sleeper.pid)
    assert "start_max" not in json.loads(path.read_text())
    assert survivors(path) == [sleeper.pid]


def test_a_group_noted_as_ended_is_not_a_survivor(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    ledger = ProcessLedger(tmp_path / "processes.jsonl")
    try:
        ledger.started(sleeper.pid, (boot_clock() - 60, boot_clock()))
        ledger.ended(sleeper.pid)
    finally:
        ledger.close()
    assert survivors(ledger.path) == []


#: A run whose event loop is torn down (a stop signal raised out of it: every task
#: cancelled at once, shields ignored) while it stops a command deaf to SIGTERM.
_TORN_DOWN = """
import os, signal, sys, threading
from pathlib import Path
import anyio
from attractor.cli import stop_signals
from attractor.proc.ledger import CURRENT, ProcessLedger
from attractor.proc.process import run_process

here = Path(sys.argv[1])
ledger = ProcessLedger(here / "processes.jsonl")

async def main():
    CURRENT.set(ledger)
    async with anyio.create_task_group() as group:
        group.start_soon(lambda: run_process(
            "trap '' TERM; echo $$ > started; exec sleep 300", cwd=here, kill_grace=30))
        while not (here / "started").exists():
            await anyio.sleep(0.01)
        group.cancel_scope.cancel()  # the command gets SIGTERM, then 30 s of grace
        # Meanwhile a stop signal, raised out of the loop (no scope of stop_signals.run).
        threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGHUP)).start()

stop_signals.install()
try:
    anyio.run(main)
except stop_signals.StopSignal:
    pass
finally:
    ledger.close()
"""


def test_a_stop_cut_short_leaves_the_group_to_the_guard(tmp_path: Path) -> None:
    script = tmp_path / "torn.py"
    script.write_text(_TORN_DOWN)
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    pid = int((tmp_path / "started").read_text())
    # The guard sends SIGTERM, then SIGKILL two seconds later, to every group still listed.
    assert not outlived(pid), "the command outlived its run: its group was noted as ended"
