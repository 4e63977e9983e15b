"""Conversations that outlive a stage: ``full``-fidelity threads in the run directory.

Each stage that ends on a thread writes the whole conversation to its own file,
``threads/<thread>/<node>-v<visit>-a<attempt>.json``, and names that file in the
context (``internal.thread.<thread>``). The context is checkpointed with the
stage's completion, so the head a resumed run reads is exactly the one its last
completed stage left: a stage killed half-way runs again from the same point,
and a run resumed after a crash continues its ``full`` conversations instead of
falling back to a summary. Files are never overwritten.

A parallel branch works on its own copy (``<thread>@<branch>``), which starts
from the conversation as it was when the branches forked.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from attractor.agent import thread as thread_json
from attractor.errors import AttractorError
from attractor.fileio.digest import sha256_hex
from attractor.fileio.jsonio import loads_json
from attractor.fileio.reads import STATE_LIMIT, read_bounded
from attractor.fileio.writes import atomic_write_json, run_dir_mode
from attractor.handlers.context import Context
from attractor.handlers.fidelity import THREAD_OF_PREFIX
from attractor.llm.types import Message

THREADS_DIR = "threads"
HEAD_PREFIX = "internal.thread."
_UNSAFE = re.compile(r"[^A-Za-z0-9@._-]+")


class ThreadError(AttractorError):
    """A saved thread that cannot be read back."""


class ThreadStore:
    """The thread ``key`` of one stage attempt, on the main path or in a branch."""

    def __init__(self, logs_root: Path, key: str, branch: str | None = None) -> None:
        self.logs_root = logs_root
        self.key = key
        self.own = key if branch is None else f"{key}@{branch}"

    def head(self, context: Context) -> str:
        """The run-relative file of the thread's latest conversation, "" for a new thread."""
        own = context.get_string(HEAD_PREFIX + self.own)
        return own or context.get_string(HEAD_PREFIX + self.key)

    def load(self, context: Context) -> tuple[Message, ...]:
        """The conversation so far (empty for a new thread).

        Raises:
            ThreadError: the head file is missing or is not a saved thread.
        """
        head = self.head(context)
        if not head:
            return ()
        path = self.logs_root / head
        try:
            text = read_bounded(path, STATE_LIMIT, "thread file")
            return thread_json.load(loads_json(text, path, "thread file"))
        except (AttractorError, ValueError) as error:
            raise ThreadError(
                f"cannot continue thread {self.key!r} from {head}: {error}; "
                f"set fidelity to a summary mode on this node to start it afresh"
            ) from error

    def save(
        self, messages: tuple[Message, ...], *, node_id: str, visit: int, attempt: int
    ) -> dict[str, Any]:
        """Write the conversation; the context updates that make it the thread's head."""
        name = f"{_safe(node_id)}-v{visit}-a{attempt}.json"
        relative = Path(THREADS_DIR) / _safe(self.own) / name
        path = self.logs_root / relative
        path.parent.mkdir(mode=run_dir_mode(), parents=True, exist_ok=True)
        atomic_write_json(path, thread_json.dump(messages))
        return {HEAD_PREFIX + self.own: relative.as_posix(), THREAD_OF_PREFIX + node_id: self.key}


def _safe(name: str) -> str:
    """A file name for ``name``: itself when safe, else a readable slug and a hash."""
    slug = _UNSAFE.sub("_", name).strip("._") or "thread"
    if slug == name and len(name) <= 80:
        return name
    digest = sha256_hex(name.encode())[:8]
    return f"{slug[:60]}-{digest}"
