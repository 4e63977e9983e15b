"""Following a command's output files: whole lines, offsets, bounded batches."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.proc import follow
from attractor.proc.follow import Chunk, OutputFollower
from attractor.proc.process import run_process


def _follower(path: Path) -> tuple[OutputFollower, list[Chunk]]:
    got: list[Chunk] = []
    return OutputFollower({"stdout": path}, got.append), got


def test_whole_lines_only_until_the_end_then_the_rest(tmp_path: Path) -> None:
    out = tmp_path / "stdout.txt"
    out.write_bytes(b"one\ntw")
    follower, got = _follower(out)
    follower.poll(final=False)
    assert got == [Chunk("stdout", 0, "one\n")]
    follower.poll(final=False)  # nothing new, and the half line waits
    assert len(got) == 1
    with out.open("ab") as f:
        f.write(b"o\nthree")
    follower.poll(final=False)
    assert got[-1] == Chunk("stdout", 4, "two\n")
    follower.finish()
    # The stream ended without a newline: the last line gets one.
    assert got[-1] == Chunk("stdout", 8, "three\n")
    assert out.read_bytes()[8:] == b"three"


def test_a_flood_keeps_the_last_lines_and_says_what_it_skipped(tmp_path: Path) -> None:
    out = tmp_path / "stdout.txt"
    lines = b"".join(b"line %06d\n" % i for i in range(20_000))  # 240,000 bytes
    out.write_bytes(lines)
    follower, got = _follower(out)
    follower.poll(final=False)
    (chunk,) = got
    assert len(chunk.text.encode()) <= follow.CHUNK_LIMIT
    assert chunk.text.endswith("line 019999\n")
    assert chunk.text.startswith("line ")  # starts at a line start
    assert chunk.skipped == chunk.offset > 0
    assert lines[chunk.offset :].decode() == chunk.text


def test_after_its_budget_a_stream_gets_small_batches(tmp_path: Path) -> None:
    out = tmp_path / "stdout.txt"
    line = b"x" * 1023 + b"\n"
    follower, got = _follower(out)
    with out.open("ab") as f:
        for _ in range(follow.STREAM_BUDGET // follow.CHUNK_LIMIT):
            f.write(line * (follow.CHUNK_LIMIT // len(line)))
            f.flush()
            follower.poll(final=False)
        assert sum(len(c.text) for c in got) == follow.STREAM_BUDGET
        assert all(c.skipped == 0 for c in got)
        f.write(line * 64)
    follower.poll(final=False)
    assert len(got[-1].text) <= follow.LATE_CHUNK_LIMIT
    assert got[-1].skipped > 0


def test_a_missing_file_gives_nothing(tmp_path: Path) -> None:
    follower, got = _follower(tmp_path / "never.txt")
    follower.finish()
    assert got == []


@pytest.mark.anyio
async def test_an_error_of_the_command_comes_out_as_itself_after_the_last_lines(
    tmp_path: Path,
) -> None:
    out = tmp_path / "stdout.txt"
    follower, got = _follower(out)
    with pytest.raises(PermissionError, match="no way"), follower.running():
        out.write_bytes(b"last words")
        raise PermissionError("no way")
    assert got == [Chunk("stdout", 0, "last words\n")]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("timeout", "limit"),
    [(None, None), (30.0, None), (30.0, 1 << 20)],
    ids=["no-timeout", "timeout", "piped-stdout"],
)
async def test_the_wait_of_a_command_in_the_block_hands_lines_over_while_it_runs(
    tmp_path: Path, timeout: float | None, limit: int | None
) -> None:
    # The command prints, then waits until the test saw that line: only a read
    # while it runs can let it end (with a timeout or a capped stdout too).
    out, gate = tmp_path / "stdout.txt", tmp_path / "go"
    got: list[Chunk] = []

    def sink(chunk: Chunk) -> None:
        got.append(chunk)
        gate.touch()

    command = f"echo first; while [ ! -e {gate} ]; do sleep 0.02; done; echo second"
    with OutputFollower({"stdout": out}, sink).running():
        result = await run_process(
            command,
            cwd=tmp_path,
            timeout=timeout,
            stdout_path=out,
            stderr_path=tmp_path / "stderr.txt",
            stdout_limit=limit,
        )
    assert result.returncode == 0 and not result.timed_out
    assert got == [Chunk("stdout", 0, "first\n"), Chunk("stdout", 6, "second\n")]


@pytest.mark.anyio
async def test_a_command_followed_still_times_out(tmp_path: Path) -> None:
    out = tmp_path / "stdout.txt"
    follower, got = _follower(out)
    with follower.running():
        result = await run_process(
            "echo waiting; sleep 30", cwd=tmp_path, timeout=0.3, kill_grace=0.2,
            stdout_path=out, stderr_path=tmp_path / "stderr.txt",
        )  # fmt: skip
    assert result.timed_out and result.returncode is None
    assert got == [Chunk("stdout", 0, "waiting\n")]
