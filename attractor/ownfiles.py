"""Opening the engine's own files in a folder a step can write: its stage directory.

A sandboxed step may write its stage directory (``$ATTRACTOR_STAGE_DIR``), and
so may leave there, under a name the engine writes after it (``status.json``,
``response.md``, ``tools.log``...), a symbolic link to a file outside, or a
FIFO. The engine runs outside the sandbox: opened by path, the first would have
it write (or read) the file outside, the second would hold it until someone
reads. :func:`open_own` never opens through a link and never waits on a FIFO;
what a step left in the way is removed and the file made anew.

The low layer of its own: the run store, the process machinery and the
redaction of output files all open files in stage directories.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

#: What the open of a name refuses when a link (ELOOP) or a FIFO no one reads (ENXIO)
#: was left under it.
_LEFT_IN_THE_WAY = (errno.ELOOP, errno.ENXIO)


def open_own(
    path: str | os.PathLike[str], flags: int, mode: int, *, dir_fd: int | None = None
) -> int:
    """``os.open`` of a file of the engine's for writing, replacing a link or FIFO
    left under its name (see the module docstring); ``path`` relative to ``dir_fd``
    when given.

    Raises:
        OSError: as ``os.open`` (a folder under the name: IsADirectoryError).
    """
    flags |= os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno not in _LEFT_IN_THE_WAY:
            raise
    else:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
        os.close(fd)  # a FIFO someone reads (a step's process still running), a socket
    os.unlink(path, dir_fd=dir_fd)  # the link itself, not what it points to
    return os.open(path, flags | os.O_CREAT | os.O_EXCL, mode, dir_fd=dir_fd)


def own_folder(path: str | os.PathLike[str], mode: int) -> int:
    """A descriptor of the folder ``path`` (made if missing, its parents must exist),
    never of what a link left in its place points to: the link is removed and the
    folder made. Files opened relative to it stay in it, whatever happens to the
    name ``path`` meanwhile. The caller closes it.
    """
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    for _ in range(2):
        try:
            return os.open(path, flags)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            os.unlink(path)  # a link (or a file) where the folder goes
        with contextlib.suppress(FileExistsError):  # made meanwhile: opened next round
            os.mkdir(path, mode)
    return os.open(path, flags)


def create_new(path: str | os.PathLike[str], mode: int) -> int:
    """A new file at ``path`` for writing: a temporary beside a file it will replace.

    Whatever a step left under that name (a link above all) is removed first.
    """
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        return os.open(path, flags, mode)
    except FileExistsError:
        os.unlink(path)
        return os.open(path, flags, mode)
