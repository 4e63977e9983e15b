"""Workspace benchmark: what a checkpoint commit per stage costs.

Run: ``python benchmarks/bench_workspace.py [--files N] [--nodes N] [--reps N]``.

1. A checkpoint (``Workspace.checkpoint``: ``git add -A`` in the run's own
   index, ``write-tree``, ``diff-tree``, ``commit-tree``, ``update-ref``) on a
   repository of N files (default 10,000) with 10 changed, against a bare
   ``git add -A && git commit`` of the same change in a copy of the repository,
   measured in one run (goal: at most 3x). An unchanged stage makes no commit.
2. A linear simulate pipeline of N nodes (default 1,000) in ``snapshot`` mode
   against the same run with ``--workspace none`` (goal: within 1.5x).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import anyio

from attractor.launch import launch, plan_run
from attractor.proc.environment import LocalEnvironment
from attractor.workspace.create import create
from attractor.workspace.preflight import preflight
from attractor.workspace.workspace import Workspace

_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@b",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@b",
}


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, env=_ENV, check=True, capture_output=True)


def make_repo(path: Path, files: int) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    # No automatic gc: its background process rewrote .git while copytree copied it.
    git(path, "config", "gc.auto", "0")
    for i in range(files):
        folder = path / f"d{i % 100:02d}"
        folder.mkdir(exist_ok=True)
        (folder / f"f{i}.txt").write_text(f"file {i}\n")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "files")
    return path


def change(root: Path, rep: int, count: int = 10) -> None:
    stamp = time.perf_counter_ns()  # new content every time, warm-up included
    for i in range(count):
        (root / f"d{i:02d}" / f"f{i}.txt").write_text(f"file {i} changed {rep} {stamp}\n")


def bare_commit(repo: Path, reps: int) -> list[float]:
    times = []
    for rep in range(reps):
        change(repo, rep)
        t0 = time.perf_counter()
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", f"change {rep}")
        times.append(time.perf_counter() - t0)
    return times


async def checkpoints(workspace: Workspace, reps: int) -> tuple[list[float], float, bool]:
    times = []
    for rep in range(reps):
        change(workspace.work_tree, rep)
        t0 = time.perf_counter()
        saved = await workspace.checkpoint(f"stage {rep}", {"Attractor-Node": "n"})
        times.append(time.perf_counter() - t0)
        assert saved.made and len(saved.files) == 10
    t0 = time.perf_counter()
    unchanged = await workspace.checkpoint("stage unchanged", {"Attractor-Node": "n"})
    return times, time.perf_counter() - t0, unchanged.made


async def bench_checkpoint(base: Path, files: int, reps: int) -> None:
    repo = make_repo(base / "repo", files)
    copy = base / "copy"
    shutil.copytree(repo, copy, symlinks=True)
    plan = await preflight("worktree", "bench", repo)
    run_dir = base / "runs" / "bench"
    run_dir.mkdir(parents=True)
    # No workspace_setup: the boundary it would run in is the plain local one.
    workspace = await create(plan, run_dir, "bench", lambda workdir, *_: LocalEnvironment(workdir))
    # One warm-up each: the first add -A after a checkout refreshes the stat cache.
    bare_commit(copy, 1)
    await checkpoints(workspace, 1)
    ours, unchanged, made = await checkpoints(workspace, reps)
    bare = bare_commit(copy, reps)
    a, b = statistics.median(ours), statistics.median(bare)
    print(f"checkpoint, {files:,} files, 10 changed: {a * 1000:.1f} ms (median of {reps})")
    print(f"git add -A && git commit, same change:  {b * 1000:.1f} ms")
    print(f"ratio {a / b:.2f}x (goal <= 3x: {'met' if a / b <= 3 else 'NOT MET'})")
    print(f"unchanged stage: {unchanged * 1000:.1f} ms, commit made: {made}")


def pipeline(nodes: int) -> str:
    body = "\n".join(f'  n{i} [prompt="step {i}"]' for i in range(nodes))
    chain = " -> ".join(f"n{i}" for i in range(nodes))
    return (
        "digraph bench {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f"{body}\n  start -> {chain} -> done\n}}\n"
    )


async def timed_run(dot: Path, workdir: Path, logs: Path, mode: str) -> float:
    flags = {"workspace": mode, "workdir": str(workdir), "logs_dir": str(logs)}
    plan = plan_run(dot, flags)
    t0 = time.perf_counter()
    result = await launch(plan)
    assert result.status == "success", result.failure_reason
    return time.perf_counter() - t0


def _prepare(base: Path, nodes: int) -> tuple[Path, Path]:
    base.mkdir(parents=True)
    dot = base / "bench.dot"
    dot.write_text(pipeline(nodes))
    workdir = base / "work"
    workdir.mkdir()
    (workdir / "src.txt").write_text("a file the checkpoints see\n")
    return dot, workdir


async def bench_pipeline(base: Path, nodes: int, reps: int) -> None:
    dot, workdir = _prepare(base, nodes)
    times: dict[str, list[float]] = {"none": [], "snapshot": []}
    for rep in range(reps):
        for mode in ("none", "snapshot"):  # interleaved: the same load for both
            times[mode].append(await timed_run(dot, workdir, base / f"runs-{mode}-{rep}", mode))
    a, b = statistics.median(times["snapshot"]), statistics.median(times["none"])
    print(f"{nodes:,}-node simulate run, snapshot: {a:.2f} s; --workspace none: {b:.2f} s")
    print(f"ratio {a / b:.2f}x (goal <= 1.5x: {'met' if a / b <= 1.5 else 'NOT MET'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=1_000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        anyio.run(bench_checkpoint, base / "c", args.files, args.reps)
        anyio.run(bench_pipeline, base / "p", args.nodes, max(3, args.reps // 2))


if __name__ == "__main__":
    main()
