"""Follow the output files of a running command, a batch of whole lines at a time.

A tool step's command writes straight to ``stdout.txt`` and ``stderr.txt``
(no pipe through the engine). :class:`OutputFollower` reads what was appended
to them every :data:`INTERVAL` seconds while the command runs, and once more
when it has ended, and hands each batch of whole lines to a callback with its
byte offset in the file, so a reader can link a chunk to the whole file.

No task of its own does the reading: inside :meth:`OutputFollower.running`, the
wait of the command the block starts (:mod:`attractor.proc.process`) wakes every
:meth:`~OutputFollower.interval` to call :meth:`~OutputFollower.poll`. A task group
and its cancellation cost a short command a tenth of its whole cost; a deadline
on the wait it does anyway costs next to nothing.

A chatty command cannot flood whoever receives the batches: one batch holds
at most :data:`CHUNK_LIMIT` bytes (when more arrived since the last read, the
*last* lines are kept, so a follower sees where the command is, and the batch
says how many bytes it skipped), and after :data:`STREAM_BUDGET` bytes of a
stream were handed over, batches shrink to :data:`LATE_CHUNK_LIMIT` bytes and
come at most every :data:`LATE_INTERVAL` seconds.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path

from attractor.valueclass import frozen

#: Seconds between two reads of the files while the command runs.
INTERVAL = 0.1
#: Bytes of output one batch holds at most.
CHUNK_LIMIT = 64 * 1024
#: Bytes of a stream handed over in full before batches shrink.
STREAM_BUDGET = 4 * 1024 * 1024
#: A batch's size and the seconds between reads once a stream spent its budget.
LATE_CHUNK_LIMIT = 4 * 1024
LATE_INTERVAL = 1.0


@frozen
class Chunk:
    """Whole lines a command wrote to one stream.

    ``offset`` is where ``text`` starts in the stream's file; ``skipped`` how
    many bytes before it (since the previous chunk) were not handed over.
    The last line of a stream that ends without a newline gets one.
    """

    stream: str
    offset: int
    text: str
    skipped: int = 0

    def shown(self, file_name: str) -> str:
        """``text``, after a note of the bytes skipped before it (if any) that names
        ``file_name``, the file holding the whole output."""
        if not self.skipped:
            return self.text
        note = f"[... {self.skipped} bytes not shown; the whole output is in {file_name}]"
        return f"{note}\n{self.text}"


class _Stream:
    """The read position in one output file."""

    def __init__(self, name: str, path: Path) -> None:
        self.name = name
        self.path = path
        self.position = 0
        self.handed = 0
        self.fd = -1

    def limit(self) -> int:
        return CHUNK_LIMIT if self.handed < STREAM_BUDGET else LATE_CHUNK_LIMIT

    def take(self, final: bool) -> Chunk | None:
        """The whole lines appended since the last call (all the rest when ``final``)."""
        size = self._size()
        pending = size - self.position
        if pending <= 0:
            return None
        limit = self.limit()
        start = self.position
        if pending > limit:
            start = size - limit
        data = self._read(start, size - start)
        if not final:
            end = data.rfind(b"\n") + 1
            if end == 0:  # no whole line yet
                if pending <= limit:
                    return None
                end = len(data)  # one line longer than a chunk: hand over its part
            data = data[:end]
        if start > self.position:
            # Start the kept part at a line start: the line cut by the limit is skipped.
            first = data.find(b"\n") + 1
            if 0 < first < len(data):
                start, data = start + first, data[first:]
        skipped = start - self.position
        self.position = start + len(data)
        self.handed += len(data)
        text = data.decode("utf-8", errors="replace")
        if final and not text.endswith("\n"):
            text += "\n"
        return Chunk(self.name, start, text, skipped)

    def _size(self) -> int:
        if self.fd < 0:
            # Opened once it holds something: most commands leave stderr empty.
            try:
                if os.stat(self.path).st_size <= self.position:
                    return 0
                # Not through a link the command put in its output file's place.
                flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC
                self.fd = os.open(self.path, flags)
            except OSError:
                return 0
        try:
            return os.fstat(self.fd).st_size
        except OSError:
            return 0

    def _read(self, offset: int, length: int) -> bytes:
        try:
            return os.pread(self.fd, length, offset)
        except OSError:
            return b""

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class OutputFollower:
    """Hands whole lines appended to output files to ``sink`` while a command runs.

    Run the command inside :meth:`running`: its wait calls :meth:`poll` every
    :meth:`interval` seconds, and :meth:`finish` comes when the block ends.
    """

    def __init__(self, paths: Mapping[str, Path], sink: Callable[[Chunk], None]) -> None:
        self._streams = [_Stream(name, path) for name, path in paths.items()]
        self._sink = sink

    @contextlib.contextmanager
    def running(self) -> Iterator[OutputFollower]:
        """Follow the files while a command the block starts waits; the rest is handed
        over when the block ends, also when it fails or is cancelled (the follower
        never raises over the block's own error)."""
        token = CURRENT.set(self)
        try:
            yield self
        finally:
            CURRENT.reset(token)
            self.finish()

    def interval(self) -> float:
        """Seconds until the next read: longer once every stream spent its budget."""
        late = all(s.handed >= STREAM_BUDGET for s in self._streams)
        return LATE_INTERVAL if late else INTERVAL

    def poll(self, final: bool) -> None:
        for stream in self._streams:
            chunk = stream.take(final)
            if chunk is not None:
                self._sink(chunk)

    def finish(self) -> None:
        """Hand over what is left, the last line of each stream included, and close the files."""
        try:
            self.poll(final=True)
        finally:
            for stream in self._streams:
                stream.close()


#: The follower of the block running now (:meth:`OutputFollower.running`): the wait
#: of a command started in it polls it (attractor.proc.process).
CURRENT: ContextVar[OutputFollower | None] = ContextVar("attractor_output_follower", default=None)
