"""The web page's scripts parse: a syntax error would leave the page blank."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from attractor.server.app import STATIC


@pytest.mark.parametrize("script", sorted(p.name for p in STATIC.glob("*.js")))
def test_the_page_script_is_valid_javascript(script: str) -> None:
    if shutil.which("node") is None:
        pytest.skip("needs Node.js: apt-get install nodejs npm")
    done = subprocess.run(["node", "--check", str(STATIC / script)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
