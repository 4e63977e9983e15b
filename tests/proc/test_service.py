"""A helper process lives as long as its step and is stopped with it."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import pytest

from attractor.proc.service import open_service
from tests.proc.prockit import cancel_once_started, children

pytestmark = pytest.mark.anyio


async def test_it_answers_on_its_pipes_and_is_gone_after_the_step(tmp_path: Path) -> None:
    before = children()
    async with open_service(["cat"], cwd=tmp_path, env=dict(os.environ)) as process:
        assert process.stdin is not None and process.stdout is not None
        await process.stdin.send(b"ping\n")
        assert await process.stdout.receive() == b"ping\n"
    assert children() - before == set()


async def test_a_service_cancelled_as_it_starts_leaves_no_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # asyncio connects the pipes after the start; cancelled in between, the service
    # was once killed but never awaited (a zombie), and never written in the ledger.
    before = children()
    with anyio.CancelScope() as scope:
        cancel_once_started(monkeypatch, scope)
        async with open_service(["sleep", "30"], cwd=tmp_path, env=dict(os.environ)):
            await anyio.sleep(30)
    assert children() - before == set()
