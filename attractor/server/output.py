"""A stage file served whole or a slice at a time, confined to the run; a stage's listing.

The page shows the last few thousand bytes of each file and live output lines;
this gives the whole file behind its "whole file" link, and the MCP
``read_stage`` tool pages through any of them (:func:`stage_slice`). Only the
stage files a node writes are served (:func:`is_served`), from the node's folder
or one of its attempts' (the caller checks which), never through a symbolic
link out of the run directory, and what is served passes through the server's
redactor (a command still running has not had its output scrubbed yet).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from attractor.errors import InputFileError
from attractor.fileio.reads import read_tail
from attractor.server.body import Problem
from attractor.server.confine import inside

#: The files of a stage folder that may be asked for.
SERVED = frozenset(
    {
        "stdout.txt",
        "stderr.txt",
        "response.md",
        "prompt.md",
        "transcript.jsonl",
        "reflections.md",
        "status.json",
        "status.engine.json",
        "answer.json",
        "tools.log",
        "agent_stderr.txt",
        "agent_stream.jsonl",
        "hooks.log",
        "hook_stdout.txt",
        "hook_stderr.txt",
    }
)
#: The folder of an ACP agent's terminals in a stage folder.
TERMINALS = "acp_terminals"
#: Stage files named by pattern: each MCP server's stderr, each ACP terminal's output.
_SERVED_PATTERN = re.compile(rf"mcp-[A-Za-z0-9_-]+\.stderr\.log|{TERMINALS}/term-[0-9]+\.log")
#: The most one slice of a file may hold (bytes).
MAX_SLICE = 1024 * 1024
#: The most of one file served: a larger one is served from this far before its end.
MAX_SERVED = 32 * 1024 * 1024


def stage_file(run_dir: Path, folder: Path, name: str) -> bytes:
    """The file ``name`` of stage folder ``folder`` (its last :data:`MAX_SERVED` bytes).

    Raises:
        Problem: 404 for a name not served or a file that is not there, 403 for
            one that leads outside the run directory.
    """
    path = _served_path(run_dir, folder, name)
    try:
        data, cut = read_tail(path, MAX_SERVED, "stage file", follow=False)
    except InputFileError:
        raise Problem(404, f"{folder.name} has no {name} (yet)") from None
    if cut:
        note = f"[... the first part of {name} is left out: it is over {MAX_SERVED} bytes]\n"
        data = note.encode() + data
    return data


def is_served(name: str) -> bool:
    """Whether ``name`` (relative to a stage folder) is a stage file that may be read."""
    return name in SERVED or _SERVED_PATTERN.fullmatch(name) is not None


def _served_path(run_dir: Path, folder: Path, name: str) -> Path:
    if not is_served(name):
        known = ", ".join([*sorted(SERVED), "mcp-NAME.stderr.log", f"{TERMINALS}/term-N.log"])
        raise Problem(404, f"no stage file {name!r}; one of {known}")
    path = folder / name
    if not inside(run_dir, path):
        raise Problem(403, f"{name} leads outside the run directory; it is not served")
    return path


def stage_listing(run_dir: Path, folder: Path) -> list[dict[str, Any]]:
    """Every stage file of ``folder`` that may be read: ``{"name", "size"}``, by name."""
    names = [entry.name for entry in _entries(folder)]
    names += [f"{TERMINALS}/{entry.name}" for entry in _entries(folder / TERMINALS)]
    listing: list[dict[str, Any]] = []
    for name in sorted(n for n in names if is_served(n)):
        path = folder / name
        if inside(run_dir, path) and path.is_file():
            listing.append({"name": name, "size": path.stat().st_size})
    return listing


def _entries(folder: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as entries:
            return list(entries)
    except OSError:
        return []


def stage_slice(
    run_dir: Path, folder: Path, name: str, offset: int, limit: int, redact: Callable[[str], str]
) -> tuple[bytes, int, int]:
    """``limit`` bytes from byte ``offset`` of the stage file ``name`` as it is served:
    the bytes (ending on a whole UTF-8 character), the size, and where the next slice
    starts.

    The file (its last :data:`MAX_SERVED` bytes, as :func:`stage_file` serves it) is
    redacted whole before it is cut, so the edge of a page never cuts a secret in two
    where each half would pass on its own (a file still being written has not been
    scrubbed yet); offsets and the size count the bytes of that redacted text.

    Raises:
        Problem: as :func:`stage_file`.
    """
    text = stage_file(run_dir, folder, name).decode("utf-8", errors="replace")
    whole = redact(text).encode("utf-8")
    data = whole[offset : offset + limit]
    if offset + len(data) < len(whole):
        data = _whole_characters(data)
    return data, len(whole), offset + len(data)


def _whole_characters(data: bytes) -> bytes:
    """``data`` without a UTF-8 character cut at its end (the next slice starts with it)."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte < 0x80:
            return data
        if byte >= 0xC0:  # the first byte of a character of 2, 3 or 4 bytes
            length = 2 if byte < 0xE0 else 3 if byte < 0xF0 else 4
            return data[:-back] if length > back else data
    return data
