"""Files a user points attractor at that are not what they should be.

Every case ends the same way: exit 2, exactly one line on stderr naming the file
and what to do, no traceback, and never a hang. Cases that used to hang (a FIFO,
``/dev/zero``) run as real subprocesses under a timeout, so a regression fails
instead of blocking the suite.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from attractor.fileio.jsonio import MAX_JSON_DEPTH
from attractor.fileio.reads import STATE_LIMIT, TEXT_LIMIT
from tests.cli.runkit import finish, invoke, only_run_dir, spawn, write

LINEAR = Path(__file__).resolve().parents[2] / "examples" / "linear.dot"
#: Deep enough to have blown Python's recursion limit (the reported defect).
DEEP = "[" * 100_000 + "]" * 100_000
#: Generous for a failed guard: every case here ends in well under a second.
HANG_TIMEOUT = 30


def _one_line_error(code: int, err: str, *needles: str) -> str:
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1, err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def _cli(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``python -m attractor ARGS`` as a real process, killed if it hangs."""
    return finish(spawn(args, cwd, env), timeout=HANG_TIMEOUT)


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _oversized(path: Path, limit: int) -> Path:
    with path.open("wb") as fh:  # sparse: no disk space, but stat says limit + 1 bytes
        fh.truncate(limit + 1)
    return path


# -- files that are not regular, or too large ---------------------------------------

BadFile = Callable[[Path], Path]
NOT_REGULAR: dict[str, tuple[BadFile, str]] = {
    "dev-zero": (lambda _dir: Path("/dev/zero"), "a character device, not a regular file"),
    "fifo": (lambda d: _fifo(d / "named.pipe"), "a FIFO (named pipe), not a regular file"),
    "directory": (lambda d: d, "a directory, not a regular file"),
}


@pytest.mark.parametrize("case", NOT_REGULAR)
def test_lint_refuses_a_file_that_is_not_regular(workspace: Path, case: str) -> None:
    make, reason = NOT_REGULAR[case]
    bad = make(workspace)
    code, out, err = _cli(["lint", str(bad)], workspace)
    line = _one_line_error(code, err, f"error: {bad}: cannot read: {reason}")
    assert line.endswith("; pass a regular pipeline file")
    assert out == ""


@pytest.mark.parametrize("case", NOT_REGULAR)
def test_lint_json_reports_an_unreadable_file_as_an_error(workspace: Path, case: str) -> None:
    bad = NOT_REGULAR[case][0](workspace)
    code, out, err = _cli(["lint", "--format", "json", str(bad)], workspace)
    _one_line_error(code, err, str(bad))
    # A JSON document a script can read, never "[]" (which reads as a clean file).
    (found,) = json.loads(out)
    assert (found["file"], found["rule"], found["severity"]) == (str(bad), "unreadable", "error")


def test_lint_json_of_a_missing_file_is_one_error_document(workspace: Path) -> None:
    result = invoke(["lint", "--format", "json", "missing.dot"])
    _one_line_error(result.exit_code, result.stderr, "missing.dot: cannot read")
    (found,) = json.loads(result.stdout)
    assert found["rule"] == "unreadable" and found["line"] == 0
    assert found["message"].startswith("cannot read") and found["fix"]


def test_lint_refuses_an_oversized_file_naming_the_limit(workspace: Path) -> None:
    big = _oversized(workspace / "big.dot", TEXT_LIMIT)
    result = invoke(["lint", str(big)])
    _one_line_error(
        result.exit_code, result.stderr, str(big), "over the 16 MiB limit for a pipeline file"
    )
    assert result.stdout == ""


@pytest.mark.parametrize("case", NOT_REGULAR)
def test_run_refuses_a_pipeline_that_is_not_regular(workspace: Path, case: str) -> None:
    make, reason = NOT_REGULAR[case]
    bad = make(workspace)
    code, _, err = _cli(["run", str(bad), "--logs-dir", "runs/{timestamp}"], workspace)
    _one_line_error(code, err, f"error: {bad}: cannot read: {reason}")
    assert not (workspace / "runs").exists()


@pytest.mark.parametrize("case", ["dev-zero", "fifo"])  # a directory: see test_settings
def test_config_that_is_not_regular_is_refused(workspace: Path, case: str) -> None:
    make, reason = NOT_REGULAR[case]
    bad = make(workspace)
    args = ["run", str(LINEAR), "--config", str(bad), "--logs-dir", "runs/{timestamp}"]
    code, _, err = _cli(args, workspace)
    line = _one_line_error(code, err, f"error: config file {bad}: cannot read: {reason}")
    assert line.endswith("; pass a regular config file")
    assert not (workspace / "runs").exists()


