"""A disk that fills during a checkpoint: the run fails in one line, its checkpoints survive,
and --retry-failed works once there is space. A small real tmpfs (root only, else skipped)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import invoke, read_json, write
from tests.workspace.gitkit import git, make_repo

_SIZE = 4 * 1024 * 1024


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={_SIZE}", "tmpfs", str(where)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"needs a small tmpfs, and mounting one is not permitted here: run as root "
                    f"({mounted.stderr.strip() or 'mount failed'})")  # fmt: skip
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_disk_during_a_checkpoint_fails_clearly_and_resumes(
    tmp_path: Path, disk: Path
) -> None:
    repo = make_repo(disk / "repo")
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, tool_command="echo a > a.txt"]
      b [shape=parallelogram, tool_command="head -c 600000 /dev/urandom > big.bin"]
      start -> a -> b -> done
    }
    """
    dot = write(tmp_path / "p.dot", pipeline)
    # Room for b's file in the worktree, not for git's copy of it as well.
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    filler = disk / "filler"
    filler.write_bytes(b"\0" * (free - 900_000))
    run_dir = tmp_path / "run"
    args = ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(run_dir)]

    failed = invoke(args)

    assert failed.exit_code == 1, failed.output + failed.stderr
    last = failed.output.strip().splitlines()[-1]
    assert "the disk is full; free some space, then resume the run" in last
    assert "Traceback" not in failed.output + failed.stderr
    branch = read_json(run_dir / "manifest.json")["workspace"]["branch"]
    assert git(repo, "show", f"{branch}:a.txt") == "a\n"  # a's checkpoint survived
    git(repo, "fsck", "--no-dangling")

    filler.unlink()  # the cause is gone
    again = invoke(["resume", str(run_dir), "--retry-failed"])

    assert again.exit_code == 0, again.output + again.stderr
    names = git(repo, "ls-tree", "--name-only", branch).split()
    assert "big.bin" in names and "a.txt" in names
