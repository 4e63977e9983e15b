"""Paths a pipeline names (human.show, stack.child_dotfile, workdir) stay inside the
places a run may read, and are opened only when they are regular files.

The secret of these tests is a file outside both the working directory and the
pipeline's folder; whatever the pipeline tries, its text must never reach an event.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attractor.dot.parser import parse_dot
from attractor.dot.transforms import apply_transforms
from attractor.engine.run import RunOptions, run_pipeline
from attractor.handlers.interviewer import AutoApproveInterviewer
from attractor.handlers.simulate import SimulateBackend
from attractor.settings import Settings
from tests.engine.enginekit import NO_WAIT

pytestmark = pytest.mark.anyio

SECRET = "-----BEGIN OPENSSH PRIVATE KEY----- not-for-events"


def _gate(show: str) -> str:
    return (
        "digraph g {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f'  gate [shape=hexagon, label="Ok?", human.show="{show}"]\n'
        '  start -> gate\n  gate -> done [label="[Y] Yes"]\n}\n'
    )


def _layout(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``home/.ssh/id`` (the secret), ``work`` (the workdir), ``pipes`` (the pipeline's folder)."""
    secret = tmp_path / "home" / ".ssh" / "id"
    secret.parent.mkdir(parents=True)
    secret.write_text(SECRET)
    work, pipes = tmp_path / "work", tmp_path / "pipes"
    work.mkdir()
    pipes.mkdir()
    return secret, work, pipes


async def _run(tmp_path: Path, text: str, work: Path, pipes: Path) -> tuple[str, str, Path]:
    source = pipes / "p.dot"
    source.write_text(text)
    graph = apply_transforms(parse_dot(text, file=str(source)))
    settings = Settings(logs_dir=str(tmp_path / "runs" / "{timestamp}"), workdir=str(work))
    options = RunOptions(
        settings=settings,
        interviewer=AutoApproveInterviewer(),
        backoff=NO_WAIT,
        backend=SimulateBackend(),
    )
    result = await run_pipeline(graph, source, options)
    return result.status, result.failure_reason or "", result.run_dir


async def _events(tmp_path: Path, show: str, work: Path, pipes: Path) -> tuple[str, str, str]:
    status, reason, run_dir = await _run(tmp_path, _gate(show), work, pipes)
    return status, reason, (run_dir / "events.jsonl").read_text()


@pytest.mark.parametrize(
    "show",
    ["../home/.ssh/id", "{secret}", "../pipes/../home/.ssh/id"],
    ids=["climbing", "absolute", "through-the-pipeline-folder"],
)
async def test_a_human_show_outside_the_roots_fails_the_gate_and_leaks_nothing(
    tmp_path: Path, show: str
) -> None:
    secret, work, pipes = _layout(tmp_path)
    status, reason, events = await _events(tmp_path, show.format(secret=secret), work, pipes)
    assert status == "fail"
    assert "human.show of node gate" in reason
    assert f"resolves to {secret}, outside the places a run may read" in reason
    assert "not-for-events" not in events and "PRIVATE KEY" not in events


async def test_a_symlink_escaping_the_workdir_is_refused(tmp_path: Path) -> None:
    secret, work, pipes = _layout(tmp_path)
    (work / "review.txt").symlink_to(secret)
    status, reason, events = await _events(tmp_path, "review.txt", work, pipes)
    assert status == "fail"
    assert f"review.txt: resolves to {secret}" in reason
    assert "not-for-events" not in events


async def test_a_symlink_staying_inside_and_the_pipeline_folder_are_allowed(
    tmp_path: Path,
) -> None:
    _, work, pipes = _layout(tmp_path)
    (work / "real.txt").write_text("the diff to review\n")
    (work / "review.txt").symlink_to(work / "real.txt")
    status, _, events = await _events(tmp_path, "review.txt", work, pipes)
    assert status == "success"
    assert "the diff to review" in events
    (pipes / "notes.md").write_text("notes beside the pipeline\n")
    status, _, events = await _events(tmp_path, str(pipes / "notes.md"), work, pipes)
    assert status == "success"
    assert "notes beside the pipeline" in events


@pytest.mark.parametrize("kind", ["fifo", "directory", "dev-zero"])
async def test_a_human_show_that_is_not_a_regular_file_fails_at_once(
    tmp_path: Path, kind: str
) -> None:
    _, work, pipes = _layout(tmp_path)
    target = work / "shown"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "directory":
        target.mkdir()
    status, reason, _ = await _events(
        tmp_path, "/dev/zero" if kind == "dev-zero" else "shown", work, pipes
    )
    assert status == "fail"
    if kind == "dev-zero":  # outside the roots before it is anything else
        assert "outside the places a run may read" in reason
    else:
        assert "not a regular file; point human.show at a regular file" in reason


async def test_a_missing_human_show_is_shown_as_missing(tmp_path: Path) -> None:
    _, work, pipes = _layout(tmp_path)
    status, _, events = await _events(tmp_path, "later.txt", work, pipes)
    assert status == "success"
    assert "later.txt:\\n(cannot read it: no such file yet)" in events


async def test_a_node_workdir_outside_the_roots_fails_the_node(tmp_path: Path) -> None:
    secret, work, pipes = _layout(tmp_path)
    text = (
        "digraph g {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f'  look [shape=parallelogram, workdir="{secret.parent}", tool_command="cat id"]\n'
        "  start -> look -> done\n}\n"
    )
    status, reason, run_dir = await _run(tmp_path, text, work, pipes)
    assert status == "fail"
    assert f"workdir of node look: {secret.parent}: resolves to" in reason
    assert "not-for-events" not in (run_dir / "events.jsonl").read_text()
    assert not (run_dir / "look" / "stdout.txt").exists()


def _manager(child: str) -> str:
    return (
        "digraph parent {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f'  manage [shape=house, stack.child_dotfile="{child}", manager.poll_interval="1s"]\n'
        "  start -> manage -> done\n}\n"
    )


CHILD = "digraph child {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n  start -> done\n}\n"


async def test_a_child_pipeline_outside_the_roots_is_refused(tmp_path: Path) -> None:
    _, work, pipes = _layout(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "child.dot").write_text(CHILD)
    status, reason, run_dir = await _run(tmp_path, _manager("../elsewhere/child.dot"), work, pipes)
    assert status == "fail"
    assert "stack.child_dotfile of node manage" in reason
    assert "outside the places a run may read" in reason
    assert not (run_dir / "children").exists()


async def test_a_child_pipeline_beside_the_parent_runs(tmp_path: Path) -> None:
    _, work, pipes = _layout(tmp_path)
    (pipes / "child.dot").write_text(CHILD)
    status, reason, _ = await _run(tmp_path, _manager("child.dot"), work, pipes)
    assert (status, reason) == ("success", "")


async def test_a_child_pipeline_that_is_a_fifo_fails_the_manager(tmp_path: Path) -> None:
    _, work, pipes = _layout(tmp_path)
    os.mkfifo(pipes / "child.dot")
    status, reason, _ = await _run(tmp_path, _manager("child.dot"), work, pipes)
    assert status == "fail"
    assert "a FIFO (named pipe), not a regular file" in reason
