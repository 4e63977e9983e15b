from __future__ import annotations

from collections.abc import Iterator

import pytest

from attractor.llm.retry import RetryPolicy
from tests.llm.fake_http import FakeServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Iterator[FakeServer]:
    """A scripted HTTP server on 127.0.0.1; add replies with ``server.add``."""
    with FakeServer().running() as running:
        yield running


@pytest.fixture
def fast_retry() -> RetryPolicy:
    """Retries without real waiting, so tests stay quick."""
    return RetryPolicy(max_retries=3, base_delay=0.001, max_delay=0.01, jitter=0.0)
