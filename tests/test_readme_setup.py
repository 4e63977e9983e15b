"""The README's set-up commands: what CI runs, and what a fresh machine needs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def _setup_commands() -> dict[str, str]:
    """The numbered commands of the README's Set-up block (``# 1. ...`` -> next line)."""
    readme = (ROOT / "README.md").read_text("utf-8")
    block = readme.split("## Set-up", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    lines = block.splitlines()
    found = {}
    for n, line in enumerate(lines):
        number = re.match(r"# (\d)\. ", line)
        if number:
            found[number.group(1)] = lines[n + 1]
    return found


def test_ci_runs_the_readmes_test_command_exactly() -> None:
    commands = _setup_commands()
    assert set(commands) == {"1", "2"}
    ci = (ROOT / ".ci" / "run").read_text("utf-8").splitlines()
    assert commands["2"] in ci


def test_the_commands_work_where_pip_refuses_to_install_outside_a_venv() -> None:
    # Debian's Python (PEP 668) refuses a bare pip install: both commands use the venv.
    commands = _setup_commands()
    assert commands["1"].startswith("python3 -m venv .venv && . .venv/bin/activate && ")
    assert commands["2"].startswith(". .venv/bin/activate && ")


def test_the_web_page_test_skips_saying_how_to_get_chromium(tmp_path: Path) -> None:
    """Without chromium on PATH the page's test skips with the install command."""
    bin_dir = Path(sys.executable).parent  # python and nothing else: no chromium
    env = {**os.environ, "PATH": str(bin_dir)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/server/test_web_page.py", "-rs", "-q",
         "-p", "no:cacheprovider"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "skipped" in done.stdout and "apt-get install chromium" in done.stdout


def test_the_readme_gives_the_inner_loop_and_ci_still_runs_everything() -> None:
    """The inner loop leaves out the ``slow`` tests; the README's command 2 (CI's) does not."""
    readme = (ROOT / "README.md").read_text("utf-8")
    assert '. .venv/bin/activate && pytest -m "not slow"' in readme
    assert "-m" not in _setup_commands()["2"].split("&& pytest", 1)[1]
    pyproject = (ROOT / "pyproject.toml").read_text("utf-8")
    assert re.search(r'^\s*"slow: ', pyproject, re.M), "the slow marker is registered"
