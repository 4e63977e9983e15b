"""Checkpoint save/load and the atomic write helper."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attractor.errors import CheckpointError
from attractor.fileio.writes import atomic_write_text
from attractor.run_status import RunStatus
from attractor.store.checkpoint import Checkpoint


def test_round_trip_keeps_every_field(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.json"
    original = Checkpoint(
        status="timed_out",
        current_node="b",
        next_node="b",
        completed_nodes=["start", "a"],
        node_retries={"a": 1},
        node_visits={"start": 1, "a": 1},
        context={"graph.goal": "g", "n": 3},
        run_turns_used=7,
    )
    original.save(path)
    loaded = Checkpoint.load(path)
    assert loaded == original
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"version": 99}', "version 99 is not supported"),
    ],
)
def test_bad_checkpoints_raise_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "checkpoint.json"
    path.write_text(text)
    with pytest.raises(CheckpointError, match=message):
        Checkpoint.load(path)


def test_atomic_write_replaces_whole_files(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    atomic_write_text(path, "one")
    atomic_write_text(path, "two", fsync=False)
    assert path.read_text() == "two"
    assert [p.name for p in tmp_path.iterdir()] == ["f.txt"]


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("node_outcomes", [], "an object of node id to status"),
        ("node_outcomes", {"start": "bogus"}, "an object of node id to status"),
        ("context", [], "an object"),
        ("completed_nodes", "abc", "a list of node ids"),
        ("node_visits", {"a": "2"}, "an object of node id to a count"),
        ("run_turns_used", True, "a count"),
        ("next_node", 3, "a node id or null"),
        ("status", "finished", "a run status (running, success, fail, timed_out,"),
        ("status", 1, "a run status"),
    ],
)
def test_wrongly_typed_fields_name_the_file_and_the_field(
    tmp_path: Path, field: str, value: object, expected: str
) -> None:
    path = tmp_path / "checkpoint.json"
    path.write_text(json.dumps({"version": 1, field: value}))
    with pytest.raises(CheckpointError) as caught:
        Checkpoint.load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: checkpoint field {field!r} must be {expected}")
    assert message.endswith("start a new run")


def test_a_binary_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.json"
    path.write_bytes(b"\xff\xfe\x00garbage\x80")
    with pytest.raises(CheckpointError, match="checkpoint is not UTF-8 JSON text"):
        Checkpoint.load(path)


def test_the_status_read_back_is_a_run_status(tmp_path: Path) -> None:
    path = tmp_path / "checkpoint.json"
    path.write_text(json.dumps({"version": 1, "status": "restarted"}))
    assert Checkpoint.load(path).status is RunStatus.RESTARTED
