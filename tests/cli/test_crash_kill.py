"""SIGKILL real ``attractor run``/``resume`` processes at random moments, then resume.

After every kill the run's state (``Checkpoint.load``: checkpoint.json plus the
journal) names the node that may have been running; only that node may run
again. When the run has finished, every node must have acted exactly once,
plus at most once more for each kill that caught it running.

The run's workspace is checkpointed (``snapshot`` in a plain folder, ``worktree``
in a git repository), so more holds: a kill inside a stage (or inside its
checkpoint commit) leaves files the resume puts back to where the stage began,
so the final side.txt holds every tool exactly once, in order; a file written
by hand after each kill is never lost (it is in a commit under some ref); the
repository stays sound (``git fsck``). The test counts the kills that caught a
stage in the middle (each leaves a lost ref) and prints the count.

The kill moments come from a seeded generator, so a failure can be repeated:
the seed is in the assertion message. A few kills run in every test run; for a
longer soak (50 kills or more)::

    CRASH_TEST_KILLS=60 CRASH_TEST_SEED=7 pytest tests/cli/test_crash_kill.py -q
"""

from __future__ import annotations

import json
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
@pytest.mark.parametrize("mode", ["snapshot", "worktree", "none"])
def test_random_sigkills_then_resume_complete_every_node_exactly_once(
    tmp_path: Path, mode: str
) -> None:
    rng = random.Random(SEED)
    kills = 0
    caught: Counter[str] = Counter()
    for round_ in range(KILLS):  # a run ends after a handful of kills: start another one
        kills += _killed_and_resumed(tmp_path / f"round{round_}", rng, KILLS - kills, mode, caught)
        if kills >= KILLS:
            break
    assert kills >= KILLS, f"seed {SEED}: only {kills} of {KILLS} kills landed"
    print(f"{mode}: {kills} kills; caught mid-way: {dict(caught)}")


def _git(folder: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t")
    env.update(GIT_COMMITTER_EMAIL="t@t")
    done = subprocess.run(["git", *args], cwd=folder, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _work_tree(workspace: Path, run_dir: Path, mode: str) -> Path:
    if mode != "worktree" or not (run_dir / "manifest.json").exists():
        return workspace
    record = json.loads((run_dir / "manifest.json").read_text()).get("workspace") or {}
    return Path(record.get("work_tree") or workspace)


def _killed_and_resumed(
    workspace: Path, rng: random.Random, budget: int, mode: str, caught: Counter[str]
) -> int:
    """Run the pipeline, killing it up to ``budget`` times; check it; return the kills made."""
    _pipeline(workspace)
    if mode == "worktree":
        _git(workspace, "init", "-q")
        write(workspace / ".gitignore", "runs/\n")
        _git(workspace, "add", "-A")
        _git(workspace, "commit", "-q", "-m", "the pipeline")
    run_dir = workspace / "runs" / "run"
    allowed: Counter[str] = Counter()
    kills = 0
    hand: list[str] = []
    args = ["run", "chain.dot", "--logs-dir", str(run_dir), "--workspace", mode]
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
                if mode != "none":  # written by hand while the run is down: never lost
                    name = f"hand-{kills}.txt"
                    write(_work_tree(workspace, run_dir, mode) / name, f"by hand {kills}\n")
                    hand.append(name)
                continue
        code, _, err = finish(proc, timeout=120)
        assert code == 0, f"seed {SEED}: {err}"
        break
    work_tree = _work_tree(workspace, run_dir, mode)
    if mode != "none":
        _check_workspace(workspace, run_dir, work_tree, mode, hand, caught)
    acted = Counter(lines_of(work_tree / "side.txt"))
    state = Checkpoint.load(run_dir / "checkpoint.json")
    context = f"seed {SEED}, {kills} kills, re-runs allowed {dict(allowed)}, acted {dict(acted)}"
    assert state.status == "success", context
    assert Counter(state.completed_nodes) == Counter(
        ["start", *TOOLS, *[f"s{i}" for i in range(len(TOOLS)) if i % 3 == 1], "done"]
    ), context
    for tool in TOOLS:
        assert 1 <= acted[tool] <= 1 + allowed[tool], f"{tool}: {context}"
    if mode != "none":  # the half-done work of a killed stage was put back: exactly once
        assert lines_of(work_tree / "side.txt") == TOOLS, context
    return kills


def _check_workspace(
    workspace: Path, run_dir: Path, work_tree: Path, mode: str, hand: list[str],
    caught: Counter[str],
) -> None:  # fmt: skip
    git_folder = workspace if mode == "worktree" else run_dir / "workspace.git"
    _git(git_folder, "fsck", "--no-dangling", "--no-progress")
    objects = _git(git_folder, "rev-list", "--all", "--objects")
    for name in hand:  # in a commit the branch or a lost ref keeps
        assert f" {name}" in objects, f"seed {SEED}: {name} was lost"
    lost = _git(git_folder, "for-each-ref", "--format=%(refname)", "refs/attractor/")
    caught["kills whose half-done files were kept under a lost ref"] += len(lost.split())
