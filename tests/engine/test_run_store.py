"""The engine keeps a run through the run store's interface (store/base.py) alone.

A store kept in memory, with only the interface's methods, takes a whole run:
the manifest, every checkpoint, the journal, the event log, the summary rows,
a node's attempts and its status record go to it, and none of the run
directory's own record files is written. A run stopped part way resumes from
that store alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import anyio
import pytest

from attractor.dot.graph import Graph
from attractor.events import Event
from attractor.run_status import RunStatus
from attractor.store.base import RunStore
from attractor.store.checkpoint import Checkpoint, apply_record
from attractor.store.rundir import RunDir
from tests.engine.enginekit import graph_of, resume, run

pytestmark = pytest.mark.anyio


class _Journal:
    def __init__(self, seq: int, records: list[dict[str, Any]] | None = None) -> None:
        self.seq, self.offset = seq, 0
        self.records: list[dict[str, Any]] = records or []

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

    def __init__(self, path: Path) -> None:
        self._run_dir = RunDir(path)  # for the node folders alone
        self.manifests: list[dict[str, Any]] = []
        self.checkpoints: list[dict[str, Any]] = []
        self.journal = _Journal(0)
        self.events = _Events()
        self.rows = _Lines()
        self.locked = self.unlocked = False
        self.source = ""
        #: (node, visit, attempt) of each attempt after a node's first.
        self.attempts: list[tuple[str, int, int]] = []
        #: node -> the engine's status records of it, in order.
        self.statuses: dict[str, list[dict[str, Any]]] = {}

    @property
    def path(self) -> Path:
        return self._run_dir.path

    def stage_dir(self, node_id: str) -> Path:
        return self.open_stage_dir(node_id)[0]

    def open_stage_dir(self, node_id: str) -> tuple[Path, bool]:
        return self._run_dir.open_stage_dir(node_id)

    def write_manifest(self, data: dict[str, Any]) -> None:
        self.manifests.append(json.loads(json.dumps(data)))

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        self.checkpoints.append(json.loads(json.dumps(checkpoint.to_json())))

    def open_journal(self, seq: int) -> _Journal:
        kept = [r for r in self.journal.records if r["seq"] <= seq]
        self.journal = _Journal(seq, kept)
        return self.journal

    def open_events(self) -> _Events:
        self.events.closed = False
        return self.events

    def open_results(self, rows: list[str] | None = None) -> _Lines:
        if rows is not None:
            self.rows[:] = rows
        return self.rows

    def lock(self) -> None:
        self.locked, self.unlocked = True, False

    def unlock(self) -> None:
        self.unlocked = True

    @property
    def pipeline_path(self) -> Path:
        return self.path / "copy.dot"  # a file: a resume parses it

    def copy_source(self, text: str) -> None:
        self.source = text
        self.pipeline_path.write_text(text)

    def copy_prompt_files(self, graph: Graph) -> None:
        pass  # the test pipelines read no prompt files

    def has_checkpoint(self) -> bool:
        return bool(self.checkpoints)

    def load_checkpoint(self) -> Checkpoint:
        checkpoint = Checkpoint.from_json(self.checkpoints[-1], self.path)
        for record in self.journal.records:
            if record["seq"] > checkpoint.journal_seq:
                apply_record(checkpoint, record, self.path, record["seq"])
        return Checkpoint.from_json(checkpoint.to_json(), self.path)

    def read_manifest(self) -> dict[str, Any]:
        return dict(self.manifests[-1]) if self.manifests else {}

    def read_results(self, count: int) -> list[dict[str, Any]]:
        return [json.loads(row) for row in self.rows[:count]]

    def child_steps(self, node_ids: Iterable[str]) -> int:
        return 0  # the test pipelines have no sub-pipelines

    def begin_attempt(self, node_id: str, visit: int, attempt: int) -> None:
        self.attempts.append((node_id, visit, attempt))

    def write_status(self, node_id: str, record: str, *, beside_node_s: bool) -> None:
        self.statuses.setdefault(node_id, []).append(json.loads(record))


class Stores:
    """The store of each run folder, opened once: a database of runs, in memory."""

    def __init__(self) -> None:
        self.opened: dict[Path, MemoryStore] = {}

    def __call__(self, path: Path) -> RunStore:
        return self.opened.setdefault(path, MemoryStore(path))


#: The run directory's own record files, which a run kept elsewhere never writes.
RECORD_FILES = {
    "checkpoint.json",
    "journal.jsonl",
    "events.jsonl",
    "results.jsonl",
    "manifest.json",
    "pipeline.dot",
    ".lock",
}


def _written(run_dir: Path) -> set[str]:
    return {p.name for p in run_dir.rglob("*")}


async def test_a_run_is_kept_in_a_store_of_the_interface_alone(tmp_path: Path) -> None:
    stores = Stores()
    graph = graph_of(
        'work [shape=parallelogram, tool_command="echo hi"]\n'
        "check [shape=diamond]\n"
        "start -> work -> check\n"
        'check -> done [condition="outcome=success"]\n'
        'check -> work [condition="outcome!=success"]\n'
    )
    result = await run(graph, tmp_path, store=stores)

    assert result.status == "success"
    [store] = stores.opened.values()
    assert [json_row.count('"node"') for json_row in store.rows] == [1] * len(result.node_results)
    assert [e.type for e in store.events][0] == "pipeline_started"
    assert store.events[-1].type == "pipeline_completed" and store.events.closed
    assert store.checkpoints[-1]["status"] == "success"
    assert store.checkpoints[-1]["completed_nodes"] == ["start", "work", "check", "done"]
    assert store.journal.records and store.journal.records[-1]["seq"] == store.journal.seq
    assert store.manifests[-1]["status"] == "success" and store.locked and store.unlocked
    assert store.statuses["work"][-1]["outcome"] == "success"
    assert store.source == graph.source
    assert (result.run_dir / "work" / "stdout.txt").read_text() == "hi\n"
    # Nothing of the record files went past the store to the run directory.
    assert not _written(result.run_dir) & (RECORD_FILES | {"status.json"})


async def test_a_retried_node_s_attempts_go_through_the_store(tmp_path: Path) -> None:
    stores = Stores()
    graph = graph_of('flaky [simulate="fail,success", max_retries=2]\nstart -> flaky -> done\n')
    result = await run(graph, tmp_path, store=stores)

    assert result.status == "success"
    [store] = stores.opened.values()
    assert store.attempts == [("flaky", 1, 2)]
    assert [r["attempts"] for r in map(json.loads, store.rows) if r["node"] == "flaky"] == [2]
    assert store.statuses["flaky"][-1]["outcome"] == "success"
    assert not _written(result.run_dir) & (RECORD_FILES | {"status.json", ".attempt"})


async def test_a_stopped_run_resumes_from_the_store_alone(tmp_path: Path) -> None:
    """Stopped while ``wait`` runs, the run goes on from what the store kept:
    ``first`` does not run again, ``wait`` runs from its start."""
    stores = Stores()
    go_on = tmp_path / "go-on"
    graph = graph_of(
        'first [shape=parallelogram, tool_command="echo one"]\n'
        f'wait [shape=parallelogram, tool_command="test -e {go_on} || sleep 30"]\n'
        "start -> first -> wait -> done\n"
    )
    waiting = anyio.Event()

    def watch(event: Event) -> None:
        if event.type == "stage_started" and event.to_json().get("name") == "wait":
            waiting.set()

    async def stop_when_waiting() -> RunStatus:
        await waiting.wait()
        return RunStatus.INTERRUPTED

    stopped = await run(
        graph, tmp_path, store=stores, observers=[watch], stop_requests=stop_when_waiting
    )
    assert stopped.status == "interrupted"
    [store] = stores.opened.values()
    assert store.checkpoints[-1]["next_node"] == "wait" and store.unlocked

    go_on.touch()
    resumed = await resume(stopped.run_dir, tmp_path, store=stores)

    assert resumed.status == "success"
    assert stores.opened.keys() == {stopped.run_dir}
    assert [r["node"] for r in map(json.loads, store.rows)] == ["start", "first", "wait", "done"]
    assert store.manifests[-1]["status"] == "success" and "resumed_at" in store.manifests[-1]
    assert [e.type for e in store.events].count("pipeline_started") == 2
    assert (stopped.run_dir / "first" / "stdout.txt").read_text() == "one\n"
    assert not _written(stopped.run_dir) & RECORD_FILES


async def test_the_run_directory_is_a_run_store(tmp_path: Path) -> None:
    store: RunStore = RunDir(tmp_path)  # mypy checks it implements the interface
    store.write_manifest({"status": "running"})
    assert (tmp_path / "manifest.json").exists()
