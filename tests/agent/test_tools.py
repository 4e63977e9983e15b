"""The built-in tools, run through the registry as the agent loop runs them."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from attractor.agent.tools import ToolContext, ToolResult, default_registry
from attractor.agent.tools.base import threaded
from attractor.agent.tools.search import MAX_MATCHES
from attractor.llm.types import ToolCall


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


async def _call(workdir: Path, name: str, **arguments: Any) -> ToolResult:
    context = ToolContext(workdir, shell_timeout_cap=5.0, kill_grace=0.5)
    return await default_registry().execute(ToolCall("c1", name, arguments), context)


def test_every_tool_has_an_object_schema() -> None:
    definitions = default_registry().definitions()
    assert [d.name for d in definitions] == [
        "read_file", "write_file", "edit_file", "list_dir", "glob", "search_file", "shell",
    ]  # fmt: skip
    for definition in definitions:
        assert definition.parameters["type"] == "object"
        assert set(definition.parameters["required"]) <= set(definition.parameters["properties"])
        assert definition.description


# -- files ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_write_then_read_with_line_numbers_offset_and_limit(workdir: Path) -> None:
    text = "".join(f"row {n}\n" for n in range(1, 13))
    written = await _call(workdir, "write_file", path="deep/dir/f.txt", content=text)
    assert not written.is_error and (workdir / "deep/dir/f.txt").read_text() == text
    whole = await _call(workdir, "read_file", path="deep/dir/f.txt")
    assert whole.output.splitlines()[0] == " 1 | row 1"
    part = await _call(workdir, "read_file", path="deep/dir/f.txt", offset=10, limit=2)
    assert part.output.splitlines() == [
        "10 | row 10",
        "11 | row 11",
        "[lines 10-11 of 12; use offset=12 to read on]",
    ]


@pytest.mark.anyio
async def test_read_errors(workdir: Path) -> None:
    (workdir / "bin").write_bytes(b"\x00\x01\x02")
    assert "no such file" in (await _call(workdir, "read_file", path="nope")).output
    assert "binary" in (await _call(workdir, "read_file", path="bin")).output
    assert "directory" in (await _call(workdir, "read_file", path=".")).output
    bad_type = await _call(workdir, "read_file", path="bin", offset="3")
    assert bad_type.is_error and "must be a integer" in bad_type.output


@pytest.mark.anyio
async def test_edit_file_needs_a_unique_exact_match(workdir: Path) -> None:
    (workdir / "a.py").write_text("x = 1\ny = 1\nx = 1\n")
    missing = await _call(workdir, "edit_file", path="a.py", old_string="z = 1", new_string="")
    assert missing.is_error and "not found" in missing.output
    twice = await _call(workdir, "edit_file", path="a.py", old_string="x = 1", new_string="x = 2")
    assert twice.is_error and "occurs 2 times" in twice.output
    once = await _call(workdir, "edit_file", path="a.py", old_string="y = 1", new_string="y = 3")
    assert not once.is_error
    every = await _call(
        workdir, "edit_file", path="a.py", old_string="x = 1", new_string="x = 0", replace_all=True
    )
    assert "replaced 2" in every.output
    assert (workdir / "a.py").read_text() == "x = 0\ny = 3\nx = 0\n"


@pytest.mark.anyio
async def test_list_dir_and_glob(workdir: Path) -> None:
    (workdir / "pkg").mkdir()
    (workdir / "pkg" / "m.py").write_text("")
    (workdir / "top.py").write_text("")
    (workdir / "notes.md").write_text("")
    assert (await _call(workdir, "list_dir")).output.splitlines() == ["notes.md", "pkg/", "top.py"]
    found = await _call(workdir, "glob", pattern="**/*.py")
    assert found.output.splitlines() == ["pkg/m.py", "top.py"]
    escape = await _call(workdir, "glob", pattern="../*")
    assert escape.is_error


@pytest.mark.anyio
async def test_write_outside_is_refused_and_nothing_is_written(
    tmp_path: Path, workdir: Path
) -> None:
    result = await _call(workdir, "write_file", path="../evil.txt", content="x")
    assert result.is_error and "outside the working directory" in result.output
    assert not (tmp_path / "evil.txt").exists()


# -- search_file --------------------------------------------------------------------


@pytest.fixture
def tree(workdir: Path) -> Path:
    (workdir / "src").mkdir()
    (workdir / "src" / "engine.py").write_text("def new_engine():\n    return Engine(1)\n")
    (workdir / "src" / "util.py").write_text("value = a.b\nvalue = axb\n")
    (workdir / "README.md").write_text("call new_engine() first\n")
    return workdir


@pytest.mark.anyio
async def test_search_finds_literal_matches_as_path_line_text(tree: Path) -> None:
    result = await _call(tree, "search_file", pattern="new_engine(")
    assert result.output.splitlines() == [
        "README.md:1: call new_engine() first",
        "src/engine.py:1: def new_engine():",
    ]
    # Literal by default: the dot is not a wildcard.
    assert (await _call(tree, "search_file", pattern="a.b")).output == "src/util.py:1: value = a.b"


@pytest.mark.anyio
async def test_search_with_regex_and_a_path(tree: Path) -> None:
    result = await _call(tree, "search_file", pattern=r"a.b$", regex=True, path="src")
    assert result.output.splitlines() == [
        "src/util.py:1: value = a.b",
        "src/util.py:2: value = axb",
    ]
    one_file = await _call(
        tree, "search_file", pattern=r"Engine\(\d\)", regex=True, path="src/engine.py"
    )
    assert one_file.output == "src/engine.py:2:     return Engine(1)"
    bad = await _call(tree, "search_file", pattern="(", regex=True)
    assert bad.is_error and "invalid regular expression" in bad.output
    none = await _call(tree, "search_file", pattern="zzz")
    assert not none.is_error and "no matches" in none.output


@pytest.mark.anyio
async def test_search_caps_matches_and_says_how_many_more(workdir: Path) -> None:
    (workdir / "many.txt").write_text("hit\n" * (MAX_MATCHES + 37))
    lines = (await _call(workdir, "search_file", pattern="hit")).output.splitlines()
    assert len(lines) == MAX_MATCHES + 1
    assert "37 more matches" in lines[-1]


@pytest.mark.anyio
async def test_search_refuses_dotdot_and_symlink_escapes(tmp_path: Path, workdir: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("password=hunter2\n")
    os.symlink(outside, workdir / "door")
    os.symlink(outside / "secret.txt", workdir / "leak.txt")
    (workdir / "mine.txt").write_text("password=mine\n")
    for path in ("../outside", "..", "door", "leak.txt", str(outside)):
        result = await _call(workdir, "search_file", pattern="password", path=path)
        assert result.is_error and "outside the working directory" in result.output, path
    everywhere = await _call(workdir, "search_file", pattern="password")
    assert everywhere.output == "mine.txt:1: password=mine"


# -- special files ------------------------------------------------------------------

# Seconds. A tool that blocks on a FIFO only returns once the unblocker opens the
# other end after PROMPT seconds; a correct one answers in milliseconds. The margin
# keeps a loaded CI machine from turning a correct answer into a failure.
PROMPT = 15.0


@contextmanager
def _fifo_unblocker(fifo: Path, after: float) -> Iterator[None]:
    """After ``after`` seconds, keep opening ``fifo`` for writing so a reader stuck on it
    gets end-of-file: without the fix the test then fails instead of hanging the suite."""
    stop = threading.Event()

    def unblock() -> None:
        if stop.wait(after):
            return
        while not stop.wait(0.05):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError as error:  # ENXIO: nobody is reading it right now
                assert error.errno == errno.ENXIO

    watchdog = threading.Thread(target=unblock, daemon=True)
    watchdog.start()
    try:
        yield
    finally:
        stop.set()
        watchdog.join()


@pytest.fixture
def fifo(workdir: Path) -> Path:
    (workdir / "notes.txt").write_text("x marks the spot\n")
    pipe = workdir / "pipe"
    os.mkfifo(pipe)
    return pipe


@pytest.mark.anyio
async def test_search_skips_a_fifo_and_answers_promptly(workdir: Path, fifo: Path) -> None:
    with _fifo_unblocker(fifo, after=PROMPT):
        started = time.monotonic()
        result = await _call(workdir, "search_file", pattern="x")
        named = await _call(workdir, "search_file", pattern="x", path="pipe")
        elapsed = time.monotonic() - started
    assert elapsed < PROMPT
    assert result.output == "notes.txt:1: x marks the spot"
    assert named.is_error and "not a regular file" in named.output


@pytest.mark.anyio
async def test_read_edit_and_write_refuse_a_fifo_promptly(workdir: Path, fifo: Path) -> None:
    with _fifo_unblocker(fifo, after=PROMPT):
        started = time.monotonic()
        read = await _call(workdir, "read_file", path="pipe")
        edit = await _call(workdir, "edit_file", path="pipe", old_string="a", new_string="b")
        write = await _call(workdir, "write_file", path="pipe", content="x")
        elapsed = time.monotonic() - started
    assert elapsed < PROMPT
    for result in (read, edit, write):
        assert result.is_error and "pipe is not a regular file" in result.output
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # not replaced by write_file


@pytest.mark.anyio
async def test_cancelling_a_blocked_threaded_tool_returns_promptly(workdir: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def stuck(context: ToolContext, arguments: dict[str, Any]) -> str:
        entered.set()
        release.wait(PROMPT * 2)  # stands in for a system call that never returns
        return "too late"

    tool = threaded(stuck)
    outcome: list[str] = []
    try:
        started = time.monotonic()
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:

                async def call() -> None:
                    outcome.append(await tool(ToolContext(workdir), {}))

                group.start_soon(call)
                await anyio.to_thread.run_sync(entered.wait, PROMPT)
                scope.cancel()
        elapsed = time.monotonic() - started
    finally:
        release.set()  # let the abandoned thread end
    assert scope.cancelled_caught and outcome == []
    assert elapsed < PROMPT


STUCK_TOOL = """
import sys
from pathlib import Path

