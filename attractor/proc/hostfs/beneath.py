"""Opening paths beneath the working directory, by descriptor.

A tool never opens a path string it was given: a check on the name followed by an
open of the name leaves a window in which a directory can be swapped for a symlink.
:class:`Beneath` holds the working directory open and walks a path one component
at a time from that descriptor. Each directory is opened relative to the one
before with ``O_DIRECTORY | O_NOFOLLOW``, and the last component is opened (or
stat'ed) relative to its directory, again without following a symlink. A symlink
met on the way is read and its target walked the same way (``..`` and absolute
targets too), at most :data:`MAX_SYMLINKS` times, and refused once it would climb
above the working directory. The descriptor a tool reads or writes through is the
one the walk checked, so no swap can move it outside.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Generic, TypeVar

from attractor.errors import PathEscapeError, ToolError
from attractor.valueclass import frozen

MAX_SYMLINKS = 40  # Linux's own limit for one path lookup
# O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

T = TypeVar("T")


@frozen
class Found(Generic[T]):
    """An entry a walk reached: its directory's descriptor, its name there, its path
    relative to the working directory (symlinks resolved) and what the last step gave."""

    dir_fd: int
    name: str
    parts: tuple[str, ...]
    value: T

    @property
    def shown(self) -> str:
        """The path as the model should read it."""
        return show(self.parts)


def show(parts: Iterable[str]) -> str:
    """Path components joined for output, ``.`` for the working directory itself."""
    return "/".join(parts) or "."


class Beneath:
    """The working directory, held open for one tool call; lookups walk down from it."""

    def __init__(self, workdir: Path) -> None:
        self.root = workdir.resolve()
        self._bases = dict.fromkeys([PurePosixPath(self.root), PurePosixPath(workdir.absolute())])
        self.fd = os.open(self.root, _DIR_FLAGS)

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Beneath:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def parts(self, raw: str) -> tuple[str, ...]:
        """The components of ``raw`` relative to the working directory, not yet walked.

        Raises:
            PathEscapeError: an absolute path outside the working directory.
            ToolError: the path is empty or contains a NUL byte.
        """
        if not raw.strip():
            raise ToolError("path must not be empty; use '.' for the working directory")
        if "\0" in raw:
            raise ToolError("path must not contain a NUL byte")
        path = PurePosixPath(os.path.expanduser(raw))
        return self.inside(path, raw) if path.is_absolute() else path.parts

    def inside(self, path: PurePosixPath, raw: str) -> tuple[str, ...]:
        """An absolute ``path`` as components below the working directory."""
        for base in self._bases:
            with contextlib.suppress(ValueError):
                return path.relative_to(base).parts
        # Another spelling of the directory (a symlinked prefix): only a starting
        # point, since the walk checks every component again.
        with contextlib.suppress(ValueError):
            return Path(os.path.realpath(path)).relative_to(self.root).parts
        raise PathEscapeError(raw, str(self.root))

    @contextlib.contextmanager
    def open(
        self, raw: str, flags: int = READ_FLAGS, parts: tuple[str, ...] | None = None
    ) -> Iterator[Found[int]]:
        """The entry ``raw`` names, opened with ``flags``; symlinks inside are followed."""

        def final(dir_fd: int, name: str) -> int:
            return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)

        found = self.find(raw, final, parts=parts)
        try:
            yield found
        finally:
            os.close(found.value)
            os.close(found.dir_fd)

    @contextlib.contextmanager
    def place(
        self, raw: str, *, create: bool = False, parts: tuple[str, ...] | None = None
    ) -> Iterator[Found[os.stat_result | None]]:
        """Where ``raw`` is, with its lstat (None if missing); ``create`` makes parent dirs."""
        found = self.find(raw, lstat_entry, create=create, parts=parts)
        try:
            yield found
        finally:
            os.close(found.dir_fd)

    def find(
        self,
        raw: str,
        final: Callable[[int, str], T],
        *,
        create: bool = False,
        parts: tuple[str, ...] | None = None,
    ) -> Found[T]:
        """Walk to ``raw`` and run ``final(dir_fd, name)`` on its last component.

        ``final`` must not follow a symlink: it raises ``OSError(ELOOP)`` (as
        ``O_NOFOLLOW`` does) and the walk follows the link itself. The caller
        closes the returned ``dir_fd``.
        """
        walk = _Walk(self, raw, self.parts(raw) if parts is None else parts, create)
        try:
            return walk.run(final)
        finally:
            walk.close()

    def locate(self, raw: str) -> tuple[str, ...]:
        """The components ``raw`` resolves to: symlinks followed as far as the path
        exists, the missing rest taken as written."""
        walk = _Walk(self, raw, self.parts(raw), create=False)
        try:
            found = walk.run(lstat_entry)
        except FileNotFoundError:
            return walk.lexical_rest()
        finally:
            walk.close()
        os.close(found.dir_fd)
        return found.parts


def lstat_entry(dir_fd: int, name: str) -> os.stat_result | None:
    """The lstat of ``name`` in ``dir_fd``, None if missing; a symlink raises ELOOP."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise OSError(errno.ELOOP, "is a symbolic link", name)
    return info


