"""What the web page's browser tests share: Debian's chromium, launched headless.

The browser is the system one (``executable_path``); Playwright never downloads
its own. Playwright is imported only when a browser starts, so a test module
with a browser test among others loads without it.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: Skips a test that drives the page where chromium is not installed (CI installs it: .ci/run).
SKIP_WITHOUT_CHROMIUM = pytest.mark.skipif(
    CHROMIUM is None,
    reason="the web page's test needs Debian's chromium, which is not installed: "
    "apt-get install chromium (as root; .ci/run installs it)",
)
#: The marks of a module of browser tests: slow, and skipped without chromium.
NEEDS_CHROMIUM = [pytest.mark.slow, SKIP_WITHOUT_CHROMIUM]


@contextmanager
def launched_chromium() -> Iterator[Browser]:
    """A headless chromium, closed on the way out."""
    from playwright.sync_api import sync_playwright

    assert CHROMIUM is not None
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            yield launched
        finally:
            launched.close()
