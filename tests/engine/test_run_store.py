"""The engine keeps a run through the run store's interface (store/base.py) alone.

A store kept in memory, with only the interface's methods, takes a whole run:
the manifest, every checkpoint, the journal, the event log and the summary rows
go to it, and none of the run directory's own record files is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from attractor.events import Event
from attractor.store.base import RunStore
from attractor.store.checkpoint import Checkpoint
from attractor.store.rundir import RunDir
from tests.engine.enginekit import graph_of, run

pytestmark = pytest.mark.anyio


class _Journal:
    def __init__(self, seq: int) -> None:
        self.seq, self.offset = seq, 0
        self.records: list[dict[str, Any]] = []

    def append(self, record: dict[str, Any]) -> None:
        self.seq += 1
        self.offset += 1
        self.records.append({"seq": self.seq, **record})

    def sync(self) -> None:
        pass

    def close(self) -> None:
        pass


class _Lines(list[str]):
    closed = False

    def write(self, text: str) -> None:
        self.append(text)

    def close(self) -> None:
        self.closed = True


class _Events(list[Event]):
    closed = False

    def __call__(self, event: Event) -> None:
        self.append(event)

    def close(self) -> None:
        self.closed = True


class MemoryStore:
    """A run store in memory; node folders under the run directory (nodes write files)."""

    def __init__(self, run_dir: RunDir) -> None:
        self._run_dir = run_dir
        self.manifests: list[dict[str, Any]] = []
        self.checkpoints: list[dict[str, Any]] = []
        self.journal = _Journal(0)
        self.events = _Events()
        self.rows = _Lines()
        self.unlocked = False

    @property
    def path(self) -> Path:
        return self._run_dir.path

    def stage_dir(self, node_id: str) -> Path:
        return self.open_stage_dir(node_id)[0]

    def open_stage_dir(self, node_id: str) -> tuple[Path, bool]:
        return self._run_dir.open_stage_dir(node_id)

    def write_manifest(self, data: dict[str, Any]) -> None:
        self.manifests.append(dict(data))

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        self.checkpoints.append(dict(checkpoint.to_json()))

    def open_journal(self, seq: int) -> _Journal:
        self.journal = _Journal(seq)
        return self.journal

    def open_events(self) -> _Events:
        return self.events

    def open_results(self, rows: list[str] | None = None) -> _Lines:
        self.rows[:] = rows or []
        return self.rows

    def unlock(self) -> None:
        self.unlocked = True
        self._run_dir.unlock()


async def test_a_run_is_kept_in_a_store_of_the_interface_alone(tmp_path: Path) -> None:
    stores: list[MemoryStore] = []

    def store_for(run_dir: RunDir) -> RunStore:
        stores.append(MemoryStore(run_dir))
        return stores[-1]

    graph = graph_of(
        'work [shape=parallelogram, tool_command="echo hi"]\n'
        "check [shape=diamond]\n"
        "start -> work -> check\n"
        'check -> done [condition="outcome=success"]\n'
        'check -> work [condition="outcome!=success"]\n'
    )
    result = await run(graph, tmp_path, store=store_for)

    assert result.status == "success"
    [store] = stores
    assert [json_row.count('"node"') for json_row in store.rows] == [1] * len(result.node_results)
    assert [e.type for e in store.events][0] == "pipeline_started"
    assert store.events[-1].type == "pipeline_completed" and store.events.closed
    assert store.checkpoints[-1]["status"] == "success"
    assert store.checkpoints[-1]["completed_nodes"] == ["start", "work", "check", "done"]
    assert store.journal.records and store.journal.records[-1]["seq"] == store.journal.seq
    assert store.manifests[-1]["status"] == "success" and store.unlocked
    assert (result.run_dir / "work" / "stdout.txt").read_text() == "hi\n"
    # Nothing of the record files went past the store to the run directory.
    on_disk = {p.name for p in result.run_dir.iterdir()}
    assert not on_disk & {"checkpoint.json", "journal.jsonl", "events.jsonl", "results.jsonl"}


async def test_the_run_directory_is_a_run_store(tmp_path: Path) -> None:
    store: RunStore = RunDir(tmp_path)  # mypy checks it implements the interface
    store.write_manifest({"status": "running"})
    assert (tmp_path / "manifest.json").exists()
