"""The language server's tests need its extra (pygls); CI installs it with dev."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    # pygls's client runs on asyncio.
    return "asyncio"
