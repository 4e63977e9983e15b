"""Helpers for driving ``attractor run``/``resume`` on real files and processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from attractor.cli.main import cli

#: Variables that would leak the developer's settings into a test run.
_LEAKY_PREFIXES = ("ATTRACTOR_", "OPENAI_", "ANTHROPIC_", "GEMINI_", "GOOGLE_API")


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """An env overlay for CliRunner: every leaky variable unset, then ``extra``."""
    env: dict[str, str | None] = {k: None for k in os.environ if k.startswith(_LEAKY_PREFIXES)}
    env["NO_COLOR"] = "1"
    env.update(extra or {})
    return env


def invoke(args: Sequence[str], env: Mapping[str, str] | None = None) -> Result:
    """Run the real CLI in-process; stdout and stderr are kept apart."""
    return CliRunner().invoke(cli, list(args), env=clean_env(env), catch_exceptions=False)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def marker() -> str:
    """A unique word to find a test's processes by their command line."""
    return f"attractor_test_{uuid.uuid4().hex[:12]}"


def run_dirs(logs: Path) -> list[Path]:
    return sorted(p for p in logs.iterdir() if p.is_dir()) if logs.is_dir() else []


def only_run_dir(logs: Path) -> Path:
    dirs = run_dirs(logs)
    assert len(dirs) == 1, f"expected one run directory in {logs}, found {dirs}"
    return dirs[0]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def events(run_dir: Path) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def completed_stages(run_dir: Path) -> list[str]:
    """Names of the stages that completed, in order, from events.jsonl."""
    return [e["name"] for e in events(run_dir) if e["type"] == "stage_completed"]


def started_stages(run_dir: Path) -> list[str]:
    """Names of every stage attempt that started, in order, from events.jsonl."""
    return [e["name"] for e in events(run_dir) if e["type"] == "stage_started"]


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines() if path.exists() else []


# -- subprocesses ------------------------------------------------------------------


def spawn(
    args: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] | None = None,
    *,
    stdin: int | None = subprocess.DEVNULL,
) -> subprocess.Popen[str]:
    """Start ``python -m attractor ARGS`` as a real process.

    stdin is empty unless the caller asks for a pipe (``subprocess.PIPE``) to
    answer human gates or to hold a prompt open.
    """
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(_LEAKY_PREFIXES)}
    full_env.update({"NO_COLOR": "1", **(env or {})})
    return subprocess.Popen(
        [sys.executable, "-m", "attractor", *args],
        cwd=cwd,
        env=full_env,
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 60) -> tuple[int, str, str]:
    """Wait for ``proc``; kill it if it hangs so no test leaves a process behind."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"attractor did not exit within {timeout}s:\n{out}\n{err}") from None
    return proc.returncode, out, err


def wait_exit(proc: subprocess.Popen[str], timeout: float = 30) -> int:
    """Wait for ``proc`` to end *without* closing its stdin (communicate would)."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        raise AssertionError(f"attractor did not exit within {timeout}s") from None


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def pids_with(word: str) -> list[int]:
    """Live processes whose command line contains ``word`` (zombies have none)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if word.encode() in cmdline:
            found.append(int(entry.name))
    return found


def kill_all(word: str) -> None:
    """Clean-up after a failed test: SIGKILL whatever still carries ``word``."""
    for pid in pids_with(word):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@contextlib.contextmanager
def sleep_mark(seconds: int) -> Iterator[str]:
    """A unique number of about ``seconds``, usable as a ``sleep`` argument and found
    again in /proc; whatever still carries it is killed on the way out."""
    word = f"{seconds}.{uuid.uuid4().int % 10**9:09d}"
    try:
        yield word
    finally:
        kill_all(word)
