"""``attractor logs RUN_DIR -f`` in a real terminal (a pty) beside a real running ``attractor run``.

The tool node prints a line, then waits for a file the test creates only once
it saw that line in the follower's terminal: lines must arrive while the step
runs, not when it ends.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.cli.runkit import finish, only_run_dir, run_dirs, spawn, wait_for, write


class Terminal:
    """A process whose stdin, stdout and stderr are a pty it controls (Ctrl-C works)."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ATTRACTOR_")}
        env.update({"TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"})
        env.pop("NO_COLOR", None)
        pid, fd = pty.fork()
        if pid == 0:  # the child: exec at once
            os.chdir(cwd)
            os.execve(sys.executable, [sys.executable, "-m", "attractor", *args], env)
        self.pid, self.fd = pid, fd
        self.seen = b""
        self.status: int | None = None

    def wait_for(self, text: str, timeout: float = 60) -> None:
        """Read the screen until ``text`` appears on it."""
        deadline = time.monotonic() + timeout
        while text.encode() not in self.seen:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} not shown; the terminal shows:\n{self.text()}")
            ready, _, _ = select.select([self.fd], [], [], min(left, 1.0))
            if ready and not self._read():
                raise AssertionError(f"{text!r} not shown before exit:\n{self.text()}")

    def _read(self) -> bool:
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO: the other side closed
            return False
        self.seen += data
        return bool(data)

    def text(self) -> str:
        return self.seen.decode("utf-8", errors="replace")

    def exit_code(self, timeout: float = 60) -> int:
        """Wait for the process to end, reading its last output meanwhile."""
        deadline = time.monotonic() + timeout
        while self.status is None:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.status = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"still running after {timeout}s:\n{self.text()}")
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                self._read()
        while self._read():  # whatever is left on the screen
            pass
        return self.status

    def close(self) -> None:
        if self.status is None:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.status = -9
        os.close(self.fd)


@contextmanager
def terminal(args: list[str], cwd: Path) -> Iterator[Terminal]:
    term = Terminal(args, cwd)
    try:
        yield term
    finally:
        term.close()


_PIPELINE = """\
digraph slow {
  start [shape=Mdiamond]
  done [shape=Msquare]
  talk [shape=parallelogram, tool_command="sh talk.sh"]
  start -> talk -> done
}
"""

#: Prints a line, in colour, then waits for the test to let it print the next.
_TALK = """\
printf 'first \\033[32mgreen\\033[0m\\n'
while [ ! -e go1 ]; do sleep 0.05; done
echo second
while [ ! -e go2 ]; do sleep 0.05; done
echo third >&2
"""


def _start_run(workspace: Path) -> tuple[subprocess.Popen[str], Path]:
    write(workspace / "p.dot", _PIPELINE)
    write(workspace / "talk.sh", _TALK)
    run = spawn(["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}"], workspace)
    wait_for(lambda: bool(run_dirs(workspace / "runs")), "the run directory")
    run_dir = only_run_dir(workspace / "runs")
    wait_for(lambda: (run_dir / "manifest.json").exists(), "the manifest")
    return run, run_dir


def test_logs_f_shows_lines_while_the_step_runs_and_ends_with_the_run(workspace: Path) -> None:
    run, run_dir = _start_run(workspace)
    try:
        with terminal(["logs", str(run_dir), "-f"], workspace) as term:
            term.wait_for("==> talk (tool), visit 1, attempt 1")
            term.wait_for("first")
            assert "\x1b[32mgreen\x1b[0m" in term.text()  # a terminal keeps the colours
            assert "second" not in term.text()
            (workspace / "go1").touch()
            term.wait_for("second")
            assert "third" not in term.text()
            (workspace / "go2").touch()
            term.wait_for("third")
            term.wait_for("== pipeline succeeded")
            assert term.exit_code() == 0
            shown = term.text().replace("\r\n", "\n")
            assert shown.index("first") < shown.index("second") < shown.index("third")
            assert "<== talk: success in " in shown
    finally:
        (workspace / "go1").touch()
        (workspace / "go2").touch()
        code, out, err = finish(run)
    assert code == 0, out + err


def test_ctrl_c_stops_following_with_130(workspace: Path) -> None:
    run, run_dir = _start_run(workspace)
    try:
        with terminal(["logs", str(run_dir), "talk", "--follow"], workspace) as term:
            term.wait_for("first")
            os.write(term.fd, b"\x03")  # Ctrl-C typed in the terminal
            assert term.exit_code() == 130
            assert "Traceback" not in term.text()
            assert "error: interrupted (Ctrl-C)" in term.text()
        # Following stopped; the run did not.
        assert run.poll() is None
    finally:
        (workspace / "go1").touch()
        (workspace / "go2").touch()
        code, out, err = finish(run)
    assert code == 0, out + err
