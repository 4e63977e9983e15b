"""The run store's interface: what the engine keeps of one run while it goes.

The engine drives a run through a :class:`RunStore` and nothing else of the
store: the manifest, the whole checkpoint, the journal of changes between
checkpoints, the event log, the summary rows, and the folder each node writes
its files into. :class:`~attractor.store.rundir.RunDir` is the store there is
(files in a run directory). Another store (a database, a test double) implements
these methods; a node's own files still go to a folder on disk, because the
commands and agents a node runs write files.

The engine opens a store with a :data:`StoreFactory` (``RunOptions.store``) for
a run's folder, new or to resume, and sets the run up through it too: the lock,
the copy of the pipeline, the manifest, checkpoint and summary rows a resume
restores, the attempts of a node and its status record. Reading runs back for
the front ends (``runview``) works on the run directory's files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from attractor.dot.graph import Graph
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

    def lock(self) -> None:
        """Keep every other process out of the run until :meth:`unlock` (or this one ends).

        Raises:
            UsageError: another process holds the run.
        """
        ...

    def unlock(self) -> None:
        """Let another process open the run again."""
        ...

    # Setting a run up: a new one, and one to resume.

    @property
    def pipeline_path(self) -> Path:
        """The run's copy of its pipeline, a file (a resume and child runs read it)."""
        ...

    def copy_source(self, text: str) -> None:
        """Keep ``text``, the pipeline the run started from, at :attr:`pipeline_path`."""
        ...

    def copy_prompt_files(self, graph: Graph) -> None:
        """Keep the prompt files ``graph`` read, so a resume reads the same prompts."""
        ...

    def has_checkpoint(self) -> bool:
        """Whether the run has saved a checkpoint (so it can be resumed)."""
        ...

    def load_checkpoint(self) -> Checkpoint:
        """The run's state as last saved: the checkpoint, brought forward by the journal.

        Raises:
            CheckpointError: there is none, or it is damaged (what to do is said).
        """
        ...

    def read_manifest(self) -> dict[str, Any]:
        """The manifest last written, ``{}`` when there is none."""
        ...

    def read_results(self, count: int) -> list[dict[str, Any]]:
        """The first ``count`` summary rows (later ones the checkpoint does not cover)."""
        ...

    def child_steps(self, node_ids: Iterable[str]) -> int:
        """The steps the child runs of these (sub-pipeline) nodes recorded, theirs
        included: a resumed run counts them against its step budget."""
        ...

    # One node's attempts.

    def begin_attempt(self, node_id: str, visit: int, attempt: int) -> None:
        """Another attempt of the node starts: what the one before left is kept aside."""
        ...

    def write_status(self, node_id: str, record: str, *, beside_node_s: bool) -> None:
        """The engine's record of the node's outcome (JSON text), in its folder;
        ``beside_node_s``: the node wrote its own ``status.json``, which stays."""
        ...


#: Opens the store of the run whose folder is the path (``RunOptions.store``).
StoreFactory = Callable[[Path], RunStore]
