"""A run stopped while its snapshot workspace was being made leaves nothing in the way."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from attractor.store.rundir import discard_unstarted, never_started
from tests.cli.runkit import invoke, write


def _half_made(run_dir: Path) -> Path:
    """What a stop during the snapshot's first commit left (seen with kill -TERM)."""
    run_dir.mkdir(parents=True)
    (run_dir / ".lock").write_text("")
    (run_dir / "manifest.json").write_text('{"graph": "p"}\n')
    (run_dir / "pipeline.dot").write_text("digraph p {}\n")
    subprocess.run(["git", "init", "-q", "--bare", str(run_dir / "workspace.git")], check=True)
    return run_dir


def test_a_half_made_snapshot_git_directory_counts_as_never_started(tmp_path: Path) -> None:
    run_dir = _half_made(tmp_path / "r")
    assert never_started(run_dir)
    discard_unstarted(run_dir)
    assert not run_dir.exists()


def test_run_can_use_the_folder_of_a_run_stopped_while_its_snapshot_was_made(
    tmp_path: Path,
) -> None:
    run_dir = _half_made(tmp_path / "logs" / "r")
    plain = tmp_path / "plain"
    plain.mkdir()
    dot = write(
        tmp_path / "p.dot",
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; "
        't [shape=parallelogram, tool_command="echo t > t.txt"]; start -> t -> done }',
    )
    result = invoke(["run", str(dot), "--workdir", str(plain), "--logs-dir", str(run_dir)])
    assert result.exit_code == 0, result.output + result.stderr
    assert (plain / "t.txt").read_text() == "t\n"


def test_a_folder_with_a_checkpoint_is_never_discarded(tmp_path: Path) -> None:
    run_dir = _half_made(tmp_path / "r")
    (run_dir / "checkpoint.json").write_text("{}\n")
    assert not never_started(run_dir)
    discard_unstarted(run_dir)
    assert (run_dir / "workspace.git").is_dir()


def test_the_manifest_names_the_pipeline_by_the_sha256_that_sha256sum_prints(
    tmp_path: Path,
) -> None:
    dot = write(
        tmp_path / "p.dot",
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; start -> done } // é\n",
    )
    run_dir = tmp_path / "run"
    result = invoke(["run", str(dot), "--workspace", "none", "--logs-dir", str(run_dir)])
    assert result.exit_code == 0, result.output
    manifest = json.loads((run_dir / "manifest.json").read_text())
    printed = subprocess.run(["sha256sum", str(dot)], capture_output=True, text=True, check=True)
    assert manifest["source_sha256"] == printed.stdout.split()[0]
