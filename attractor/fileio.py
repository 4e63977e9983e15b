"""File writes that a crash cannot leave half done, and plain fast writes for stage files."""

from __future__ import annotations

import itertools
import json
import os
from contextlib import suppress
from pathlib import Path
from typing import Any

_tmp_names = itertools.count()


def atomic_write_text(path: Path, text: str, *, fsync: bool = True) -> None:
    """Write ``text`` so that readers see the old file or the new one, never half of it.

    Writes a temporary file in the same directory (mode 0600, named after this
    process and a counter so concurrent writers never share one), optionally
    fsyncs it, then renames it over ``path``. Plain os calls: this runs between
    every two nodes, and tempfile/TextIOWrapper cost more than the write itself.
    """
    tmp = f"{path.parent}/.{path.name}.{os.getpid()}-{next(_tmp_names)}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            _write_all(fd, text.encode("utf-8"))
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def atomic_write_json(path: Path, data: Any, *, fsync: bool = True) -> None:
    """Atomically write ``data`` as indented JSON (non-JSON values become strings)."""
    atomic_write_text(path, json.dumps(data, indent=2, default=str) + "\n", fsync=fsync)


def write_text(path: Path, text: str) -> None:
    """Plain write for stage files whose loss a resume tolerates (re-created on rerun).

    One open, one write, one close (Path.write_text builds a TextIOWrapper).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o666)
    try:
        _write_all(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