import anyio

from attractor.agent.tools import ToolContext
from attractor.agent.tools.base import threaded


def stuck(context, arguments):
    return Path(sys.argv[1]).read_text()  # a FIFO nobody writes: blocks for good


async def main():
    with anyio.move_on_after(0.2):
        await threaded(stuck)(ToolContext(Path(".")), {})
    print("cancelled", flush=True)


anyio.run(main)
"""


def test_a_tool_thread_stuck_for_good_does_not_hold_the_process_at_exit(tmp_path: Path) -> None:
    fifo = tmp_path / "never-written"
    os.mkfifo(fifo)
    script = tmp_path / "stuck.py"
    script.write_text(STUCK_TOOL)
    try:
        done = subprocess.run(
            [sys.executable, str(script), str(fifo)],
            capture_output=True,
            text=True,
            timeout=PROMPT * 3,
        )
    finally:
        # Free a reader left behind by a failing run, so nothing lingers.
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "cancelled\n"


# -- shell ------------------------------------------------------------------------


def _alive(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -eo" not in line]


@pytest.mark.anyio
async def test_shell_reports_output_and_exit_code(workdir: Path) -> None:
    result = await _call(workdir, "shell", command="echo hi; echo oops >&2; exit 3")
    assert result.output == "hi\n[stderr]\noops\n[exit code 3]"
    alias = await _call(workdir, "run_command", command="pwd")
    assert alias.output.splitlines()[0].endswith("/work")


@pytest.mark.anyio
async def test_shell_timeout_kills_the_command_and_its_children(workdir: Path) -> None:
    marker = f"attractor-test-{uuid.uuid4().hex}"
    script = workdir / "slow.sh"
    script.write_text(f"echo started\nsh -c 'sleep 60; : {marker}' &\nsleep 61\n")
    result = await _call(workdir, "shell", command="sh slow.sh", timeout=0.5)
    assert result.output.startswith("started\n")
    assert "timed out after 0.5s" in result.output and "partial" in result.output
    assert _alive(marker) == []


@pytest.mark.anyio
async def test_shell_timeout_above_the_cap_is_lowered_with_a_note(workdir: Path) -> None:
    result = await _call(workdir, "shell", command="echo fine", timeout=999)
    assert "lowered from 999s to the cap of 5s" in result.output
    assert "[exit code 0]" in result.output
