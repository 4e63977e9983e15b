"""A command checks what it is given before anything else, and never writes
into a folder that is not a run directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.runkit import finish, invoke, only_run_dir, spawn, write

#: A pipeline with a human gate, which an empty stdin cannot answer.
_GATED = (
    "digraph g { start [shape=Mdiamond]; done [shape=Msquare]; "
    'ask [shape=hexagon, label="Ship?"]; start -> ask; ask -> done [label="Yes"] }'
)


@pytest.mark.parametrize("extra", [[], ["--auto-approve"], ["--latest"]])
def test_resume_of_a_project_folder_says_not_a_run_directory_and_writes_nothing(
    workspace: Path, extra: list[str]
) -> None:
    write(workspace / "pipeline.dot", _GATED)  # what attractor init leaves in a project
    before = sorted(p.name for p in workspace.iterdir())
    args = ["resume", *extra] if extra == ["--latest"] else ["resume", ".", *extra]
    code, _, err = finish(spawn(args, workspace))
    assert code == 2, err
    if extra != ["--latest"]:
        assert err == (
            "error: .: not a run directory (no checkpoint.json); "
            "pass the run directory that attractor run printed\n"
        )
    assert "gate" not in err
    assert sorted(p.name for p in workspace.iterdir()) == before  # no stray .lock


def test_run_into_a_directory_holding_a_run_says_so_before_the_gates(workspace: Path) -> None:
    write(workspace / "g.dot", _GATED)
    first = invoke(["run", "g.dot", "--auto-approve", "--logs-dir", "out", "-q"])
    assert first.exit_code == 0, first.output
    # No --auto-approve and nothing on stdin: the gate could not be answered either.
    code, _, err = finish(spawn(["run", "g.dot", "--logs-dir", "out"], workspace))
    assert code == 2
    assert err.startswith("error: out already holds a run; resume it with")
    assert "gate" not in err and len(err.splitlines()) == 1


def test_run_into_a_folder_of_other_files_says_so_before_the_gates(workspace: Path) -> None:
    write(workspace / "g.dot", _GATED)
    write(workspace / "notes" / "todo.txt", "mine")
    code, _, err = finish(spawn(["run", "g.dot", "--logs-dir", "notes"], workspace))
    assert code == 2
    assert "is not empty and holds no run" in err and "gate" not in err
    assert sorted(p.name for p in (workspace / "notes").iterdir()) == ["todo.txt"]


def test_library_resume_of_a_folder_without_a_checkpoint_leaves_no_lock(workspace: Path) -> None:
    import anyio

    import attractor
    from attractor.errors import CheckpointError

    write(workspace / "proj" / "pipeline.dot", _GATED.replace("ask [shape=hexagon", "ask [x=1"))
    with pytest.raises(CheckpointError):
        anyio.run(lambda: attractor.resume(workspace / "proj"))
    assert sorted(p.name for p in (workspace / "proj").iterdir()) == ["pipeline.dot"]


def test_a_finished_run_directory_is_still_recognised(workspace: Path) -> None:
    write(workspace / "g.dot", _GATED)
    ran = invoke(["run", "g.dot", "--auto-approve", "--logs-dir", "runs/{graph}", "-q"])
    assert ran.exit_code == 0
    result = invoke(["resume", str(only_run_dir(workspace / "runs"))])
    assert result.exit_code == 2 and "the run already finished" in result.stderr
