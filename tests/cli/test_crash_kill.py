"""SIGKILL real ``attractor run``/``resume`` processes at random moments, then resume.

After every kill the run's state (``Checkpoint.load``: checkpoint.json plus the
journal) names the node that may have been running; only that node may run
again. When the run has finished, every node must have acted exactly once,
plus at most once more for each kill that caught it running.

The kill moments come from a seeded generator, so a failure can be repeated:
the seed is in the assertion message. A few kills run in every test run; for a
longer soak (50 kills or more)::

    CRASH_TEST_KILLS=60 CRASH_TEST_SEED=7 pytest tests/cli/test_crash_kill.py -q
"""

from __future__ import annotations

import os
import random
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from attractor.store.checkpoint import Checkpoint
from tests.cli.runkit import finish, lines_of, spawn, write

KILLS = int(os.environ.get("CRASH_TEST_KILLS", "4"))
SEED = int(os.environ.get("CRASH_TEST_SEED", "1313"))
TOOLS = [f"t{i}" for i in range(10)]


def _pipeline(workspace: Path) -> None:
    """Tool nodes that each append their id to side.txt, with pure nodes between them."""
    nodes = []
    chain = ["start"]
    for i, tool in enumerate(TOOLS):
        nodes.append(f'{tool} [shape=parallelogram, tool_command="echo {tool} >> side.txt"]')
        chain.append(tool)
        if i % 3 == 1:  # simulate nodes: journalled without an fsync of their own
            nodes.append(f"s{i} [shape=box]")
            chain.append(f"s{i}")
    chain.append("done")
    write(
        workspace / "chain.dot",
        "digraph chain {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n  "
        + "\n  ".join(nodes)
        + "\n  "
        + " -> ".join(chain)
        + "\n}\n",
    )


def _running(run_dir: Path) -> str | None:
    """The node a kill may have caught running: the one the state says is next."""
    if not (run_dir / "checkpoint.json").exists():
        return None  # killed before the run directory held a checkpoint
    return Checkpoint.load(run_dir / "checkpoint.json").next_node


def _finished(run_dir: Path) -> bool:
    path = run_dir / "checkpoint.json"
    return path.exists() and Checkpoint.load(path).status == "success"


def _started(run_dir: Path) -> int:
    """How many stage attempts events.jsonl shows (it grows across resumes)."""
    path = run_dir / "events.jsonl"
    return path.read_text().count('"stage_started"') if path.exists() else 0


def _kill_after(proc: subprocess.Popen[str], run_dir: Path, stages: int, pause: float) -> bool:
    """SIGKILL ``proc`` once ``stages`` stage attempts started and ``pause`` more seconds
    passed; False when it exited first."""
    deadline = time.monotonic() + 60
    while _started(run_dir) < stages:
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, "the run made no progress for 60 s"
        time.sleep(0.002)  # polling a file another process writes; nothing to wait on
    time.sleep(pause)  # lands the kill anywhere inside the node or between two
    if proc.poll() is not None:
        return False
    proc.kill()
    finish(proc)
    return True


@pytest.mark.slow
def test_random_sigkills_then_resume_complete_every_node_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    kills = 0
    for round_ in range(KILLS):  # a run ends after a handful of kills: start another one
        kills += _killed_and_resumed(tmp_path / f"round{round_}", rng, KILLS - kills)
        if kills >= KILLS:
            break
    assert kills >= KILLS, f"seed {SEED}: only {kills} of {KILLS} kills landed"


def _killed_and_resumed(workspace: Path, rng: random.Random, budget: int) -> int:
    """Run the pipeline, killing it up to ``budget`` times; check it; return the kills made."""
    _pipeline(workspace)
    run_dir = workspace / "runs" / "run"
    allowed: Counter[str] = Counter()
    kills = 0
    args = ["run", "chain.dot", "--logs-dir", str(run_dir)]
    while True:
        # No model configured: LLM nodes are simulated, tool commands run for real.
        proc = spawn(args, workspace)
        args = ["resume", str(run_dir)]
        if kills < budget:
            stages = _started(run_dir) + rng.randint(1, 5)
            if _kill_after(proc, run_dir, stages, rng.uniform(0, 0.02)):
                kills += 1
                if _finished(run_dir):
                    break  # killed after the run had saved its success, before it exited
                node = _running(run_dir)
                if node is not None:
                    allowed[node] += 1
                continue
        code, _, err = finish(proc, timeout=120)
        assert code == 0, f"seed {SEED}: {err}"
        break

    acted = Counter(lines_of(workspace / "side.txt"))
    state = Checkpoint.load(run_dir / "checkpoint.json")
    context = f"seed {SEED}, {kills} kills, re-runs allowed {dict(allowed)}, acted {dict(acted)}"
    assert state.status == "success", context
    assert Counter(state.completed_nodes) == Counter(
        ["start", *TOOLS, *[f"s{i}" for i in range(len(TOOLS)) if i % 3 == 1], "done"]
    ), context
    for tool in TOOLS:
        assert 1 <= acted[tool] <= 1 + allowed[tool], f"{tool}: {context}"
    return kills
