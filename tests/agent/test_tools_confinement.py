"""File tools stay inside the working directory against races, hard links and symlink loops."""

from __future__ import annotations

import contextlib
import itertools
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from attractor.agent.tools import ToolContext, ToolResult, default_registry
from attractor.agent.tools.files import write_file
from attractor.errors import ToolError
from attractor.llm.types import ToolCall


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    there = tmp_path / "outside"
    there.mkdir()
    return there


async def _call(workdir: Path, name: str, **arguments: Any) -> ToolResult:
    return await default_registry().execute(ToolCall("c1", name, arguments), ToolContext(workdir))


# -- a directory swapped for a symlink mid-call ------------------------------------------


@contextlib.contextmanager
def _swapping(workdir: Path, outside: Path) -> Iterator[list[int]]:
    """Keep turning ``workdir/d`` from a real directory into a symlink to ``outside`` and
    back, in a thread, until the block ends. Yields the count of full swaps."""
    real, link, d = workdir / "real", workdir / "link", workdir / "d"
    real.mkdir()
    os.symlink(outside, link)
    stop = threading.Event()
    swaps = [0]
    made = itertools.count()

    def move(source: Path, target: Path) -> None:
        while not stop.is_set():
            try:
                os.rename(source, target)
                return
            except OSError:  # write_file made a 'd' of its own while 'd' was missing
                with contextlib.suppress(OSError):
                    os.rename(target, workdir / f"made-{next(made)}")

    def swap() -> None:
        while not stop.is_set():
            for source, target in ((real, d), (d, real), (link, d), (d, link)):
                move(source, target)
            swaps[0] += 1

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    try:
        yield swaps
    finally:
        stop.set()
        swapper.join()


def test_a_directory_swapped_for_a_symlink_never_lets_a_write_out(
    workdir: Path, outside: Path
) -> None:
    context = ToolContext(workdir)
    written = refused = 0
    with _swapping(workdir, outside) as swaps:
        deadline = time.monotonic() + 5.0
        while written + refused < 2000 and time.monotonic() < deadline:
            try:
                write_file(context, {"path": "d/x.txt", "content": "x"})
                written += 1
            except ToolError:
                refused += 1  # 'd' was the symlink: the path leads outside
            assert os.listdir(outside) == []
    assert swaps[0] > 0 and written > 0
    assert os.listdir(outside) == []


@pytest.mark.anyio
async def test_writes_through_a_symlinked_parent_inside_stay_inside(
    workdir: Path, outside: Path
) -> None:
    (workdir / "sub").mkdir()
    os.symlink("sub", workdir / "alias")
    os.symlink(outside, workdir / "door")
    ok = await _call(workdir, "write_file", path="alias/deep/f.txt", content="hi")
    assert ok.output == "wrote 2 bytes to sub/deep/f.txt"
    assert (workdir / "sub/deep/f.txt").read_text() == "hi"
    out = await _call(workdir, "write_file", path="door/new/f.txt", content="x")
    assert out.is_error and "outside the working directory" in out.output
    assert os.listdir(outside) == []


@pytest.mark.anyio
async def test_write_and_edit_replace_the_file_and_keep_its_mode(workdir: Path) -> None:
    script = workdir / "run.sh"
    script.write_text("echo one\n")
    script.chmod(0o750)
    before = script.stat().st_ino
    edited = await _call(workdir, "edit_file", path="run.sh", old_string="one", new_string="two")
    assert edited.output == "replaced 1 occurrence(s) in run.sh"
    assert script.read_text() == "echo two\n"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750 and script.stat().st_ino != before
    await _call(workdir, "write_file", path="run.sh", content="echo three\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert os.listdir(workdir) == ["run.sh"]  # no temporary file left


@pytest.mark.anyio
async def test_a_symlinked_file_inside_is_written_through_and_stays_a_link(
    workdir: Path,
) -> None:
    (workdir / "real.txt").write_text("old\n")
    os.symlink("real.txt", workdir / "alias.txt")
    result = await _call(workdir, "edit_file", path="alias.txt", old_string="old", new_string="new")
    assert result.output == "replaced 1 occurrence(s) in real.txt"
    assert (workdir / "alias.txt").is_symlink() and (workdir / "real.txt").read_text() == "new\n"


# -- hard links ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_hard_link_to_a_file_outside_is_not_written(workdir: Path, outside: Path) -> None:
    target = outside / "victim.txt"
    target.write_text("original\n")
    os.link(target, workdir / "inside.txt")
    write = await _call(workdir, "write_file", path="inside.txt", content="pwned\n")
    edit = await _call(
        workdir, "edit_file", path="inside.txt", old_string="original", new_string="pwned"
    )
    for result in (write, edit):
        assert result.is_error and "is a hard link to a file with 1 other name(s)" in result.output
    assert target.read_text() == "original\n"
    assert (workdir / "inside.txt").read_text() == "original\n"
    # Reading is allowed (package caches hard-link files into virtual environments).
    assert (await _call(workdir, "read_file", path="inside.txt")).output == "1 | original"


# -- symlink loops ---------------------------------------------------------------------


@pytest.fixture
def looping(workdir: Path) -> Path:
    (workdir / "a").mkdir()
    (workdir / "a" / "real.py").write_text("needle = 1\n")
    os.symlink("loop", workdir / "a" / "loop")  # itself
    os.symlink(".", workdir / "a" / "here")  # its own directory: a cycle for a walker
    (workdir / "b.py").write_text("needle = 2\n")
    return workdir


@pytest.mark.anyio
async def test_glob_skips_a_symlink_loop_with_a_note(looping: Path) -> None:
    result = await _call(looping, "glob", pattern="**/*")
    assert not result.is_error
    assert result.output.splitlines() == [
        "a",
        "a/here",
        "a/real.py",
        "b.py",
        "[skipped 1 path: symlink loop: a/loop]",
    ]
    python = await _call(looping, "glob", pattern="**/*.py")
    assert python.output.splitlines() == ["a/real.py", "b.py"]


@pytest.mark.anyio
async def test_search_skips_a_symlink_loop_with_a_note(looping: Path) -> None:
    os.symlink("ping", looping / "pong")
    os.symlink("pong", looping / "ping")
    result = await _call(looping, "search_file", pattern="needle")
    assert result.output.splitlines() == [  # a folder's files first, then its folders
        "b.py:1: needle = 2",
        "a/real.py:1: needle = 1",
        "[skipped 3 paths: symlink loop: ping; symlink loop: pong; symlink loop: a/loop]",
    ]
    named = await _call(looping, "read_file", path="a/loop")
    assert named.is_error and "symlink loop" in named.output
    listing = await _call(looping, "list_dir", path="a")
    assert listing.output.splitlines() == ["here/", "loop", "real.py"]
