"""read_file reads only what offset and limit ask for, whatever the size of the file."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from attractor.agent.tools import ToolContext, ToolResult, default_registry
from attractor.agent.tools.files import MAX_LINE_BYTES, MAX_READ_BYTES
from attractor.llm.types import ToolCall

# Seconds: reading all of an 8 GiB file takes far longer (or runs out of memory).
PROMPT = 15.0
GIB = 1024**3


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


async def _call(workdir: Path, name: str, **arguments: Any) -> ToolResult:
    return await default_registry().execute(ToolCall("c1", name, arguments), ToolContext(workdir))


def _sparse(path: Path, head: bytes, size: int) -> None:
    with path.open("wb") as handle:
        handle.write(head)
        handle.truncate(size)


@pytest.mark.anyio
async def test_limit_one_on_an_8_gib_sparse_file_reads_one_line(workdir: Path) -> None:
    _sparse(workdir / "big.log", b"".join(b"line %d\n" % n for n in range(1, 2001)), 8 * GIB)
    started = time.monotonic()
    first = await _call(workdir, "read_file", path="big.log", limit=1)
    later = await _call(workdir, "read_file", path="big.log", offset=1500, limit=2)
    assert time.monotonic() - started < PROMPT
    assert first.output == "1 | line 1\n[lines 1-1 shown; more follow: use offset=2 to read on]"
    assert later.output.splitlines() == [
        "1500 | line 1500",
        "1501 | line 1501",
        "[lines 1500-1501 shown; more follow: use offset=1502 to read on]",
    ]


@pytest.mark.anyio
async def test_a_one_gib_single_line_is_cut_and_reading_stops(workdir: Path) -> None:
    _sparse(workdir / "one.min.js", b"x" * (MAX_LINE_BYTES + 10), GIB)
    started = time.monotonic()
    result = await _call(workdir, "read_file", path="one.min.js")
    assert time.monotonic() - started < PROMPT
    [line, note] = result.output.split("\n")
    assert line.startswith("1 | " + "x" * MAX_LINE_BYTES + " [line cut: over ")
    assert note == "[line 1 is longer than 16 MiB; reading stopped]"
    beyond = await _call(workdir, "read_file", path="one.min.js", offset=2)
    assert beyond.is_error and "line 1 of one.min.js is longer than 16 MiB" in beyond.output


@pytest.mark.anyio
async def test_a_long_line_is_cut_with_a_note_and_the_next_line_still_reads(
    workdir: Path,
) -> None:
    extra = 5000
    (workdir / "f.txt").write_bytes(b"y" * (MAX_LINE_BYTES + extra) + b"\r\nnext\r\n")
    result = await _call(workdir, "read_file", path="f.txt")
    assert result.output.splitlines() == [
        "1 | " + "y" * MAX_LINE_BYTES + f" [line cut: {extra} more bytes not shown]",
        "2 | next",
    ]


@pytest.mark.anyio
async def test_one_answer_is_capped_in_bytes_and_says_where_to_go_on(workdir: Path) -> None:
    width = 10_000
    (workdir / "wide.txt").write_text("".join(f"{n:0{width}d}\n" for n in range(1, 101)))
    result = await _call(workdir, "read_file", path="wide.txt")
    shown = -(-MAX_READ_BYTES // width)  # lines until the cap is reached
    lines = result.output.splitlines()
    assert len(lines) == shown + 1
    assert lines[-1] == f"[lines 1-{shown} of 100; use offset={shown + 1} to read on]"


@pytest.mark.anyio
async def test_the_whole_file_read_has_no_trailer_and_offsets_past_the_end_fail(
    workdir: Path,
) -> None:
    (workdir / "f.txt").write_text("a\nb\nc")
    assert (await _call(workdir, "read_file", path="f.txt")).output == "1 | a\n2 | b\n3 | c"
    tail = await _call(workdir, "read_file", path="f.txt", offset=3)
    assert tail.output == "3 | c"
    past = await _call(workdir, "read_file", path="f.txt", offset=4)
    assert past.is_error and "offset 4 is past the end: the file has 3 lines" in past.output
    (workdir / "empty.txt").write_text("")
    assert (await _call(workdir, "read_file", path="empty.txt")).output == "empty.txt is empty"


@pytest.mark.anyio
async def test_binary_detection_and_a_fifo_still_refused(workdir: Path) -> None:
    (workdir / "blob").write_bytes(b"text\n" + b"\0" * 10)
    os.mkfifo(workdir / "pipe")
    binary = await _call(workdir, "read_file", path="blob", limit=1)
    assert binary.is_error and "binary" in binary.output
    pipe = await _call(workdir, "read_file", path="pipe")
    assert pipe.is_error and "pipe is not a regular file" in pipe.output
