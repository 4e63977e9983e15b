"""Run shell commands that cannot outlive their step.

Every command runs in its own process group (a new session). When the command
times out or the surrounding scope is cancelled (a node timeout, the run's
``--timeout``, Ctrl-C), the whole group gets SIGTERM, then SIGKILL after a
grace period. Whatever the command left running in its group when it exited is
killed too, so no child process survives its step.

Commands run through ``/bin/sh -c``. When both streams go to files (tool
nodes) and pidfds are available (Linux), the child is started with
:class:`subprocess.Popen` and awaited on its pidfd (anyio's asyncio wrapper adds
a child-watcher thread and a transport per process), and a plain command line
is executed directly, because the shell would only split it on spaces and run
it (a shell start-up is most of a short command's cost). Plain means: only
ASCII letters, digits, spaces and ``_@%+=:,./-`` (nothing to quote, expand,
redirect or chain), and a first word that is neither a shell builtin or keyword
nor an assignment. The command keeps the same cwd, environment, PATH lookup,
own process group and output files. If it cannot be executed (not found, no
permission, not a binary), it runs through the shell after all, so the error
message and exit code (127, 126) are the shell's; killed by signal N, it
reports ``128 + N`` and the signal's name on stderr, as dash does. What still
differs: the command itself, not a shell, leads its process group, and its
parent is the engine.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process

from attractor.ownfiles import open_own, own_folder
from attractor.proc.capped import CappedLog
from attractor.proc.children import open_process
from attractor.proc.files import file_mode
from attractor.proc.follow import CURRENT as follower_of_block
from attractor.proc.ledger import CURRENT as ledger_of_run
from attractor.proc.ledger import boot_clock
from attractor.proc.spawn import HAS_PIDFD, PidfdProcess, Streams, direct_argv
from attractor.valueclass import frozen

#: Captured output kept in memory per stream; beyond it, bytes are counted, not kept.
CAPTURE_LIMIT = 8 * 1024 * 1024
#: How much of a file-backed stream is read back into ProcessResult.
FILE_TAIL = 64 * 1024


@frozen
class ProcessResult:
    """How a command ended.

    ``returncode`` is None when the process had to be killed. For streams sent
    to a file, ``stdout``/``stderr`` hold the file's last :data:`FILE_TAIL` bytes.
    """

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration: float
    dropped_bytes: int = 0


async def run_process(
    command: str,
    *,
    cwd: Path,
    timeout: float | None = None,
    kill_grace: float = 2.0,
    env: Mapping[str, str] | None = None,
    stdout_path: Path | None = None,
    stderr_path: Path | None = None,
    stdin_path: Path | None = None,
    wrap: Sequence[str] = (),
    stdout_limit: int | None = None,
) -> ProcessResult:
    """Run ``command`` through the shell in its own process group.

    Args:
        command: shell command line.
        cwd: working directory.
        timeout: seconds before the group is terminated (None: no limit).
        kill_grace: seconds between SIGTERM and SIGKILL.
        env: full environment for the command (None: inherit).
        stdout_path: write stdout to this file instead of capturing it.
        stderr_path: write stderr to this file instead of capturing it (the same
            path as ``stdout_path``: both streams go to that one file, in order).
        stdin_path: the command reads this file as stdin (default: /dev/null).
        wrap: a program and its arguments that run ``/bin/sh -c command``
            (a sandbox); its process group is the one killed.
        stdout_limit: with ``stdout_path``, the most bytes of stdout written
            to it (then a note, :class:`~attractor.proc.capped.CappedLog`); the
            rest is read through a pipe and dropped (``dropped_bytes``).

    Cancellation of the caller terminates the group (shielded) and re-raises.
    """
    started = time.monotonic()
    opened: list[int] = []  # plain descriptors: file objects cost more than the command
    try:
        out = _target(opened, stdout_path)
        # One file for both streams (a log): one descriptor, so neither overwrites the other.
        same = stderr_path is not None and stderr_path == stdout_path
        err = out if same else _target(opened, stderr_path)
        inp = _source(opened, stdin_path)
        capped = CappedLog(out, stdout_limit, owned=False) if stdout_path and stdout_limit else None
        streams = (inp, out if capped is None else subprocess.PIPE, err)
        before = boot_clock()
        process, direct = await _start(command, streams, cwd, env, wrap)
        spawned = (before, boot_clock())
        buffers = (_Capture(capped), _Capture())
        timed_out = await _watch(process, spawned, buffers, timeout, kill_grace)
        if capped is not None:
            capped.close()  # its note, after all it kept
        returncode = None if timed_out else _exit_code(process, direct, err)
        stdout = _read_tail(out) if stdout_path else buffers[0].text()
        stderr = _read_tail(err) if stderr_path else buffers[1].text()
    finally:
        for fd in opened:
            os.close(fd)
    return ProcessResult(
        returncode=returncode,
        stdout=stdout,
        stderr=stderr,
        timed_out=timed_out,
        duration=time.monotonic() - started,
        dropped_bytes=buffers[0].dropped + buffers[1].dropped,
    )


async def _watch(
    process: Process,
    spawned: tuple[float, float],
    buffers: tuple[_Capture, _Capture],
    timeout: float | None,
    kill_grace: float,
) -> bool:
    """Supervise ``process`` (noted in the run's ledger meanwhile); True when it timed out.

    ``spawned``: the boot clock just before and just after it was started.
    """
    ledger = ledger_of_run.get()
    if ledger is not None:
        ledger.started(process.pid, spawned)
    try:
        timed_out = await _supervise(process, buffers, timeout, kill_grace)
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _terminate(process, kill_grace)
            await process.aclose()
        raise
    finally:
        # Only once reaped: a stop cut short (the loop torn down, shields and all) leaves
        # the group listed, for the guard and ``resume`` to stop.
        if ledger is not None and process.returncode is not None:
            ledger.ended(process.pid)
    if isinstance(process, PidfdProcess):
        process.close()  # nothing to await: no scope needed
    else:
        with anyio.CancelScope(shield=True):
            await process.aclose()
    return timed_out


async def _start(
    command: str,
    streams: Streams,
    cwd: Path,
    env: Mapping[str, str] | None,
    wrap: Sequence[str] = (),
) -> tuple[Process, bool]:
    """The started process, and whether it runs without the shell."""
    full_env = env if isinstance(env, dict) or env is None else dict(env)  # Popen only reads it
    shell = [*wrap, "/bin/sh", "-c", command]
    if wrap:
        # The wrapper starts fine even when the command cannot: a plain command
        # runs without the shell only when its program is found here first.
        argv = _found(direct_argv(command), full_env)
        program = [*wrap, *argv] if argv else shell
        if subprocess.PIPE in streams[1:] or not HAS_PIDFD:
            return await _open(program, streams, cwd, full_env), argv is not None
        return PidfdProcess.start(program, streams, cwd, full_env), argv is not None
    if subprocess.PIPE in streams[1:] or not HAS_PIDFD:
        return await _open(shell, streams, cwd, full_env), False
    argv = direct_argv(command)
    if argv is not None:
        with suppress(OSError):
            return PidfdProcess.start(argv, streams, cwd, full_env), True
    return PidfdProcess.start(shell, streams, cwd, full_env), False


def _found(argv: list[str] | None, env: Mapping[str, str] | None) -> list[str] | None:
    """``argv`` when its program is found on the command's PATH (the wrapper looks
    it up again on the same PATH, so argv[0] stays as written), else None."""
    if argv is None:
        return None
    path = (env if env is not None else os.environ).get("PATH", os.defpath)
    return argv if shutil.which(argv[0], path=path) is not None else None


async def _open(
    argv: Sequence[str],
    streams: Streams,
    cwd: Path,
    env: dict[str, str] | None,
) -> Process:
    inp, out, err = streams
    return await open_process(
        argv,
        stdin=inp,
        stdout=out,
        stderr=err,
        cwd=cwd,
        env=env,
        start_new_session=True,
    )


def _exit_code(process: Process, direct: bool, err: int) -> int | None:
    """The exit code and stderr line the shell would give for a command killed by a signal.

    dash reports ``128 + N`` and prints the signal's name (``Segmentation fault
    (core dumped)``) to stderr, except for SIGINT and SIGPIPE.
    """
    code = process.returncode
    if not direct or code is None or code >= 0:
        return code
    sig = -code
    if sig not in (signal.SIGINT, signal.SIGPIPE) and err >= 0:  # a file, not a pipe
        name = signal.strsignal(sig) or f"Signal {sig}"
        dumped = isinstance(process, PidfdProcess) and process.core_dumped
        with suppress(OSError):
            os.write(err, f"{name}{' (core dumped)' if dumped else ''}\n".encode())
    return 128 + sig


_OUTPUT_FLAGS = os.O_RDWR | os.O_CREAT | os.O_TRUNC


def _target(opened: list[int], path: Path | None) -> int:
    """PIPE, or a descriptor of ``path`` opened for writing and reading back its tail.

    The child shares the file's offset, so anything written here after it
    exited lands after its output. The stage directory normally exists: the
    parent is only created when the first open says it is missing. A link or FIFO
    an earlier step left under the name (or in place of its folder) is replaced,
    never followed (:mod:`attractor.ownfiles`).
    """
    if path is None:
        return subprocess.PIPE
    try:
        folder = own_folder(path.parent, 0o700)
    except FileNotFoundError:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder = own_folder(path.parent, 0o700)
    try:
        fd = open_own(path.name, _OUTPUT_FLAGS, file_mode(), dir_fd=folder)
    finally:
        os.close(folder)
    opened.append(fd)
    return fd


def _source(opened: list[int], path: Path | None) -> int:
    """A descriptor of ``path`` to read as stdin, else DEVNULL."""
    if path is None:
        return subprocess.DEVNULL
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    opened.append(fd)
    return fd


class _Capture:
    """A piped stream's output: kept in memory up to :data:`CAPTURE_LIMIT`, or
    written to a capped file."""

    def __init__(self, file: CappedLog | None = None) -> None:
        self.data = bytearray()
        self.file = file
        self._dropped = 0

    @property
    def dropped(self) -> int:
        return self.file.dropped if self.file is not None else self._dropped

    def add(self, chunk: bytes) -> None:
        if self.file is not None:
            self.file.write(chunk)
            return
        room = CAPTURE_LIMIT - len(self.data)
        self.data += chunk[:room]
        self._dropped += max(0, len(chunk) - room)

    def text(self) -> str:
        return self.data.decode("utf-8", errors="replace")


async def _supervise(
    process: Process,
    buffers: tuple[_Capture, _Capture],
    timeout: float | None,
    kill_grace: float,
) -> bool:
    """Wait for exit (or the timeout) while draining pipes; True when timed out."""
    if process.stdout is None and process.stderr is None:
        return await _wait(process, timeout, kill_grace)
    timed_out = False
    async with anyio.create_task_group() as tg:
        for stream, capture in zip((process.stdout, process.stderr), buffers, strict=True):
            if stream is not None:
                tg.start_soon(_drain, stream, capture)
        if not await _exited(process, timeout):
            timed_out = True
            await _terminate(process, kill_grace)
        # Leftover background children would keep the pipes open forever.
        _signal_group(process.pid, signal.SIGKILL)
    return timed_out


async def _wait(process: Process, timeout: float | None, kill_grace: float) -> bool:
    """:func:`_supervise` for a command without pipes: no task group needed."""
    timed_out = not await _exited(process, timeout)
    if timed_out:
        await _terminate(process, kill_grace)
    _signal_group(process.pid, signal.SIGKILL)  # whatever it left in its group
    return timed_out


async def _exited(process: Process, timeout: float | None) -> bool:
    """Wait for ``process`` to exit: False when ``timeout`` seconds passed first.

    Meanwhile the follower of the block (:meth:`OutputFollower.running
    <attractor.proc.follow.OutputFollower.running>`) reads the output files at its
    interval: the wait wakes for it, no task runs beside it.
    """
    follower = follower_of_block.get()
    if follower is None and timeout is None:  # a cancel scope per command is a
        await process.wait()  # measurable part of a fan-out
        return True
    end = math.inf if timeout is None else anyio.current_time() + timeout
    while True:
        poll_at = math.inf if follower is None else anyio.current_time() + follower.interval()
        with anyio.CancelScope(deadline=min(end, poll_at)) as scope:
            await process.wait()
        if not scope.cancelled_caught:
            return True
        if follower is None or anyio.current_time() >= end:
            return False
        follower.poll(final=False)


async def _drain(stream: ByteReceiveStream, capture: _Capture) -> None:
    async for chunk in stream:
        capture.add(chunk)


async def _terminate(process: Process, kill_grace: float) -> None:
    """SIGTERM the group, SIGKILL it after ``kill_grace`` seconds if still alive."""
    _signal_group(process.pid, signal.SIGTERM)
    with anyio.move_on_after(kill_grace):
        await process.wait()
    _signal_group(process.pid, signal.SIGKILL)
    await process.wait()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _read_tail(fd: int) -> str:
    """The last :data:`FILE_TAIL` bytes of an output file still open (read in place)."""
    if fd < 0:
        return ""
    try:
        size = os.fstat(fd).st_size
        return os.pread(fd, FILE_TAIL, max(0, size - FILE_TAIL)).decode("utf-8", errors="replace")
    except OSError:
        return ""


def process_env(extra: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The current environment plus ``extra`` values rendered as strings."""
    env = _ENVIRON.current()
    for key, value in (extra or {}).items():
        env[key] = str(value)
    return env


class _DecodedEnviron:
    """``os.environ`` as a new plain dict, decoded again only when it changed.

    Decoding every variable is a good part of a short command's start-up from
    Python, and a fan-out starts hundreds at once. A change is seen by comparing
    the raw (bytes) mapping behind ``os.environ`` with the one last decoded.
    """

    def __init__(self) -> None:
        self._raw: dict[bytes, bytes] | None = None
        self._decoded: dict[str, str] = {}

    def current(self) -> dict[str, str]:
        raw = getattr(os.environ, "_data", None)
        if not isinstance(raw, dict):  # not CPython's os._Environ: decode every time
            return dict(os.environ)
        if raw != self._raw:
            self._decoded = dict(os.environ)
            self._raw = dict(raw)
        return dict(self._decoded)


_ENVIRON = _DecodedEnviron()
