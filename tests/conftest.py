"""Fixtures shared by every test folder."""

from __future__ import annotations

import signal

import pytest

# Tests started in the background (``&``, ``nohup``) ignore SIGINT and SIGHUP, and
# every process a test starts would inherit that: the tests of stop signals need
# what a terminal gives (an ignored signal stays ignored in attractor, on purpose).
for _signum, _default in (
    (signal.SIGINT, signal.default_int_handler),
    (signal.SIGHUP, signal.SIG_DFL),
):
    if signal.getsignal(_signum) is signal.SIG_IGN:
        signal.signal(_signum, _default)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
