"""apply_patch: file changes in the v4a patch format (see patch_format).

A patch is applied all or nothing as far as the files allow: every operation is
parsed and every hunk fitted into the current text before the first file is
written, so a malformed patch or a hunk that does not fit leaves every file as
it was. Files are reached through :class:`Beneath` like the other file tools,
so no path outside the working directory is read or written, and a file with
other hard-linked names is not changed.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from attractor.errors import ToolError
from attractor.proc.hostfs.beneath import Beneath
from attractor.proc.hostfs.fdio import (
    is_binary,
    not_regular,
    read_all,
    refuse_hard_link,
    regular,
    replace_file,
)
from attractor.proc.hostfs.patch_format import FileOp, apply_hunks, parse_patch
from attractor.proc.hostfs.reasons import reason
from attractor.valueclass import frozen

MAX_PATCH_FILE_BYTES = 32 * 1024 * 1024


@frozen
class _Change:
    """What one operation will do: write ``data`` to ``path`` (None: delete it)."""

    path: str
    data: bytes | None
    mode: int | None = None
    line: str = ""


def _read_text(beneath: Beneath, raw: str) -> tuple[str, int]:
    """The text of an existing file to update, and its mode."""
    with beneath.open(raw) as found:
        info = regular(found.value, raw)
        refuse_hard_link(info, raw)
        if is_binary(found.value):
            raise ToolError(f"{raw} looks like a binary file; apply_patch edits text only")
        data = read_all(found.value, MAX_PATCH_FILE_BYTES)
    if data is None:
        raise ToolError(f"{raw} is too large for apply_patch; edit it with the shell")
    try:
        return data.decode("utf-8"), info.st_mode
    except UnicodeDecodeError:
        raise ToolError(f"{raw} is not UTF-8 text; apply_patch edits text only") from None


def _exists(beneath: Beneath, raw: str) -> os.stat_result | None:
    """The lstat of ``raw``, None when it (or a directory above it) is missing."""
    try:
        with beneath.place(raw) as found:
            return found.value
    except FileNotFoundError:
        return None


def _plan(beneath: Beneath, op: FileOp) -> list[_Change]:
    if op.kind == "add":
        if _exists(beneath, op.path) is not None:
            raise ToolError(f"cannot add {op.path}: it already exists; use '*** Update File:'")
        body = "".join(line + "\n" for line in op.lines)
        return [_Change(op.path, body.encode(), line=f"A {op.path}")]
    if op.kind == "delete":
        info = _exists(beneath, op.path)
        if info is None:
            raise ToolError(f"cannot delete {op.path}: no such file")
        if not stat.S_ISREG(info.st_mode):
            raise not_regular(op.path)
        refuse_hard_link(info, op.path)
        return [_Change(op.path, None, line=f"D {op.path}")]
    text, mode = _read_text(beneath, op.path)
    new = apply_hunks(text, op.hunks, op.path).encode()
    if op.move_to is None:
        return [_Change(op.path, new, mode, f"M {op.path}")]
    if _exists(beneath, op.move_to) is not None:
        raise ToolError(f"cannot move {op.path} to {op.move_to}: the target already exists")
    return [
        _Change(op.move_to, new, mode, f"M {op.path} -> {op.move_to}"),
        _Change(op.path, None),
    ]


def _check_distinct(ops: list[FileOp]) -> None:
    seen: set[str] = set()
    for op in ops:
        for path in (op.path, op.move_to):
            if path is None:
                continue
            key = os.path.normpath(path)
            if key in seen:
                raise ToolError(f"the patch changes {path} more than once; merge those parts")
            seen.add(key)


def _write(beneath: Beneath, change: _Change) -> None:
    with beneath.place(change.path, create=change.data is not None) as found:
        if change.data is None:
            os.unlink(found.name, dir_fd=found.dir_fd)
        else:
            replace_file(found.dir_fd, found.name, change.data, change.mode)


def _plan_all(beneath: Beneath, ops: list[FileOp]) -> list[_Change]:
    changes: list[_Change] = []
    for op in ops:
        try:
            changes += _plan(beneath, op)
        except OSError as error:
            raise ToolError(f"{op.path}: {reason(error)}") from None
    return changes


def apply_patch(workdir: Path, patch: str) -> str:
    """Apply a v4a patch beneath ``workdir``; answer one line per file: A added, M updated,
    D deleted."""
    with Beneath(workdir) as beneath:
        try:
            ops = parse_patch(patch)
            _check_distinct(ops)
            changes = _plan_all(beneath, ops)
        except ToolError as error:
            raise ToolError(f"{error}. No file was changed.") from None
        for number, change in enumerate(changes):
            try:
                _write(beneath, change)
            except OSError as error:
                done = [c.line for c in changes[:number] if c.line]
                raise ToolError(
                    f"{change.path}: {reason(error)}; changed before the failure: "
                    f"{', '.join(done) or 'nothing'}"
                ) from None
    lines = [change.line for change in changes if change.line]
    return "patch applied:\n" + "\n".join(lines)