def test_a_fifo_named_attractor_toml_is_refused_not_waited_on(workspace: Path) -> None:
    _fifo(workspace / "attractor.toml")
    code, _, err = _cli(["run", str(LINEAR), "--logs-dir", "runs/{timestamp}"], workspace)
    _one_line_error(code, err, "config file attractor.toml: cannot read: a FIFO")
    assert not (workspace / "runs").exists()


def test_an_oversized_config_is_refused_naming_the_limit(workspace: Path) -> None:
    big = _oversized(workspace / "big.toml", TEXT_LIMIT)
    result = invoke(["run", str(LINEAR), "--config", str(big), "--logs-dir", "runs/{timestamp}"])
    _one_line_error(result.exit_code, result.stderr, f"config file {big}", "over the 16 MiB limit")
    assert not (workspace / "runs").exists()


def test_a_config_nested_too_deeply_is_one_line(workspace: Path) -> None:
    write(workspace / "attractor.toml", "timeout = " + DEEP + "\n")
    result = invoke(["run", str(LINEAR), "--logs-dir", "runs/{timestamp}"])
    _one_line_error(result.exit_code, result.stderr, "attractor.toml", "nest too deeply")


@pytest.mark.parametrize("case", NOT_REGULAR)
def test_answers_that_are_not_regular_are_refused(workspace: Path, case: str) -> None:
    make, reason = NOT_REGULAR[case]
    bad = make(workspace)
    args = ["run", str(LINEAR), "--answers", str(bad), "--logs-dir", "runs/{timestamp}"]
    code, _, err = _cli(args, workspace)
    line = _one_line_error(code, err, f"error: --answers {bad}: cannot read: {reason}")
    assert line.endswith("pipe the answers to stdin without --answers")
    assert not (workspace / "runs").exists()


def test_oversized_answers_are_refused_naming_the_limit(workspace: Path) -> None:
    big = _oversized(workspace / "answers.txt", TEXT_LIMIT)
    result = invoke(["run", str(LINEAR), "--answers", str(big), "--logs-dir", "runs/{timestamp}"])
    _one_line_error(
        result.exit_code,
        result.stderr,
        f"--answers {big}",
        "over the 16 MiB limit for an answers file",
    )


# -- a damaged run directory on resume ----------------------------------------------


def _interrupted_run(workspace: Path) -> Path:
    """A real simulate run whose checkpoint says it stopped before its ``test`` node."""
    result = invoke(["run", str(LINEAR), "--logs-dir", "runs/{timestamp}-{graph}", "-q"])
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / "runs")
    path = run_dir / "checkpoint.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    done = data["completed_nodes"].index("test")
    data.update(
        status="interrupted",
        current_node="test",
        next_node="test",
        completed_nodes=data["completed_nodes"][:done],
        node_results_count=done,
    )
    path.write_text(json.dumps(data), encoding="utf-8")
    return run_dir


def test_the_interrupted_run_helper_resumes_when_nothing_is_damaged(workspace: Path) -> None:
    run_dir = _interrupted_run(workspace)
    assert invoke(["resume", str(run_dir), "-q"]).exit_code == 0


def test_a_deeply_nested_checkpoint_is_one_line(workspace: Path) -> None:
    run_dir = _interrupted_run(workspace)
    checkpoint = run_dir / "checkpoint.json"
    checkpoint.write_text(DEEP, encoding="utf-8")
    result = invoke(["resume", str(run_dir)])
    _one_line_error(
        result.exit_code,
        result.stderr,
        f"error: {checkpoint}: checkpoint nests JSON deeper than the "
        f"{MAX_JSON_DEPTH}-level limit; the run directory is damaged, start a new run",
    )
    assert checkpoint.read_text(encoding="utf-8") == DEEP  # nothing ran, nothing rewritten


def test_a_nested_value_inside_a_checkpoint_is_one_line(workspace: Path) -> None:
    run_dir = _interrupted_run(workspace)
    checkpoint = run_dir / "checkpoint.json"
    text = checkpoint.read_text(encoding="utf-8")
    checkpoint.write_text(text.replace('"context": {', '"context": {"x": ' + DEEP + ", ", 1))
    result = invoke(["resume", str(run_dir)])
    _one_line_error(result.exit_code, result.stderr, str(checkpoint), "deeper than")


@pytest.mark.parametrize(
    ("name", "text", "what"),
    [
        ("manifest.json", '{"goal": ' + DEEP + "}", "manifest nests JSON"),
        ("results.jsonl", DEEP + "\n", "results row nests JSON"),
    ],
)
def test_other_nested_run_files_are_one_line(
    workspace: Path, name: str, text: str, what: str
) -> None:
    run_dir = _interrupted_run(workspace)
    write(run_dir / name, text)
    result = invoke(["resume", str(run_dir)])
    _one_line_error(result.exit_code, result.stderr, f"error: {run_dir / name}: {what}")


