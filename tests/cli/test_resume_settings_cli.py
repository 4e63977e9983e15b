"""Resume continues with the settings the run was started with."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import (
    finish,
    only_run_dir,
    read_json,
    sleep_mark,
    spawn,
    wait_for,
    write,
)

PIPELINE = """\
digraph resumable {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    work  [prompt="Do the work"]
    start -> work -> exit
}
"""


@pytest.fixture
def mark() -> Iterator[str]:
    with sleep_mark(43) as word:
        yield word


def _interrupted_scripted_run(workspace: Path, mark: str) -> Path:
    write(workspace / "p.dot", PIPELINE)
    hold = f"test -f go || (touch holding; sleep {mark})"
    script = {
        "responses": [
            {"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": hold}}]},
            {"text": "DONE BY THE SCRIPT"},
        ],
        "then": "stop",
    }
    write(workspace / "model.json", json.dumps(script))
    args = ["run", "p.dot", "--backend", "scripted:model.json", "--max-turns", "6",
            "--logs-dir", "runs/r"]  # fmt: skip
    proc = spawn(args, workspace)
    wait_for(lambda: (workspace / "holding").exists(), "the node to hold")
    proc.send_signal(signal.SIGINT)
    code, _, err = finish(proc)
    assert code == 130, err
    write(workspace / "go", "")
    return only_run_dir(workspace / "runs")


def test_a_scripted_run_resumed_without_flags_keeps_its_model(workspace: Path, mark: str) -> None:
    run_dir = _interrupted_scripted_run(workspace, mark)
    recorded = read_json(run_dir / "manifest.json")["settings"]
    assert recorded["backend"] == f"scripted:{workspace / 'model.json'}"
    assert recorded["max_turns"] == "6"
    code, out, err = finish(spawn(["resume", str(run_dir)], workspace))
    assert code == 0, err
    assert (run_dir / "work" / "response.md").read_text() == "DONE BY THE SCRIPT"
    budget = read_json(run_dir / "work" / "status.json")["turn_budget"]
    assert budget["effective"] == 6


def test_a_flag_on_resume_overrides_and_says_so(workspace: Path, mark: str) -> None:
    run_dir = _interrupted_scripted_run(workspace, mark)
    code, out, err = finish(spawn(["resume", str(run_dir), "--max-turns", "4"], workspace))
    assert code == 0, err
    assert "note: --max-turns 4 replaces the run's max_turns 6" in err
    assert read_json(run_dir / "work" / "status.json")["turn_budget"]["effective"] == 4


def test_a_resume_that_would_fall_back_to_simulate_is_refused(workspace: Path, mark: str) -> None:
    run_dir = _interrupted_scripted_run(workspace, mark)
    manifest = read_json(run_dir / "manifest.json")
    del manifest["settings"]  # as an older attractor left it: nothing recorded
    write(run_dir / "manifest.json", json.dumps(manifest))
    code, out, err = finish(spawn(["resume", str(run_dir)], workspace))
    assert code == 2
    assert "would finish them on the simulate backend" in err
    assert not (run_dir / "work" / "response.md").exists()
    code, out, err = finish(spawn(["resume", str(run_dir), "--backend", "simulate"], workspace))
    assert code == 0, err
