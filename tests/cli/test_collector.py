"""The console script pauses the garbage collector while a short command starts (cli/collector.py).

Each case is a real ``python -m attractor`` process; what it leaves of the collector
is printed by an exit handler (the command line's exit runs them before it ends).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

import pytest

from attractor.cli import collector

PIPELINE = """digraph p {
  start [shape=Mdiamond]; done [shape=Msquare]
  work [prompt="do it"]
  start -> work -> done
}
"""

#: Runs the console script with ARGV and prints, at exit, the collector's state.
PROBE = """
import atexit, gc, json, sys
from attractor.cli import entry
atexit.register(lambda: print(json.dumps(
    {"enabled": gc.isenabled(), "frozen": gc.get_freeze_count()}), file=sys.stderr))
sys.argv = ["attractor", *sys.argv[1:]]
entry.main()
"""


def _state(tmp_path: Path, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    state: dict[str, object] = json.loads(done.stderr.strip().splitlines()[-1])
    return state


def test_a_run_collects_again_once_it_has_started(tmp_path: Path) -> None:
    (tmp_path / "p.dot").write_text(PIPELINE)
    state = _state(tmp_path, "run", "p.dot", "--backend", "simulate", "-q", "--workspace", "none")
    assert state["enabled"] is True  # a long run collects its garbage
    assert isinstance(state["frozen"], int) and state["frozen"] > 10_000  # start-up's objects


def test_lint_never_collects_and_other_commands_are_left_alone(tmp_path: Path) -> None:
    (tmp_path / "p.dot").write_text(PIPELINE)
    assert _state(tmp_path, "lint", "p.dot")["enabled"] is False
    assert _state(tmp_path, "fmt", "p.dot")["enabled"] is True


@pytest.fixture
def collecting() -> object:
    """The collector on, and put back as the test found it."""
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.mark.usefixtures("collecting")
def test_resume_starts_only_what_pause_stopped() -> None:
    collector.pause()
    assert not gc.isenabled()
    collector.resume()
    assert gc.isenabled()
    gc.disable()  # someone else's choice: pause has nothing to undo
    collector.pause()
    collector.resume()
    assert not gc.isenabled()