@pytest.mark.parametrize(
    "name", ["checkpoint.json", "manifest.json", "results.jsonl", "events.jsonl", "processes.jsonl"]
)
def test_a_run_file_replaced_by_a_fifo_does_not_hang_resume(workspace: Path, name: str) -> None:
    run_dir = _interrupted_run(workspace)
    (run_dir / name).unlink(missing_ok=True)
    _fifo(run_dir / name)
    code, _, err = _cli(["resume", str(run_dir)], workspace)
    _one_line_error(
        code,
        err,
        f"error: {run_dir / name}: ",
        "a FIFO (named pipe), not a regular file; the run directory is damaged",
    )


def test_an_oversized_checkpoint_is_refused_naming_the_limit(workspace: Path) -> None:
    run_dir = _interrupted_run(workspace)
    _oversized(run_dir / "checkpoint.json", STATE_LIMIT)
    result = invoke(["resume", str(run_dir)])
    _one_line_error(result.exit_code, result.stderr, "over the 256 MiB limit for a checkpoint")


# -- run directories that cannot be created or must not be used ---------------------


@pytest.mark.parametrize(
    ("how", "source"),
    [
        ("flag", "--logs-dir"),
        ("env", "ATTRACTOR_LOGS_DIR"),
        ("config", "attractor.toml: logs_dir"),
    ],
)
def test_a_logs_dir_under_a_regular_file_is_one_line(
    workspace: Path, how: str, source: str
) -> None:
    blocker = write(workspace / "notes.txt", "not a directory\n")
    target = f"{blocker}/run"
    args = ["run", str(LINEAR)]
    env: dict[str, str] = {}
    if how == "flag":
        args += ["--logs-dir", target]
    elif how == "env":
        env["ATTRACTOR_LOGS_DIR"] = target
    else:
        write(workspace / "attractor.toml", f"logs_dir = {json.dumps(target)}\n")
    result = invoke(args, env=env)
    line = _one_line_error(
        result.exit_code,
        result.stderr,
        f'error: {source}="{target}": cannot create the run directory {target}: ',
        f"{blocker} is not a directory",
    )
    assert line.endswith("; choose a directory you can write to")
    assert blocker.read_text(encoding="utf-8") == "not a directory\n"


def test_a_logs_dir_with_placeholders_under_a_file_is_one_line(workspace: Path) -> None:
    blocker = write(workspace / "notes.txt", "x\n")
    result = invoke(["run", str(LINEAR), "--logs-dir", f"{blocker}/{{timestamp}}"])
    _one_line_error(result.exit_code, result.stderr, f"{blocker} is not a directory")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs /proc")
def test_a_logs_dir_in_proc_is_one_line(workspace: Path) -> None:
    result = invoke(["run", str(LINEAR), "--logs-dir", "/proc/attractor-test"])
    _one_line_error(result.exit_code, result.stderr, "cannot create the run directory /proc/")


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every entry under ``root``: file bytes, or None for a directory."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else p.read_bytes()
        for p in sorted(root.rglob("*"))
    }


def test_a_non_empty_user_directory_is_refused_and_left_untouched(workspace: Path) -> None:
    mine = workspace / "mine"
    write(mine / "pipeline.dot", "digraph mine { a -> b }\n")
    write(mine / "events.jsonl", '{"my": "log"}\n')
    write(mine / "test" / "stdout.txt", "my output\n")
    write(mine / "notes.txt", "keep me\n")
    before = _tree(mine)
    result = invoke(["run", str(LINEAR), "--logs-dir", "mine"])
    line = _one_line_error(
        result.exit_code,
        result.stderr,
        '--logs-dir="mine": mine is not empty and holds no run',
        "(it has events.jsonl, notes.txt, pipeline.dot and 1 more)",
    )
    assert line.endswith("name a new or empty directory, or add {timestamp} to get a fresh one")
    assert _tree(mine) == before  # byte for byte, and nothing added (not even .lock)


def test_an_empty_existing_directory_may_hold_the_run(workspace: Path) -> None:
    (workspace / "empty").mkdir()
    result = invoke(["run", str(LINEAR), "--logs-dir", "empty", "-q"])
    assert result.exit_code == 0, result.output
    assert (workspace / "empty" / "checkpoint.json").is_file()


def test_a_directory_holding_a_run_is_still_never_reused(workspace: Path) -> None:
    assert invoke(["run", str(LINEAR), "--logs-dir", "out", "-q"]).exit_code == 0
    before = _tree(workspace / "out")
    again = invoke(["run", str(LINEAR), "--logs-dir", "out", "-q"])
    _one_line_error(again.exit_code, again.stderr, "out already holds a run; resume it with")
    assert _tree(workspace / "out") == before