class _Walk:
    """One lookup in progress: the open directories from the root down, and what is left."""

    def __init__(self, beneath: Beneath, raw: str, parts: Iterable[str], create: bool) -> None:
        self._beneath = beneath
        self._raw = raw
        self._create = create
        self._fds = [os.dup(beneath.fd)]
        self._names: list[str] = []
        self._left = deque(parts)
        self._hops = 0

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds.clear()

    def run(self, final: Callable[[int, str], T]) -> Found[T]:
        while True:
            name = self._descend()
            try:
                value = final(self._fds[-1], name)
            except OSError as error:
                if name == "." or error.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                self._follow(name, error)
                continue
            parts = (*self._names, name) if name != "." else tuple(self._names)
            return Found(self._fds.pop(), name, parts, value)

    def lexical_rest(self) -> tuple[str, ...]:
        """The walked components plus the ones left, ``..`` applied by name."""
        names = list(self._names)
        for part in self._left:
            if part == "..":
                if not names:
                    raise PathEscapeError(self._raw, str(self._beneath.root))
                names.pop()
            elif part not in ("", "."):
                names.append(part)
        return tuple(names)

    def _descend(self) -> str:
        """Walk every component but the last; the last, or '.' for a directory path."""
        while self._left:
            part = self._left.popleft()
            if part == "..":
                self._up()
            elif part in ("", "."):
                continue
            elif not self._left:
                return part
            else:
                self._enter(part)
        return "."

    def _up(self) -> None:
        if len(self._fds) == 1:
            raise PathEscapeError(self._raw, str(self._beneath.root))
        os.close(self._fds.pop())
        self._names.pop()

    def _enter(self, name: str) -> None:
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=self._fds[-1])
        except FileNotFoundError:
            self._left.appendleft(name)
            if not self._create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(name, dir_fd=self._fds[-1])
            self._hop()  # bounded: a rival that keeps removing it cannot hold us
        except OSError as error:
            # O_NOFOLLOW on a symlink gives ELOOP, or ENOTDIR along with O_DIRECTORY.
            if error.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            self._follow(name, error)
        else:
            self._fds.append(fd)
            self._names.append(name)

    def _follow(self, name: str, error: OSError) -> None:
        """Continue the walk at the target of the symlink ``name``, or look again."""
        directory = self._fds[-1]
        try:
            target = os.readlink(name, dir_fd=directory)
        except OSError as failure:
            if failure.errno not in (errno.EINVAL, errno.ENOENT):
                raise
            if error.errno == errno.ENOTDIR and not _is_dir(directory, name):
                raise error from None  # a file where a directory was needed
            self._hop()  # swapped since the open: look at it again
            self._left.appendleft(name)
            return
        self._hop()
        path = PurePosixPath(target)
        if path.is_absolute():
            inner = self._beneath.inside(path, self._raw)
            while len(self._fds) > 1:
                os.close(self._fds.pop())
            self._names.clear()
        else:
            inner = path.parts
        self._left.extendleft(reversed(inner))

    def _hop(self) -> None:
        self._hops += 1
        if self._hops > MAX_SYMLINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), self._raw)


def _is_dir(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False
