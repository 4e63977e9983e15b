"""Runs whose steps finish at once still stop: SIGINT, SIGTERM and --timeout.

Each pipeline below loops without ever awaiting anything in its handlers (a
simulated stage, a conditional node, a node type without a handler, a
loop_restart edge). Before the engine yielded once per step, such a run ignored
every signal and its timeout and had to be killed with SIGKILL. Each test
starts the real CLI (or, for the unknown type, which the CLI refuses, a program
using the library), waits until the loop is going, stops it, and checks that
the process exits and leaves the run saved as resumable.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cli.runkit import read_json, run_dirs, spawn, wait_for, write

#: How long a stopped run may take to exit on a loaded two-core machine.
STOP_WITHIN = 10.0

HEAD = "start [shape=Mdiamond]; exit [shape=Msquare]\n"
LOOPS = {
    # A simulated LLM stage that loops on its own success.
    "simulate": HEAD + 'a [prompt="again"]\nstart -> a\n'
    'a -> a [condition="outcome=success"]\na -> exit [condition="outcome=fail"]',
    # A diamond that routes back to itself.
    "conditional": HEAD + "c [shape=diamond]\nstart -> c\n"
    'c -> c [condition="outcome=success"]\nc -> exit [condition="outcome=fail"]',
    # A loop_restart edge: a new run directory at every turn.
    "loop_restart": HEAD + 'a [prompt="again"]\nstart -> a\n'
    'a -> a [condition="outcome=success", loop_restart=true]\n'
    'a -> exit [condition="outcome=fail"]',
}
#: A node whose type has no handler fails at once, and its failure loops back.
UNKNOWN = (
    HEAD + 'a [type="exec"]\nstart -> a\na -> a [condition="outcome=fail"]\n'
    'a -> exit [condition="outcome=success"]'
)

#: The library, where an unknown type is only a warning (code may register it).
LIBRARY_RUN = """
import sys
from pathlib import Path

import anyio

from attractor.engine.run import RunOptions, prepare_run_graph, run_pipeline
from attractor.handlers.simulate import SimulateBackend
from attractor.settings import resolve_settings

source, logs, timeout = Path(sys.argv[1]), sys.argv[2], sys.argv[3] or None
graph = prepare_run_graph(source)
settings = resolve_settings({"logs_dir": logs, "timeout": timeout}, graph_attrs=graph.attrs)
options = RunOptions(settings, backend=SimulateBackend(), handle_signals=True)
result = anyio.run(run_pipeline, graph, source, options)
sys.exit(result.exit_code)
"""

STOPS = {
    "sigint": (signal.SIGINT, "interrupted", 130),
    "sigterm": (signal.SIGTERM, "terminated", 143),
}


def _digraph(body: str) -> str:
    return "digraph loop {\n" + body + "\n}\n"


def _start(tmp_path: Path, kind: str, timeout: str | None = None) -> tuple[Any, Path]:
    """The looping run as a real process, and the folder its run directories go to."""
    logs = tmp_path / "runs"
    logs.mkdir()
    if kind == "unknown":
        source = write(tmp_path / "loop.dot", _digraph(UNKNOWN))
        script = write(tmp_path / "library_run.py", LIBRARY_RUN)
        args = [sys.executable, str(script), str(source), str(logs / "run"), timeout or ""]
        proc = subprocess.Popen(
            args, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        return proc, logs
    source = write(tmp_path / "loop.dot", _digraph(LOOPS[kind]))
    args = ["run", str(source), "--logs-dir", str(logs / "run"), "--quiet"]
    if timeout is not None:
        args += ["--timeout", timeout]
    return spawn(args, cwd=tmp_path), logs


def _events_size(logs: Path) -> int:
    return sum(
        (d / "events.jsonl").stat().st_size
        for d in run_dirs(logs)
        if (d / "events.jsonl").is_file()
    )


def _looping(logs: Path) -> bool:
    """Many steps taken already: the loop is well under way."""
    return len(run_dirs(logs)) >= 5 or _events_size(logs) > 40_000


def _last_run(logs: Path) -> Path:
    """The run directory the run ended in (loop_restart leaves one per restart)."""
    ended = [d for d in run_dirs(logs) if read_json(d / "manifest.json")["status"] != "restarted"]
    assert len(ended) == 1, [(d.name, read_json(d / "manifest.json")["status"]) for d in ended]
    return ended[0]


def _exit_code(proc: Any) -> int:
    try:
        code: int = proc.wait(timeout=STOP_WITHIN)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise AssertionError(f"the run did not stop within {STOP_WITHIN}s") from None
    proc.communicate()
    return code


def _assert_saved_resumable(logs: Path, status: str) -> None:
    run_dir = _last_run(logs)
    manifest = read_json(run_dir / "manifest.json")
    checkpoint = read_json(run_dir / "checkpoint.json")
    assert manifest["status"] == status, manifest
    assert checkpoint["status"] == status and checkpoint["next_node"], checkpoint


KINDS = [*LOOPS, "unknown"]


@pytest.mark.parametrize("stop", list(STOPS))
@pytest.mark.parametrize("kind", KINDS)
def test_a_signal_stops_an_instant_loop_and_saves_it_resumable(
    tmp_path: Path, kind: str, stop: str
) -> None:
    signum, status, code = STOPS[stop]
    proc, logs = _start(tmp_path, kind)
    try:
        wait_for(lambda: _looping(logs) or proc.poll() is not None, "the loop to get going")
        assert proc.poll() is None, proc.communicate()
        sent = time.monotonic()
        proc.send_signal(signum)
        assert _exit_code(proc) == code
        assert time.monotonic() - sent < STOP_WITHIN
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    _assert_saved_resumable(logs, status)


@pytest.mark.parametrize("kind", KINDS)
def test_the_timeout_stops_an_instant_loop_and_saves_it_resumable(
    tmp_path: Path, kind: str
) -> None:
    started = time.monotonic()
    proc, logs = _start(tmp_path, kind, timeout="1s")
    assert _exit_code(proc) == 124
    # Generous for a loaded machine: without the fix the run never stopped.
    assert time.monotonic() - started < 1 + STOP_WITHIN + 10
    _assert_saved_resumable(logs, "timed_out")
