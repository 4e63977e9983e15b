"""The progress journal: an append-only ``journal.jsonl`` beside ``checkpoint.json``.

Writing the whole checkpoint after every node costs O(nodes run so far) bytes
and an fsync each time. Instead the engine appends one short JSON line per
step of the main traversal (what changed: the nodes completed, their status,
visit and retry counts, the context keys set, the next node) and writes the
full ``checkpoint.json`` only now and then and when the run stops. A
checkpoint names the last journal record it contains (``journal_seq``) and
where the following records start (``journal_offset``), so a reader applies
only the tail: :meth:`Checkpoint.load <attractor.store.checkpoint.Checkpoint.load>`
does that, and so always returns the current state.

Durability. A record is handed to the kernel with one ``write`` as soon as
the step ends, so it survives the engine being killed (SIGKILL, out of
memory) at any moment. ``fdatasync`` makes it survive a machine crash too;
it runs only where losing the record would matter: before a node with side
effects (a command, a model, a person) starts, and when the run stops. One
fdatasync then covers every record written since the previous one (group
commit). Each record carries ``seq`` and the ``visit`` of the node it
completed, so a later reader can tell the visits of a node apart.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from attractor import redact
from attractor.errors import CheckpointError, InputFileError
from attractor.fileio.jsonio import dumps_compact, loads_json
from attractor.fileio.reads import read_lines
from attractor.fileio.writes import run_file_mode, write_all

JOURNAL = "journal.jsonl"


class Journal:
    """The open journal of one run directory: appends records, syncs on demand."""

    def __init__(self, path: Path, seq: int = 0) -> None:
        self.path = path
        #: The sequence number of the last record written (or restored).
        self.seq = seq
        self._fd: int | None = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, run_file_mode()
        )
        self.offset = os.fstat(self._fd).st_size
        self._unsynced = False
        if self.offset and not _ends_with_newline(path, self.offset):
            # A record cut short by a crash: end its line so the next one starts clean.
            self._write(b"\n")

    def append(self, record: dict[str, Any]) -> None:
        """Write one record (``seq`` is added) with a single write call."""
        self.seq += 1
        line = redact.text(f'{{"seq":{self.seq},' + dumps_compact(record)[1:] + "\n")
        self._write(line.encode())

    def _write(self, data: bytes) -> None:
        if self._fd is None:
            raise CheckpointError(f"{self.path}: the journal is closed")
        write_all(self._fd, data)
        self.offset += len(data)
        self._unsynced = True

    def sync(self) -> None:
        """Make every record written so far durable (one fdatasync for all of them)."""
        if self._unsynced and self._fd is not None:
            os.fdatasync(self._fd)
            self._unsynced = False

    def close(self) -> None:
        if self._fd is not None:
            try:
                self.sync()
            finally:
                os.close(self._fd)
                self._fd = None


def _ends_with_newline(path: Path, size: int) -> bool:
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        return os.pread(fd, 1, size - 1) == b"\n"
    finally:
        os.close(fd)


def read_records(path: Path, offset: int, after_seq: int) -> Iterator[tuple[int, dict[str, Any]]]:
    """The records of ``path`` from byte ``offset`` with ``seq`` above ``after_seq``.

    Yields (line number counted from ``offset``, record), streaming: one line is
    in memory at a time. A last line without its newline (a write cut short) is
    ignored; any other line that is not a record makes the journal damaged, and
    so do a journal that is not a regular file, a line over
    :data:`~attractor.fileio.reads.LINE_LIMIT` and more than
    :data:`~attractor.fileio.reads.STATE_LIMIT` bytes after ``offset``. An ``offset``
    past the end yields nothing.

    Raises:
        CheckpointError: a damaged line or file, naming the file and what to do.
    """
    try:
        lines = read_lines(path, "journal", offset=offset)
        for number, (_, line) in enumerate(lines, start=1):
            if not line.strip():
                continue  # the newline that ended a cut-short record
            record = _parse(path, number, line)
            if record["seq"] > after_seq:
                yield number, record
    except InputFileError as exc:
        if exc.errno == errno.ENOENT:
            return
        if exc.kind == "os":
            raise CheckpointError(f"{path}: cannot read the journal: {exc.reason}") from None
        raise damaged_run_file(exc) from None


def _parse(path: Path, number: int, line: bytes) -> dict[str, Any]:
    try:
        record = loads_json(line.decode("utf-8"), path, "journal record")
    except (ValueError, InputFileError):  # UnicodeDecodeError is a ValueError
        record = None
    if not isinstance(record, dict) or type(record.get("seq")) is not int:
        raise CheckpointError(
            f"{path}: line {number} after the checkpoint is not a journal record; "
            "the run directory is damaged, start a new run"
        )
    return record


def damaged_run_file(exc: InputFileError) -> CheckpointError:
    """A run file that cannot be used, as the one-line error resume reports."""
    return CheckpointError(
        f"{exc.path}: {exc.reason}; the run directory is damaged, start a new run"
    )
