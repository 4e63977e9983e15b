"""Writes that a crash cannot leave half done, and the modes of what a run writes.

:func:`atomic_write_text` and :func:`atomic_write_json` for state a resume
depends on, :func:`write_text` and :func:`append_text` for stage files,
:class:`AppendFile` for JSON lines. Inside a run, each of them takes the run's
secrets out of what it writes first (:mod:`attractor.redact`). Everything in a
run directory is created with :func:`run_file_mode` and :func:`run_dir_mode`
(private to the user unless ``run_permissions = "umask"``); a file meant for
the user (:data:`USER_FILE`) follows the umask.
"""

from __future__ import annotations

import itertools
import json
import os
import stat
from contextlib import suppress
from pathlib import Path
from typing import Any

from attractor import redact
from attractor.ownfiles import create_new, open_own

_tmp_names = itertools.count()


# -- permissions --------------------------------------------------------------------

#: A file only its owner may read and write.
PRIVATE_FILE = 0o600
#: ``mode`` for a file meant for the user (a pipeline ``attractor init`` writes):
#: it follows the umask, and a file it replaces keeps its mode.
USER_FILE = None
#: ``mode`` for a file of a run directory: :func:`run_file_mode`.
RUN_FILE = -1
#: ``run_permissions`` setting -> (file mode, folder mode) of a run directory,
#: before the umask: ``private`` (the default) keeps a run's context, prompts and
#: tool output to the user who ran it; ``umask`` lets the umask decide.
RUN_PERMISSIONS = {"private": (0o600, 0o700), "umask": (0o666, 0o777)}
_run_modes = list(RUN_PERMISSIONS["private"])


def set_run_permissions(name: str) -> None:
    """Choose the modes of what runs write (process-wide; the engine sets it per run)."""
    _run_modes[:] = RUN_PERMISSIONS[name]


def run_file_mode() -> int:
    """The mode a new file of a run directory is created with (then the umask applies)."""
    return _run_modes[0]


def run_dir_mode() -> int:
    """The mode a new folder of a run directory is created with (then the umask applies)."""
    return _run_modes[1]


def make_run_dir(path: str | Path, *, exist_ok: bool = False) -> None:
    """Create the folder ``path`` of a run directory (its parent must exist)."""
    try:
        os.mkdir(path, run_dir_mode())
    except FileExistsError:
        if not exist_ok:
            raise


# -- writes ---------------------------------------------------------------------------


def atomic_write_text(
    path: Path, text: str, *, fsync: bool = True, mode: int | None = RUN_FILE
) -> None:
    """Write ``text`` so that readers see the old file or the new one, never half of it.

    Writes a temporary file in the same directory (named after this process and
    a counter so concurrent writers never share one), optionally fsyncs it, then
    renames it over ``path``. ``mode`` is the new file's mode: by default that
    of a run directory's files (:func:`run_file_mode`); :data:`USER_FILE`
    (None) keeps the mode of the file replaced, or follows the umask for a new
    one, as an editor's save would. Plain os calls: this runs between every two
    nodes, and tempfile/TextIOWrapper cost more than the write itself.
    """
    tmp = f"{path.parent}/.{path.name}.{os.getpid()}-{next(_tmp_names)}.tmp"
    text = redact.text(text)
    created = run_file_mode() if mode == RUN_FILE else (mode or 0o666)
    try:
        fd = create_new(tmp, created)
        try:
            if mode is None:
                _keep_mode(fd, path)
            write_all(fd, text.encode("utf-8"))
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def _keep_mode(fd: int, path: Path) -> None:
    """Give the temporary file ``fd`` the permission bits of the file it replaces."""
    try:
        old = os.lstat(path).st_mode
    except OSError:
        return  # a new file: os.open applied the umask to 0666
    if stat.S_ISREG(old):
        os.fchmod(fd, stat.S_IMODE(old))


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (one call unless the kernel takes less)."""
    written = os.write(fd, data)
    if written == len(data):  # nearly always: no view to make
        return
    view = memoryview(data)[written:]
    while view:
        view = view[os.write(fd, view) :]


def atomic_write_json(
    path: Path, data: Any, *, fsync: bool = True, mode: int | None = RUN_FILE
) -> None:
    """Atomically write ``data`` as indented JSON (non-JSON values become strings)."""
    atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n", fsync=fsync, mode=mode)


class AppendFile:
    """A file lines are appended to, each with one ``write`` call (no Python buffer).

    What a line says is in the file when :meth:`write` returns (not fsynced), so a
    reader tailing it, or a run killed right after, sees every line whole.
    """

    def __init__(self, path: Path, *, redacted: bool = False) -> None:
        self.path = path
        #: Whether what is written was redacted already (events, by the event bus).
        self._redacted = redacted
        self._fd: int | None = open_own(
            path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, run_file_mode()
        )

    def write(self, text: str) -> None:
        """Append ``text`` (ignored once closed: a late event after the run ended)."""
        if self._fd is not None:
            clean = text if self._redacted else redact.text(text)
            write_all(self._fd, clean.encode("utf-8"))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def write_text(path: str | Path, text: str) -> None:
    """Plain write for stage files whose loss a resume tolerates (re-created on rerun).

    One open, one write, one close (Path.write_text builds a TextIOWrapper). The
    engine passes a ``str`` per node: building a Path costs about what the write does.
    """
    fd = open_own(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, run_file_mode())
    try:
        write_all(fd, redact.text(text).encode("utf-8"))
    finally:
        os.close(fd)


def write_stage_file(folder: Path, name: str, text: str) -> None:
    """:func:`write_text` of ``folder/name``, a folder the engine made before the stage
    ran: no mkdir on the way; only when the folder is gone (the stage's command
    removed it) is it made again, private like the rest of the run directory."""
    path = f"{folder}/{name}"
    try:
        write_text(path, text)
    except FileNotFoundError:
        folder.mkdir(mode=run_dir_mode(), parents=True, exist_ok=True)
        write_text(path, text)


def append_text(path: str | Path, text: str) -> None:
    """Append ``text`` to a run directory's log file (created with :func:`run_file_mode`)."""
    fd = open_own(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, run_file_mode())
    try:
        write_all(fd, redact.text(text).encode("utf-8"))
    finally:
        os.close(fd)
