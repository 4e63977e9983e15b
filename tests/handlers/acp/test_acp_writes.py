"""The agent's file writes end before its session does (or are given up, bounded)."""

from __future__ import annotations

import threading
from pathlib import Path

import anyio
import pytest

from attractor.handlers.acp.writes import Writes

pytestmark = pytest.mark.anyio


class _SlowWrite:
    """A write of ``target`` that starts, then waits to be let through."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.started = threading.Event()
        self.go = threading.Event()

    def __call__(self) -> None:
        self.started.set()
        self.go.wait(60)
        self.target.write_text("written", encoding="utf-8")


async def _cancelled_as_the_sdk_does(writes: Writes, write: _SlowWrite) -> None:
    """Start ``write`` from a request the ACP SDK's way, then cancel the request its way:
    a bare ``task.cancel()``, which no anyio shield holds back."""
    import asyncio  # noqa: TID251  # what the SDK does, reproduced

    request = asyncio.ensure_future(writes.run(write.target.name, write))
    await anyio.to_thread.run_sync(write.started.wait, 60)
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request


async def test_a_write_whose_request_was_cancelled_ends_before_the_session(
    tmp_path: Path,
) -> None:
    write = _SlowWrite(tmp_path / "out.txt")
    warned: list[str] = []
    async with anyio.create_task_group() as session:
        writes = Writes(session, warned.append)
        await _cancelled_as_the_sdk_does(writes, write)
        assert not write.target.exists()  # the request is gone, its write is not
        write.go.set()
        writes.settle(60)
        session.cancel_scope.cancel()  # as the session's end does
    assert write.target.read_text(encoding="utf-8") == "written"
    assert writes.abandoned == [] and warned == []


async def test_a_write_that_does_not_end_is_given_up_after_the_grace(tmp_path: Path) -> None:
    write = _SlowWrite(tmp_path / "out.txt")
    warned: list[str] = []
    async with anyio.create_task_group() as session:
        writes = Writes(session, warned.append)
        await _cancelled_as_the_sdk_does(writes, write)
        writes.settle(0.05)
    assert writes.abandoned == ["out.txt"]
    assert warned == [
        "the agent's write of out.txt was still going 0.05s after its session ended: "
        "it may land in the work tree later"
    ]
    assert not write.target.exists()
    write.go.set()  # its thread ends and writes, late: what the warning says may happen


async def test_a_failed_write_is_raised_to_its_request(tmp_path: Path) -> None:
    def write() -> None:
        raise PermissionError(13, "Permission denied")

    warned: list[str] = []
    async with anyio.create_task_group() as session:
        with pytest.raises(PermissionError):
            await Writes(session, warned.append).run("x", write)
