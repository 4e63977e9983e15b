"""A run directory is private to its user: folders 0700, files 0600, every one of
them, whatever wrote it; ``run_permissions = "umask"`` hands the choice to the umask."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import finish, spawn, write

#: A tool node that fails once (an attempt folder), an agent node (transcript,
#: tools.log), parallel branches, a human gate, and a resume.
_PIPELINE = """\
digraph every_writer {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    flaky [shape=parallelogram, max_retries=1,
           tool_command="echo try >> tries.txt; test $(wc -l < tries.txt) -ge 2"]
    agent [prompt="Look around"]
    fan   [shape=component]
    join  [shape=tripleoctagon]
    b1    [shape=parallelogram, tool_command="echo one"]
    b2    [shape=parallelogram, tool_command="echo two"]
    ask   [shape=hexagon, label="Ship?"]
    start -> flaky -> agent -> fan
    fan -> b1 -> join
    fan -> b2 -> join
    join -> ask
    ask -> done [label="Yes"]
}
"""
_MODEL = {
    "responses": [
        {"text": "", "tool_calls": [{"name": "list_dir", "arguments": {}}]},
        {"text": "all looked at"},
    ]
}


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)  # the usual one: without the rule, files would be 0644
    try:
        yield
    finally:
        os.umask(old)


def _modes(run_dir: Path) -> dict[str, int]:
    found = {".": stat.S_IMODE(run_dir.stat().st_mode)}
    for folder, dirs, files in os.walk(run_dir):
        for name in dirs + files:
            path = Path(folder) / name
            found[str(path.relative_to(run_dir))] = stat.S_IMODE(path.lstat().st_mode)
    return found


def _run(workspace: Path, env: dict[str, str] | None = None) -> Path:
    write(workspace / "p.dot", _PIPELINE)
    write(workspace / "model.json", json.dumps(_MODEL))
    args = ["run", "p.dot", "--backend", "scripted:model.json", "--auto-approve"]
    code, _, err = finish(spawn([*args, "--logs-dir", "runs/{graph}", "-q"], workspace, env))
    assert code == 0, err
    run_dir = workspace / "runs" / "every_writer"
    code, _, err = finish(spawn(["resume", str(run_dir), "--retry-failed"], workspace, env))
    assert code == 2  # a finished run: nothing written, the modes stay as they were
    return run_dir


def test_every_file_and_folder_of_a_run_directory_is_private(
    workspace: Path, umask_022: None
) -> None:
    run_dir = _run(workspace)
    modes = _modes(run_dir)
    for name in ("journal.jsonl", "events.jsonl", "results.jsonl", "checkpoint.json",
                 "manifest.json", ".lock", "processes.jsonl", "flaky/stdout.txt",
                 "flaky/v1-a1", "agent/transcript.jsonl", "agent/tools.log",
                 "agent/response.md", "b1/stdout.txt"):  # fmt: skip
        assert name in modes, sorted(modes)
    wrong = {
        name: oct(mode)
        for name, mode in modes.items()
        if mode != (0o700 if (run_dir / name).is_dir() else 0o600)
        # git writes its objects read-only: private still means no group or other bits
        and not (name.startswith("workspace.git/") and mode & 0o077 == 0)
    }
    assert wrong == {}
    assert any(name.startswith("workspace.git/objects/") for name in modes)
    assert stat.S_IMODE((workspace / "tries.txt").stat().st_mode) == 0o644  # the tool's own


def test_run_permissions_umask_lets_the_umask_decide(workspace: Path, umask_022: None) -> None:
    write(workspace / "attractor.toml", 'run_permissions = "umask"\n')
    run_dir = _run(workspace)
    modes = _modes(run_dir)
    assert modes["."] == 0o755 and modes["journal.jsonl"] == 0o644
    assert modes["checkpoint.json"] == 0o644 and modes["agent/transcript.jsonl"] == 0o644


def test_a_bad_run_permissions_value_is_one_line(workspace: Path) -> None:
    write(
        workspace / "p.dot",
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; start -> done }",
    )
    code, _, err = finish(
        spawn(["run", "p.dot"], workspace, {"ATTRACTOR_RUN_PERMISSIONS": "public"})
    )
    assert code == 2
    assert err == 'error: ATTRACTOR_RUN_PERMISSIONS="public": expected one of private, umask\n'
