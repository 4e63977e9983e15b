"""Fixtures of the server tests: a root folder with a pipeline and a live server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.serverkit import GATE_PIPELINE, Server, start_server


@pytest.fixture
def root(tmp_path: Path) -> Path:
    folder = tmp_path / "root"
    folder.mkdir()
    (folder / "gate.dot").write_text(GATE_PIPELINE)
    return folder


@pytest.fixture
def server(root: Path) -> Iterator[Server]:
    running = start_server(root)
    try:
        yield running
    finally:
        running.stop()
