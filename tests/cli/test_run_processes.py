"""``attractor run``/``resume`` as real processes: timeouts, signals, crashes, resume.

Every pipeline here marks its shell commands with a unique word so the test can
find them in /proc and prove none outlives the run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from attractor.store.checkpoint import Checkpoint
from tests.cli.runkit import (
    events as read_events,
)
from tests.cli.runkit import (
    finish,
    invoke,
    kill_all,
    lines_of,
    only_run_dir,
    pids_with,
    read_json,
    sleep_mark,
    spawn,
    wait_exit,
    wait_for,
    write,
)


@pytest.fixture(autouse=True)
def no_workspace(workspace: Path) -> None:
    """These tests steer their runs with files written in the workdir between sessions
    (``go``) and count what the stages did in it; with a workspace a resume would put
    such files back. What a workspace does across kills and resumes is in
    tests/workspace and the SIGKILL soak (test_crash_kill.py)."""
    write(workspace / "attractor.toml", 'workspace = "none"\n')


@pytest.fixture
def mark() -> Iterator[str]:
    """A unique number usable as a ``sleep`` argument and found again in /proc."""
    with sleep_mark(29) as word:
        yield word


def _resume_target(stderr_line: str, cwd: Path) -> Path:
    """The RUN_DIR of a ``...; resume with: attractor resume RUN_DIR`` line."""
    _, sep, path = stderr_line.partition("resume with: attractor resume ")
    assert sep, stderr_line
    return (cwd / path).resolve()


def test_timeout_exits_124_promptly_and_kills_the_tool_process(workspace: Path, mark: str) -> None:
    write(
        workspace / "slow.dot",
        f"""digraph slow {{
            start [shape=Mdiamond]
            done  [shape=Msquare]
            wait  [shape=parallelogram, tool_command="echo started > started.txt; sleep {mark}"]
            start -> wait -> done
        }}""",
    )
    began = time.monotonic()
    proc = spawn(
        ["run", "slow.dot", "--timeout", "1s", "--logs-dir", "runs/{timestamp}-{graph}"], workspace
    )
    code, out, err = finish(proc)
    elapsed = time.monotonic() - began
    assert pids_with(mark) == [], "the sleep survived the run"
    assert code == 124, err
    assert elapsed < 5, f"exit took {elapsed:.1f}s after a 1s timeout"
    assert (workspace / "started.txt").exists(), "the tool never started"
    last = err.splitlines()[-1]
    run_dir = only_run_dir(workspace / "runs")
    assert last.startswith("pipeline timed out after 1s while running wait; resume with: ")
    assert _resume_target(last, workspace) == run_dir.resolve()
    checkpoint = read_json(run_dir / "checkpoint.json")
    assert "start" in checkpoint["completed_nodes"]
    assert "wait" not in checkpoint["completed_nodes"]


def _held_pipeline(workspace: Path, mark: str) -> Path:
    """first -> hold (waits for a ``go`` file) -> last, each appending to side.txt."""
    hold = f"echo hold >> side.txt; while [ ! -f go ]; do sleep 0.05; done; : {mark}"
    return write(
        workspace / "held.dot",
        f"""digraph held {{
            start [shape=Mdiamond]
            done  [shape=Msquare]
            first [shape=parallelogram, tool_command="echo first >> side.txt"]
            hold  [shape=parallelogram, tool_command="{hold}"]
            last  [shape=parallelogram, tool_command="echo last >> side.txt"]
            start -> first -> hold -> last -> done
        }}""",
    )


def _wait_until_holding(workspace: Path) -> None:
    wait_for(lambda: "hold" in lines_of(workspace / "side.txt"), "the hold node to start")


@pytest.mark.parametrize(
    ("signum", "code", "word"),
    [
        (signal.SIGINT, 130, "interrupted"),
        (signal.SIGTERM, 143, "terminated"),
        (signal.SIGHUP, 129, "stopped by SIGHUP (terminal closed)"),
    ],
)
def test_signal_stops_the_run_saves_the_checkpoint_and_resume_finishes(
    workspace: Path, mark: str, signum: int, code: int, word: str
) -> None:
    _held_pipeline(workspace, mark)
    proc = spawn(["run", "held.dot", "--logs-dir", "runs/{timestamp}-{graph}"], workspace)
    _wait_until_holding(workspace)
    proc.send_signal(signum)
    returncode, out, err = finish(proc)
    assert pids_with(mark) == [], "the hold command survived the signal"
    assert returncode == code, err
    last = err.splitlines()[-1]
    assert last.startswith(f"pipeline {word} while running hold; resume with: ")
    run_dir = only_run_dir(workspace / "runs")
    assert _resume_target(last, workspace) == run_dir.resolve()
    checkpoint = read_json(run_dir / "checkpoint.json")
    assert "first" in checkpoint["completed_nodes"]
    assert "hold" not in checkpoint["completed_nodes"]

    write(workspace / "go", "")
    resumed = invoke(["resume", str(run_dir)])
    assert resumed.exit_code == 0, resumed.output
    assert lines_of(workspace / "side.txt") == ["first", "hold", "hold", "last"]


def test_sigkill_mid_run_resumes_without_rerunning_completed_nodes(
    workspace: Path, mark: str
) -> None:
    _held_pipeline(workspace, mark)
    proc = spawn(["run", "held.dot", "--logs-dir", "runs/{timestamp}-{graph}"], workspace)
    _wait_until_holding(workspace)
    # The command runs a moment before the engine has noted it (and told the guard).
    ledger = only_run_dir(workspace / "runs") / "processes.jsonl"
    wait_for(lambda: ledger.read_text().count('"start"') == 2, "the hold command's note")
    proc.kill()
    finish(proc)
    # No "go" file: the hold command would wait forever; the run's guard kills it.
    wait_for(lambda: pids_with(mark) == [], "the guard to stop the orphaned hold command")
    write(workspace / "go", "")
    run_dir = only_run_dir(workspace / "runs")
    # checkpoint.json plus the journal records after it: the state at the kill.
    assert Checkpoint.load(run_dir / "checkpoint.json").completed_nodes[-1] == "first"

    proc = spawn(["resume", str(run_dir)], workspace)
    code, out, err = finish(proc)
    assert code == 0, err
    side = lines_of(workspace / "side.txt")
    assert side.count("first") == 1, side
    assert side.count("last") == 1, side
    assert side == ["first", "hold", "hold", "last"]
    assert out.splitlines()[-1].startswith("pipeline succeeded in ")
    checkpoint = read_json(run_dir / "checkpoint.json")
    assert {"first", "hold", "last"} <= set(checkpoint["completed_nodes"])


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_bytes()
        except OSError:
            continue
        if entry.name.isdigit() and int(stat[stat.rfind(b")") + 2 :].split()[1]) == pid:
            found.append(int(entry.name))
    return found


def _runs(pid: int, word: str) -> bool:
    try:
        return word.encode() in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def test_resume_stops_a_survivor_before_its_node_runs_again(workspace: Path, mark: str) -> None:
    """Even with the guard gone too, the interrupted node never runs beside its orphan.

    Unsandboxed: a sandboxed command dies with the engine (bwrap --die-with-parent),
    so no orphan could outlive it there.
    """
    hold = f"echo hold $$ >> side.txt; while [ ! -f go ]; do sleep 0.05; done; : {mark}"
    write(
        workspace / "held.dot",
        f"""digraph held {{
            start [shape=Mdiamond]
            done  [shape=Msquare]
            hold  [shape=parallelogram, sandbox=none, tool_command="{hold}"]
            start -> hold -> done
        }}""",
    )
    proc = spawn(["run", "held.dot", "--logs-dir", "runs/{timestamp}-{graph}"], workspace)
    wait_for(lambda: bool(lines_of(workspace / "side.txt")), "the hold node to start")

    def guards() -> list[int]:
        return [
            pid
            for pid in _children(proc.pid)
            if b"guard.py" in Path(f"/proc/{pid}/cmdline").read_bytes()
        ]

    # The guard starts beside the first command; on a busy machine a moment later.
    wait_for(lambda: len(guards()) == 1, "one guard process to watch the run's commands")
    for pid in (guards()[0], proc.pid):
        os.kill(pid, signal.SIGKILL)
    finish(proc)
    orphan = int(lines_of(workspace / "side.txt")[0].split()[1])
    assert pids_with(mark), "the orphan should outlive both the engine and its guard"

    run_dir = only_run_dir(workspace / "runs")
    resumed = spawn(["resume", str(run_dir)], workspace)
    try:
        wait_for(lambda: len(lines_of(workspace / "side.txt")) == 2, "the resumed hold to start")
        # The orphan is gone (a zombie left unreaped counts as gone: its command line is
        # empty); the resumed hold's shell may briefly fork children that carry the mark.
        assert not _runs(orphan, mark), "the orphan still ran when its node started again"
    finally:
        write(workspace / "go", "")
        code, out, err = finish(resumed)
    assert code == 0, err
    assert "stopped 1 process group(s) the previous attractor left running" in err


def test_a_reader_that_goes_away_does_not_break_the_run(workspace: Path) -> None:
    steps = "\n".join(
        f'            s{i} [shape=parallelogram, tool_command="sleep 0.1; echo {i} >> side.txt"]'
        for i in range(3)
    )
    write(
        workspace / "p.dot",
        f"""digraph p {{
            start [shape=Mdiamond]
            done  [shape=Msquare]
{steps}
            start -> s0 -> s1 -> s2 -> done
        }}""",
    )
    proc = spawn(["run", "p.dot", "--json", "--logs-dir", "runs/{timestamp}-{graph}"], workspace)
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # like `attractor run --json | head -1`
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0, err
    assert '"pipeline_started"' in first
    assert lines_of(workspace / "side.txt") == ["0", "1", "2"]
    assert "Broken pipe" not in err
    assert "Exception ignored" not in err
    assert err.startswith("pipeline succeeded in ")


HUMAN_GATE = """\
digraph asking {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    gate  [shape=hexagon, label="Ship it?"]
    ship  [prompt="ship"]
    start -> gate
    gate -> ship [label="[Y] Yes"]
    gate -> done [label="[N] No"]
    ship -> done
}
"""


def _asking(run_dir_parent: Path) -> bool:
    dirs = [p for p in run_dir_parent.iterdir() if p.is_dir()] if run_dir_parent.is_dir() else []
    return bool(dirs) and '"interview_started"' in "".join(lines_of(dirs[0] / "events.jsonl"))


@pytest.mark.parametrize(
    ("how", "code"),
    [("SIGINT", 130), ("SIGTERM", 143), ("--timeout", 124)],
)
def test_the_process_exits_promptly_while_a_prompt_waits_on_an_open_stdin(
    workspace: Path, how: str, code: int
) -> None:
    write(workspace / "ask.dot", HUMAN_GATE)
    extra = ["--timeout", "1s"] if how == "--timeout" else []
    proc = spawn(
        ["run", "ask.dot", "--logs-dir", "runs/{timestamp}-{graph}", *extra],
        workspace,
        stdin=subprocess.PIPE,
    )
    try:
        wait_for(lambda: _asking(workspace / "runs"), "the human gate to ask")
        if how != "--timeout":
            proc.send_signal(getattr(signal, how))
        # stdin stays open: the old console reader only let go at end of input.
        returncode = wait_exit(proc, timeout=15)
    finally:
        _, err = proc.communicate()  # closes stdin; the process has ended (or was killed)
    assert returncode == code, err
    assert "while running gate; resume with: attractor resume" in err.splitlines()[-1]


def _flaky_pipeline(workspace: Path, mark: str) -> None:
    """``flaky`` (max_retries=2) fails twice, holds during its third run, then fails;
    ``max_visits=1``: its retries are one visit, after a resume too."""
    write(
        workspace / "flaky.sh",
        "echo run >> runs.txt\n"
        'if [ "$(wc -l < runs.txt)" -eq 3 ]; then touch holding; sleep "$1"; fi\n'
        "exit 1\n",
    )
    write(
        workspace / "flaky.dot",
        f"""digraph flaky {{
            start [shape=Mdiamond]
            done  [shape=Msquare]
            flaky [shape=parallelogram, max_retries=2, max_visits=1,
                   tool_command="sh flaky.sh {mark}"]
            start -> flaky -> done
        }}""",
    )


@pytest.mark.parametrize("stop", ["SIGINT", "SIGKILL"])
def test_resume_counts_the_failed_attempts_made_before_the_interruption(
    workspace: Path, mark: str, stop: str
) -> None:
    _flaky_pipeline(workspace, mark)
    proc = spawn(["run", "flaky.dot", "--logs-dir", "runs/{timestamp}-{graph}"], workspace)
    wait_for(lambda: (workspace / "holding").exists(), "the third attempt to start")
    proc.send_signal(getattr(signal, stop))
    finish(proc)
    kill_all(mark)  # after SIGKILL the held command is an orphan
    run_dir = only_run_dir(workspace / "runs")
    assert Checkpoint.load(run_dir / "checkpoint.json").node_retries == {"flaky": 2}

    proc = spawn(["resume", str(run_dir)], workspace)
    code, out, err = finish(proc)
    assert code == 1, err
    # Two failed attempts, the interrupted third, and that third attempt run
    # again on resume: four runs of the command, not 2 + 1 + a fresh three.
    assert lines_of(workspace / "runs.txt") == ["run"] * 4
    started = [
        e["attempt"]
        for e in read_events(run_dir)
        if e["type"] == "stage_started" and e["name"] == "flaky"
    ]
    assert started == [1, 2, 3, 3]
    assert out.splitlines()[-1].startswith("pipeline failed: flaky failed: tool_command exited")


def test_a_second_process_cannot_drive_a_run_directory_in_use(workspace: Path, mark: str) -> None:
    _held_pipeline(workspace, mark)
    proc = spawn(["run", "held.dot", "--logs-dir", "runs/{timestamp}-{graph}"], workspace)
    try:
        _wait_until_holding(workspace)
        run_dir = only_run_dir(workspace / "runs")
        second = invoke(["resume", str(run_dir)])
        assert second.exit_code == 2, second.output
        assert second.stderr == (
            f"error: {run_dir} is in use by another attractor process (pid {proc.pid}); "
            "wait for it or stop it\n"
        )
        assert lines_of(workspace / "side.txt") == ["first", "hold"]  # nothing ran twice
    finally:
        proc.kill()
        finish(proc)
    # SIGKILL released the lock: a resume may now continue the run.
    write(workspace / "go", "")
    wait_for(lambda: pids_with(mark) == [], "the orphaned hold command to exit")
    resumed = invoke(["resume", str(run_dir)])
    assert resumed.exit_code == 0, resumed.output
    assert lines_of(workspace / "side.txt") == ["first", "hold", "hold", "last"]
