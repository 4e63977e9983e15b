"""The progress journal: checkpoint.json plus the records after it give the current state."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from attractor.errors import CheckpointError
from attractor.events import Event
from attractor.store.checkpoint import Checkpoint
from attractor.store.journal import JOURNAL
from tests.engine.enginekit import executed, graph_of, resume, run

CHAIN = "a\nb\nc\nd\nstart -> a -> b -> c -> d -> done"


class _CopyAt:
    """Copies the run directory when ``node`` starts: what a SIGKILL at that moment leaves."""

    def __init__(self, node: str, into: Path) -> None:
        self.node, self.into = node, into
        self.run_dir: Path | None = None

    def __call__(self, event: Event) -> None:
        data = event.to_json()
        if data["type"] == "pipeline_started":
            self.run_dir = Path(data["run_dir"])
        elif data["type"] == "stage_started" and data["name"] == self.node:
            assert self.run_dir is not None
            if not self.into.exists():
                shutil.copytree(self.run_dir, self.into)


async def _killed_at(node: str, tmp_path: Path) -> Path:
    copy = _CopyAt(node, tmp_path / "killed")
    result = await run(graph_of(CHAIN), tmp_path, observers=[copy])
    assert result.status == "success"
    return copy.into


@pytest.mark.anyio
async def test_load_applies_the_journal_written_after_the_checkpoint(tmp_path: Path) -> None:
    killed = await _killed_at("c", tmp_path)
    on_disk = Checkpoint.load_file(killed / "checkpoint.json")
    assert on_disk.completed_nodes == []  # only the snapshot written when the run opened

    state = Checkpoint.load(killed / "checkpoint.json")
    assert state.completed_nodes == ["start", "a", "b"]
    assert (state.next_node, state.status) == ("c", "running")
    assert state.node_visits == {"start": 1, "a": 1, "b": 1}  # c counts when it reruns
    assert state.node_outcomes == {"start": "success", "a": "success", "b": "success"}
    assert state.context["last_stage"] == "b"
    assert state.node_results_count == 3


@pytest.mark.anyio
async def test_resume_after_a_kill_runs_only_what_was_left(tmp_path: Path) -> None:
    killed = await _killed_at("c", tmp_path)
    resumed = await resume(killed, tmp_path)
    assert resumed.status == "success"
    assert executed(resumed) == ["start", "a", "b", "c", "d", "done"]
    final = Checkpoint.load_file(killed / "checkpoint.json")
    assert final.status == "success"
    assert final.completed_nodes == ["start", "a", "b", "c", "d", "done"]
    # The final checkpoint holds everything: no journal record comes after it.
    assert final.journal_offset == (killed / JOURNAL).stat().st_size


@pytest.mark.anyio
async def test_a_record_cut_short_is_ignored_and_resume_continues_after_it(
    tmp_path: Path,
) -> None:
    killed = await _killed_at("c", tmp_path)
    with (killed / JOURNAL).open("a") as fh:
        fh.write('{"seq":99,"done":[["c",1]')  # a write the kill cut short
    assert Checkpoint.load(killed / "checkpoint.json").completed_nodes[-1] == "b"
    resumed = await resume(killed, tmp_path)
    assert resumed.status == "success"
    assert Checkpoint.load(killed / "checkpoint.json").completed_nodes[-3:] == ["c", "d", "done"]


@pytest.mark.anyio
async def test_a_damaged_record_is_reported_with_the_file(tmp_path: Path) -> None:
    killed = await _killed_at("c", tmp_path)
    journal = killed / JOURNAL
    lines = journal.read_text().splitlines(keepends=True)
    journal.write_text(lines[0] + "garbage\n" + "".join(lines[1:]))
    with pytest.raises(CheckpointError, match=r"journal\.jsonl: line 2 .* damaged"):
        Checkpoint.load(killed / "checkpoint.json")


@pytest.mark.anyio
async def test_a_run_directory_without_a_journal_still_resumes(tmp_path: Path) -> None:
    graph = graph_of(
        'a\nwait [shape=parallelogram, tool_command="sleep 30"]\nstart -> a -> wait -> done'
    )
    stopped = await run(graph, tmp_path, timeout=0.5, kill_grace=0.1)
    assert stopped.status == "timed_out"
    # The format before the journal: the same checkpoint without the journal fields.
    path = stopped.run_dir / "checkpoint.json"
    data = json.loads(path.read_text())
    del data["journal_seq"], data["journal_offset"]
    path.write_text(json.dumps(data))
    (stopped.run_dir / JOURNAL).unlink()
    (stopped.run_dir / "pipeline.dot").write_text(
        (stopped.run_dir / "pipeline.dot").read_text().replace("sleep 30", "true")
    )
    resumed = await resume(stopped.run_dir, tmp_path)
    assert resumed.status == "success"
    assert executed(resumed)[-2:] == ["wait", "done"]


@pytest.mark.anyio
async def test_journal_records_stay_the_same_size_as_the_run_grows(tmp_path: Path) -> None:
    body = (
        "\n".join(f"n{i}" for i in range(300))
        + "\nstart -> "
        + " -> ".join(f"n{i}" for i in range(300))
    )
    result = await run(graph_of(body + " -> done"), tmp_path)
    assert result.status == "success"
    sizes = [len(line) for line in (result.run_dir / JOURNAL).read_bytes().splitlines()]
    assert len(sizes) == 301
    # Node ids grow by a digit or two, nothing else: no record carries the whole run.
    assert max(sizes[250:]) <= max(sizes[5:50]) + 30 < 500
    records = [json.loads(line) for line in (result.run_dir / JOURNAL).read_text().splitlines()]
    assert records[10]["done"] == [["n9", 1]]  # which visit of the node completed
