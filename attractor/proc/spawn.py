"""Starting a tool command cheaply, for :mod:`attractor.proc.process`.

Two shortcuts, both invisible to the command: a plain command line (one the
shell would only split on spaces) is executed without ``/bin/sh``, and on Linux
the child is awaited on a pidfd instead of through anyio's asyncio process
wrapper, which adds a child-watcher thread and a transport per process on
Python 3.11. Both cost several times what ``/bin/true`` itself costs.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from contextlib import suppress
from functools import cache
from pathlib import Path
from typing import IO

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

#: A command line the shell would only split on spaces (see the module docstring).
_PLAIN_COMMAND = re.compile(r"[A-Za-z0-9_@%+=:,./ -]+")
#: dash/POSIX builtins and keywords: a first word among them needs the shell.
_SHELL_WORDS = frozenset(
    """! . : [ [[ { } alias bg break case cd chdir command continue do done echo elif
    else esac eval exec exit export false fc fg fi for function getopts hash if in jobs
    kill let local printf pwd read readonly return select set shift source test then
    time times trap true type typeset ulimit umask unalias unset until wait while""".split()  # noqa: SIM905
)


#: stdin, stdout and stderr of a child: an open file or a subprocess constant.
Streams = tuple[IO[bytes] | int, IO[bytes] | int, IO[bytes] | int]


def direct_argv(command: str) -> list[str] | None:
    """The argv to execute ``command`` without a shell, or None when it needs one."""
    if not _PLAIN_COMMAND.fullmatch(command):
        return None
    argv = command.split(" ")
    argv = [word for word in argv if word]
    if not argv or "=" in argv[0] or argv[0] in _SHELL_WORDS:
        return None
    return argv


def _pidfd_works() -> bool:
    try:
        os.close(os.pidfd_open(os.getpid()))
    except (AttributeError, OSError):  # not Linux, or a kernel before 5.3
        return False
    return True


HAS_PIDFD = _pidfd_works()


@cache
def _devnull() -> int:
    """One descriptor of /dev/null for every child's stdin (Popen opens one per child)."""
    return os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)  # as Popen opens it


class PidfdProcess(Process):
    """A child started with Popen and awaited on its pidfd: no pipes, no watcher thread.

    anyio's asyncio process wrapper adds a child-watcher thread and transport per
    process on Python 3.11, several times the cost of running ``/bin/true``.
    """

    def __init__(self, popen: subprocess.Popen[bytes], pidfd: int | None) -> None:
        self._popen = popen
        #: None when no pidfd could be opened (out of descriptors): wait() polls.
        self._pidfd = pidfd
        self.core_dumped = False

    @classmethod
    def start(
        cls,
        argv: list[str],
        streams: Streams,
        cwd: Path,
        env: dict[str, str] | None,
        *,
        new_session: bool = True,
        umask: int = -1,
    ) -> PidfdProcess:
        """Start ``argv``, in a process group of its own unless ``new_session`` is False."""
        inp, out, err = streams
        popen = subprocess.Popen(
            argv,
            stdin=_devnull() if inp == subprocess.DEVNULL else inp,
            stdout=out,
            stderr=err,
            cwd=cwd,
            env=env,
            start_new_session=new_session,
            umask=umask,
        )
        pidfd: int | None = None
        with suppress(OSError):  # the command runs already: never start it twice
            pidfd = os.pidfd_open(popen.pid)
        return cls(popen, pidfd)

    async def wait(self) -> int:
        delay = 0.001
        while (code := self._reap()) is None:
            if self._pidfd is not None:
                await anyio.wait_readable(self._pidfd)
            else:
                await anyio.sleep(delay)
                delay = min(delay * 2, 0.05)
        return code

    def _reap(self) -> int | None:
        """The exit status once the child has exited (reaped here: waitid tells core dumps)."""
        if self._popen.returncode is not None:
            return self._popen.returncode
        try:
            info = os.waitid(os.P_PID, self._popen.pid, os.WEXITED | os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere
            return self._popen.poll()
        if info is None:
            return None
        exited = info.si_code == os.CLD_EXITED
        self.core_dumped = info.si_code == os.CLD_DUMPED
        self._popen.returncode = info.si_status if exited else -info.si_status
        return self._popen.returncode

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """Release the pidfd (the child is reaped by :meth:`wait`): nothing to await."""
        if self._pidfd is not None:
            os.close(self._pidfd)
            self._pidfd = None

    def terminate(self) -> None:
        self._popen.terminate()

    def kill(self) -> None:
        self._popen.kill()

    def send_signal(self, sig: signal.Signals) -> None:
        self._popen.send_signal(sig)

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        return self._popen.returncode

    @property
    def stdin(self) -> ByteSendStream | None:
        return None

    @property
    def stdout(self) -> ByteReceiveStream | None:
        return None

    @property
    def stderr(self) -> ByteReceiveStream | None:
        return None
