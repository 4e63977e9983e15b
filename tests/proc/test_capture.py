"""Short commands run to their end with what they wrote kept (git's way of running)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from attractor.proc import capture
from attractor.proc.capture import captured
from tests.proc.prockit import cancel_once_started, children, outlived

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["memfd", "anyio"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both ways of running: in-memory files and a pidfd, or anyio's processes."""
    if request.param == "anyio":
        monkeypatch.setattr(capture, "_FAST", False)
    elif not capture._FAST:
        pytest.skip("this kernel has no memfd or pidfd")
    yield request.param


async def test_the_exit_status_stdout_and_stderr_come_back(way: str, tmp_path: Path) -> None:
    done = await captured(
        ["sh", "-c", "echo out; echo err >&2; exit 3"], cwd=tmp_path, env=dict(os.environ)
    )
    assert done == (3, b"out\n", b"err\n")


async def test_input_larger_than_a_pipe_reaches_stdin_whole(way: str, tmp_path: Path) -> None:
    data = bytes(range(256)) * 1024  # 256 KiB: four times a pipe's buffer
    code, out, _ = await captured(["cat"], cwd=tmp_path, env=dict(os.environ), input=data)
    assert (code, out) == (0, data)


async def test_without_input_stdin_is_empty(way: str, tmp_path: Path) -> None:
    # Not the caller's terminal: cat ends at once.
    code, out, _ = await captured(["cat"], cwd=tmp_path, env=dict(os.environ))
    assert (code, out) == (0, b"")


async def test_a_large_output_comes_back_whole(way: str, tmp_path: Path) -> None:
    code, out, _ = await captured(
        ["head", "-c", "3000000", "/dev/urandom"], cwd=tmp_path, env=dict(os.environ)
    )
    assert code == 0 and len(out) == 3_000_000


async def test_the_umask_and_folder_are_the_commands(way: str, tmp_path: Path) -> None:
    code, out, _ = await captured(
        ["sh", "-c", "umask; pwd"], cwd=tmp_path, env=dict(os.environ), umask=0o077
    )
    assert (code, out.decode().split()) == (0, ["0077", str(tmp_path)])


async def test_a_missing_program_is_an_os_error(way: str, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        await captured(["no-such-program-here"], cwd=tmp_path, env=dict(os.environ))


async def _cancelled_once_it_tells(tmp_path: Path, script: str) -> int:
    """Run ``sh -c script`` (``$FIFO``: where it writes a pid) and cancel it once it
    has written: the pid it wrote."""
    fifo = tmp_path / "started"
    os.mkfifo(fifo)
    env = {**os.environ, "FIFO": str(fifo)}
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(lambda: captured(["sh", "-c", script], cwd=tmp_path, env=env))
            pid = int(await anyio.to_thread.run_sync(fifo.read_text))
            scope.cancel()
    return pid


async def test_a_cancelled_command_is_killed_and_reaped(way: str, tmp_path: Path) -> None:
    pid = await _cancelled_once_it_tells(tmp_path, 'echo $$ > "$FIFO" && exec sleep 30')
    with pytest.raises(ProcessLookupError):  # killed, and reaped: no zombie left either
        os.kill(pid, 0)


async def test_what_a_cancelled_command_started_is_killed_with_it(way: str, tmp_path: Path) -> None:
    # git's clean and smudge filters, hooks and ssh run as its children: a run's
    # --timeout once killed git alone and left them running.
    helper = await _cancelled_once_it_tells(tmp_path, 'sleep 30 & echo $! > "$FIFO"; wait')
    assert not outlived(helper)


#: Run in a process whose controlling terminal is a new pseudo-terminal: captured()
#: a command that reads a line from the terminal; exits with the command's status.
_AT_A_TERMINAL = """
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    import anyio
    from pathlib import Path
    from attractor.proc import capture
    capture._FAST = sys.argv[1] == "memfd"
    run = capture.captured(["sh", "-c", "read line </dev/tty"], cwd=Path("."), env=dict(os.environ))
    os._exit(anyio.run(lambda: run)[0])
while True:
    try:
        if not os.read(fd, 1024):
            break
    except OSError:  # the terminal's other end closed
        break
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"""


def test_a_command_cannot_wait_on_the_runs_terminal(way: str) -> None:
    # In a session of its own, a command that asks the terminal (a passphrase, a
    # prompt) fails at once, instead of waiting, and the run with it, for an answer.
    done = subprocess.run(
        [sys.executable, "-c", _AT_A_TERMINAL, way], timeout=60, capture_output=True
    )
    assert done.returncode not in (0, -signal.SIGKILL), done.stderr.decode()


async def test_a_command_cancelled_as_it_starts_is_killed_and_reaped(
    way: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # asyncio connects a child's pipes after it started: a cancellation in between
    # once left the child killed but never awaited (a zombie), or still running.
    before = children()
    with anyio.CancelScope() as scope:
        cancel_once_started(monkeypatch, scope)
        await captured(["sleep", "30"], cwd=tmp_path, env=dict(os.environ))
    assert children() - before == set()
