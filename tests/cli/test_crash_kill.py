"""SIGKILL real ``attractor run``/``resume`` processes at random moments, then resume.

After every kill the run's state (``Checkpoint.load``: checkpoint.json plus the
journal) names the node that may have been running; only that node may run
again. When the run has finished, every node must have acted exactly once,
plus at most once more for each kill that caught it running.

The pipeline fans out half-way (``fan``: branches ``L0 -> L1`` and ``R0 -> R1``,
merged at ``join``), so a kill can land inside a branch's stage or inside the
fan-in's merge. Which branch stage a kill may have caught comes from the
branches' own saved progress (``fan/branches/INDEX.progress.json``); every
node's starts (events.jsonl) must stay within one plus the kills that caught
it: no completed stage, main or branch, runs again.

The run's workspace is checkpointed (``snapshot`` in a plain folder, ``worktree``
in a git repository), so more holds: a kill inside a stage (or inside its
checkpoint commit, or a fan-in merge) leaves files the resume puts back to
where the stage began, so the final side.txt holds every tool exactly once, in
order, and each branch's file its own tools once each. Every tool writes a
``half-NODE`` file while it works and first notes (in saw-half.txt) any
``half-*`` file it finds: none may be found, so no stage ever saw another's (or
its own earlier attempt's) half-done files, merged or not. A file written by
hand after each kill is never lost (it is in a commit under some ref); the
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
import re
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

from attractor.store.checkpoint import Checkpoint
from tests.cli.runkit import events, finish, lines_of, spawn, write

KILLS = int(os.environ.get("CRASH_TEST_KILLS", "4"))
SEED = int(os.environ.get("CRASH_TEST_SEED", "1313"))
TOOLS = [f"t{i}" for i in range(10)]


FAN_AFTER = 4
BRANCHES = {"L": "left.txt", "R": "right.txt"}
BRANCH_TOOLS = [f"{b}{i}" for b in BRANCHES for i in range(2)]


def _tool(node: str, into: str) -> str:
    """Note any half-done file it finds, then work on a half-done file of its own."""
    return (
        f"ls half-* >/dev/null 2>&1 && echo {node} >> saw-half.txt; "
        f"echo {node} > half-{node}; echo {node} >> {into}; sleep 0.01; rm half-{node}"
    )


def _pipeline(workspace: Path) -> None:
    """Tool nodes that each append their id to side.txt, with pure nodes between them,
    and a fan-out of two branches of two tools each half-way."""
    nodes = ["fan [shape=component]", "join [shape=tripleoctagon]"]
    chain = ["start"]
    for i, tool in enumerate(TOOLS):
        nodes.append(f'{tool} [shape=parallelogram, tool_command="{_tool(tool, "side.txt")}"]')
        chain.append(tool)
        if i % 3 == 1:  # simulate nodes: journalled without an fsync of their own
            nodes.append(f"s{i} [shape=box]")
            chain.append(f"s{i}")
        if i == FAN_AFTER:
            chain += ["fan", "join"]
    chain.append("done")
    before, after = chain[: chain.index("join")], chain[chain.index("join") :]
    edges = [" -> ".join(before), " -> ".join(after)]
    for branch, into in BRANCHES.items():
        for i in range(2):
            name = f"{branch}{i}"
            nodes.append(f'{name} [shape=parallelogram, tool_command="{_tool(name, into)}"]')
        edges.append(f"fan -> {branch}0 -> {branch}1 -> join")
    write(
        workspace / "chain.dot",
        "digraph chain {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n  "
        + "\n  ".join(nodes + edges)
        + "\n}\n",
    )


def _running(run_dir: Path) -> list[str]:
    """The nodes a kill may have caught running: the one the state says is next and,
    inside the fan-out, the one each unfinished branch's saved progress says is next."""
    if not (run_dir / "checkpoint.json").exists():
        return []  # killed before the run directory held a checkpoint
    node = Checkpoint.load(run_dir / "checkpoint.json").next_node
    if node is None:
        return []
    if node != "fan":
        return [node]
    nexts = (_branch_next(run_dir, i, b) for i, b in enumerate(BRANCHES))
    return [node, *(n for n in nexts if n)]


def _branch_next(run_dir: Path, index: int, branch: str) -> str:
    """The node branch ``index`` runs next by its saved progress ("" when it finished).

    A resumed fan-out moves its earlier files aside (``fan/v1-a1``, then ``v1-a1-2``...)
    and carries them over: the newest folder that has the branch's file says."""
    fan = run_dir / "fan"
    runs = sorted(
        (
            int(m[1] or 1)
            for f in fan.glob("v1-a1*")
            if (m := re.match(r"^v1-a1(?:-(\d+))?$", f.name))
        ),
        reverse=True,
    )
    folders = [fan / "branches"]
    folders += [fan / (f"v1-a1-{run}" if run > 1 else "v1-a1") / "branches" for run in runs]
    for folder in folders:
        if (folder / f"{index}.json").exists():
            return ""
        progress = folder / f"{index}.progress.json"
        if progress.exists():
            return str(json.loads(progress.read_text()).get("next_node") or "")
    return f"{branch}0"


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
                _allow_running(run_dir, allowed, caught)
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
    _check_counts(run_dir, work_tree, mode, kills, allowed, caught)
    return kills


def _allow_running(run_dir: Path, allowed: Counter[str], caught: Counter[str]) -> None:
    """After a kill: each node it may have caught running may run once more."""
    running = _running(run_dir)
    for node in running:
        allowed[node] += 1
    if running[:1] == ["fan"]:
        caught["kills inside the fan-out (its branches)"] += 1
    elif running[:1] == ["join"]:
        caught["kills at the fan-in (its merge)"] += 1


def _check_counts(
    run_dir: Path, work_tree: Path, mode: str, kills: int, allowed: Counter[str],
    caught: Counter[str],
) -> None:  # fmt: skip
    """Every node acted once (plus the kills that caught it), and no stage saw half-done
    files."""
    acted = Counter(lines_of(work_tree / "side.txt"))
    for into in BRANCHES.values():
        acted += Counter(lines_of(work_tree / into))
    state = Checkpoint.load(run_dir / "checkpoint.json")
    starts = Counter(e["name"] for e in events(run_dir) if e["type"] == "stage_started")
    context = (
        f"seed {SEED}, {kills} kills, re-runs allowed {dict(allowed)}, acted {dict(acted)}, "
        f"started {dict(starts)}"
    )
    assert state.status == "success", context
    assert Counter(state.completed_nodes) == Counter(
        ["start", *TOOLS, *[f"s{i}" for i in range(len(TOOLS)) if i % 3 == 1], "done"]
        + ["fan", "join"]
    ), context
    for tool in [*TOOLS, *BRANCH_TOOLS]:
        assert 1 <= acted[tool] <= 1 + allowed[tool], f"{tool}: {context}"
    for node, count in starts.items():  # no completed stage, main or branch, ran again
        assert count <= 1 + allowed[node], f"{node} started {count} times: {context}"
    caught["stage starts beyond the first (each a kill that caught it)"] += sum(
        count - 1 for count in starts.values()
    )
    if mode != "none":  # the half-done work of a killed stage was put back: exactly once
        assert lines_of(work_tree / "side.txt") == TOOLS, context
        for branch, into in BRANCHES.items():
            assert lines_of(work_tree / into) == [f"{branch}0", f"{branch}1"], context
        # No stage found a half-done file (its own earlier attempt's, or a branch's merged).
        assert lines_of(work_tree / "saw-half.txt") == [], context
        assert not list(work_tree.glob("half-*")), context


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
