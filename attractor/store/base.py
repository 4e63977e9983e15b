"""The run store's interface: what the engine keeps of one run while it goes.

The engine drives a run through a :class:`RunStore` and nothing else of the
store: the manifest, the whole checkpoint, the journal of changes between
checkpoints, the event log, the summary rows, and the folder each node writes
its files into. :class:`~attractor.store.rundir.RunDir` is the store there is
(files in a run directory). Another store (a database, a test double) implements
these methods; a node's own files still go to a folder on disk, because the
commands and agents a node runs write files.

Opening a store (a new run directory, or one to resume: ``engine/setup.py``)
and reading a run back (``runview``) work on the run directory's files.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from attractor.events import Event
    from attractor.store.checkpoint import Checkpoint


class JournalWriter(Protocol):
    """Appends the records of a run between checkpoints; syncs on demand."""

    #: The sequence number of the last record written (or restored).
    seq: int
    #: Where the next record goes: a checkpoint says how far it covers the journal.
    offset: int

    def append(self, record: dict[str, Any]) -> None:
        """Write one record; its ``seq`` is added."""
        ...

    def sync(self) -> None:
        """Make every record written so far durable."""
        ...

    def close(self) -> None: ...


class EventSink(Protocol):
    """Keeps each event of the run, in order (an observer of the event bus)."""

    def __call__(self, event: Event) -> None: ...

    def close(self) -> None: ...


class RowWriter(Protocol):
    """Appends summary rows, one JSON line each."""

    def write(self, text: str) -> None: ...

    def close(self) -> None: ...


class RunStore(Protocol):
    """Where the engine keeps one run (one run directory) while it goes."""

    @property
    def path(self) -> Path:
        """The run's folder: node folders are in it, and it names the run (its id)."""
        ...

    def stage_dir(self, node_id: str) -> Path:
        """The folder of node ``node_id``'s files, created on first use."""
        ...

    def open_stage_dir(self, node_id: str) -> tuple[Path, bool]:
        """The folder of node ``node_id``, and whether this call created it (so it is empty)."""
        ...

    def write_manifest(self, data: dict[str, Any]) -> None:
        """Replace the run's manifest (status, times, usage), atomically."""
        ...

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        """Replace the run's checkpoint, atomically and durably."""
        ...

    def open_journal(self, seq: int) -> JournalWriter:
        """The journal, to append after record ``seq``."""
        ...

    def open_events(self) -> EventSink:
        """The event log, to append to."""
        ...

    def open_results(self, rows: list[str] | None = None) -> RowWriter:
        """The summary rows, to append to; ``rows`` (a resume) replaces those kept first."""
        ...

    def unlock(self) -> None:
        """Let another process open the run (its lock is taken when the store is opened)."""
        ...
