"""A full disk under the run directory: one line, exit 74, and a run directory
that can always be resumed (or used again) once there is space.

The disk is a small real tmpfs mounted for the test (root only); without the
right to mount, the tests skip saying so.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import finish, spawn, write

_SIZE = 256 * 1024


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted at ``tmp_path/disk``."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={_SIZE}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(
            "needs a small tmpfs, and mounting one is not permitted here "
            f"({mounted.stderr.strip() or 'mount failed'}): run the tests as root"
        )
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.fixture(autouse=True)
def no_workspace(tmp_path: Path) -> None:
    """The runs keep no workspace: its git directory would be written to the small disk
    too (tests/workspace/test_disk_full.py fills a disk under a workspace)."""
    write(tmp_path / "attractor.toml", 'workspace = "none"\n')


def _fill(disk: Path, leave: int) -> Path:
    """A file that leaves about ``leave`` bytes free on ``disk``."""
    filler = disk / "filler"
    free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
    with filler.open("wb") as out:
        out.write(b"\0" * max(0, free - leave))
    return filler


def _one_line(code: int, err: str) -> None:
    assert "Traceback" not in err, err
    assert code == 74, err
    assert err.startswith("error: cannot write the run directory "), err
    assert "No space left on device; free some space, then " in err
    assert len(err.strip().splitlines()) == 1, err


_TOOL = (
    "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; "
    't [shape=parallelogram, tool_command="cat payload.txt"]; start -> t -> done }'
)


def test_a_disk_filled_by_a_node_stops_the_run_resumable(tmp_path: Path, disk: Path) -> None:
    write(tmp_path / "p.dot", _TOOL)
    write(tmp_path / "payload.txt", "x" * (2 * _SIZE))  # more than the disk holds
    run_dir = disk / "run"
    code, _, err = finish(spawn(["run", "p.dot", "--logs-dir", str(run_dir)], tmp_path))
    _one_line(code, err)
    assert f"resume it: attractor resume {run_dir}" in err
    write(tmp_path / "payload.txt", "small\n")
    (run_dir / "t" / "stdout.txt").unlink()  # space again
    code, out, err = finish(spawn(["resume", str(run_dir)], tmp_path))
    assert code == 0, err
    assert (run_dir / "t" / "stdout.txt").read_text() == "small\n"


@pytest.mark.slow
@pytest.mark.parametrize(
    "leave", [0, 8192, 16384, 24576, 32768, 45056, 57344, 65536, 69632, 73728, 77824]
)
def test_whatever_write_the_disk_fills_at_the_run_can_go_on(
    tmp_path: Path, disk: Path, leave: int
) -> None:
    """Sweep the free space, so each run meets the full disk at another write
    (creating the directory, the first checkpoint, a node, the final checkpoint)."""
    write(
        tmp_path / "p.dot",
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; "
        "a [shape=box]; b [shape=box]; c [shape=box]; start -> a -> b -> c -> done }",
    )
    filler = _fill(disk, leave)
    run_dir = disk / "run"
    args = ["run", "p.dot", "--backend", "simulate", "--logs-dir", str(run_dir), "-q"]
    code, _, err = finish(spawn(args, tmp_path))
    if code != 0:
        _one_line(code, err)
    filler.unlink()
    if code == 0:
        return
    if (run_dir / "checkpoint.json").exists():
        assert "then resume it: attractor resume" in err
        code, _, err = finish(spawn(["resume", str(run_dir), "-q"], tmp_path))
    else:  # stopped before there was anything to resume: the same command works again
        assert "then run the pipeline again" in err
        code, _, err = finish(spawn(args, tmp_path))
    assert code == 0, err


def test_a_run_directory_killed_while_being_created_is_used_again(tmp_path: Path) -> None:
    """SIGKILL leaves what setup wrote (no checkpoint): resume says so, run reuses it.

    A folder of the user's with a pipeline.dot (and the .lock an older version
    left there) is no such run: nothing in it is ever removed.
    """
    write(tmp_path / "p.dot", _TOOL.replace("cat payload.txt", "echo hi"))
    run_dir = tmp_path / "out"
    run_dir.mkdir()
    for name in (".lock", "pipeline.dot", "manifest.json", ".manifest.json.7-0.tmp"):
        write(run_dir / name, "")
    code, _, err = finish(spawn(["resume", "out"], tmp_path))
    assert code == 2
    assert err == (
        "error: out: this run never started (it stopped while its directory was being "
        "created); start it again: attractor run PIPELINE --logs-dir out\n"
    )
    code, _, err = finish(spawn(["run", "p.dot", "--logs-dir", "out", "-q"], tmp_path))
    assert code == 0, err
    assert not (run_dir / ".manifest.json.7-0.tmp").exists()
    assert (run_dir / "t" / "stdout.txt").read_text() == "hi\n"
    mine = tmp_path / "mine"
    write(mine / "pipeline.dot", "digraph mine {}")
    write(mine / ".lock", "123\n")
    code, _, err = finish(spawn(["run", "p.dot", "--logs-dir", "mine"], tmp_path))
    assert code == 2 and "is not empty and holds no run" in err
    assert (mine / "pipeline.dot").read_text() == "digraph mine {}"


def test_a_run_killed_while_its_snapshot_workspace_was_made_is_used_again(
    tmp_path: Path,
) -> None:
    """A kill (or a stop signal) while the snapshot workspace is being made leaves its
    git directory and set-up log beside what setup wrote: still a run that never started."""
    write(tmp_path / "p.dot", _TOOL.replace("cat payload.txt", "echo hi"))
    run_dir = tmp_path / "out"
    for name in (".lock", "pipeline.dot", "manifest.json", "workspace-setup.log"):
        write(run_dir / name, "")
    write(run_dir / "workspace.git" / "objects" / "ab" / "cdef", "half a commit")
    code, _, err = finish(spawn(["resume", "out"], tmp_path))
    assert code == 2 and "this run never started" in err, err
    code, _, err = finish(spawn(["run", "p.dot", "--logs-dir", "out", "-q"], tmp_path))
    assert code == 0, err
    assert not (run_dir / "workspace.git" / "objects" / "ab" / "cdef").exists()
    assert (run_dir / "t" / "stdout.txt").read_text() == "hi\n"
