"""``attractor resume RUN_DIR`` through the real CLI (in-process; see test_run_processes
for resumes after SIGKILL, SIGINT and SIGTERM)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import Result

from tests.cli.runkit import invoke, lines_of, only_run_dir, sleep_mark, write


@pytest.fixture
def mark() -> Iterator[str]:
    with sleep_mark(29) as word:
        yield word


def _timed_out_run(workspace: Path, mark: str) -> tuple[Path, Path]:
    """A run stopped by --timeout while ``b`` waits for a ``go`` file; (source, run dir)."""
    source = write(
        workspace / "p.dot",
        f"""digraph p {{
            start [shape=Mdiamond]
            done  [shape=Msquare]
            a [shape=parallelogram, tool_command="echo a >> side.txt"]
            b [shape=parallelogram, tool_command="[ -f go ] || sleep {mark}"]
            c [shape=parallelogram, tool_command="echo c >> side.txt"]
            start -> a -> b -> c -> done
        }}""",
    )
    result = invoke(
        ["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}", "--timeout", "1s", "--quiet"]
    )
    assert result.exit_code == 124, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("pipeline timed out after 1s while running b; ")
    write(workspace / "go", "")
    return source, only_run_dir(workspace / "runs")


def _warnings(result: Result) -> list[str]:
    """The warnings, less the one that says the ``go`` file written by hand was saved."""
    lines = [line for line in result.stderr.splitlines() if line.startswith("warning: ")]
    return [line for line in lines if "edits made by hand" not in line]


def _resume(run_dir: Path, *args: str) -> Result:
    return invoke(["resume", str(run_dir), *args])


def test_resume_continues_where_the_run_stopped(workspace: Path, mark: str) -> None:
    _, run_dir = _timed_out_run(workspace, mark)
    result = _resume(run_dir)
    assert result.exit_code == 0, result.output
    assert lines_of(workspace / "side.txt") == ["a", "c"]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("== resuming p in ")
    # The summary covers the whole run, including the nodes of the first session.
    rows = {line.split()[0] for line in lines if line.split()}
    assert {"a", "b", "c"} <= rows
    assert lines[-1].startswith("pipeline succeeded in ")


def test_resume_warns_when_the_pipeline_file_changed(workspace: Path, mark: str) -> None:
    source, run_dir = _timed_out_run(workspace, mark)
    source.write_text(source.read_text(encoding="utf-8") + "// edited\n", encoding="utf-8")
    result = _resume(run_dir)
    assert result.exit_code == 0, result.output
    warnings = _warnings(result)
    assert len(warnings) == 1
    assert "p.dot changed" in warnings[0]


def test_resume_json_and_quiet(workspace: Path, mark: str) -> None:
    _, run_dir = _timed_out_run(workspace, mark)
    result = _resume(run_dir, "--json")
    assert result.exit_code == 0, result.output
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    assert printed[0]["type"] == "pipeline_started"
    assert printed[0]["resumed"] is True
    started = [p["name"] for p in printed if p["type"] == "stage_started"]
    assert "a" not in started
    assert "b" in started


def test_resume_quiet_prints_one_line(workspace: Path, mark: str) -> None:
    _, run_dir = _timed_out_run(workspace, mark)
    result = _resume(run_dir, "-q")
    assert result.exit_code == 0, result.output
    assert len(result.stdout.splitlines()) == 1
    assert result.stdout.startswith("pipeline succeeded in ")


def test_resume_of_a_finished_run_is_refused_in_one_line(workspace: Path, mark: str) -> None:
    _, run_dir = _timed_out_run(workspace, mark)
    assert _resume(run_dir, "-q").exit_code == 0
    result = _resume(run_dir)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {run_dir}: the run already finished (it succeeded); "
        "resume --from NODE goes back to NODE, or start a new run\n"
    )


def test_resume_of_a_failed_run_says_how_it_finished(workspace: Path) -> None:
    write(
        workspace / "f.dot",
        "digraph f { start [shape=Mdiamond]; done [shape=Msquare]; "
        'x [simulate="fail"]; start -> x -> done }',
    )
    assert invoke(["run", "f.dot", "--logs-dir", "runs/{timestamp}-{graph}", "-q"]).exit_code == 1
    run_dir = only_run_dir(workspace / "runs")
    result = _resume(run_dir)
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {run_dir}: the run already finished (it failed); resume --retry-failed "
        "runs the failed node again, --from NODE goes back to NODE, or start a new run\n"
    )


def test_resume_validates_settings_like_run(workspace: Path, mark: str) -> None:
    _, run_dir = _timed_out_run(workspace, mark)
    result = _resume(run_dir, "--max-turns", "x")
    assert result.exit_code == 2
    assert result.stderr == 'error: --max-turns="x": must be an integer from 1 to 500\n'


def test_resume_of_a_directory_that_is_no_run_is_a_usage_error(workspace: Path) -> None:
    (workspace / "empty").mkdir()
    result = invoke(["resume", "empty"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: empty: not a run directory")
    assert len(result.stderr.splitlines()) == 1


def test_resume_has_no_logs_dir_option(workspace: Path) -> None:
    result = invoke(["resume", "x", "--logs-dir", "y"])
    assert result.exit_code == 2
    assert "--logs-dir" in result.stderr


def _finished_run(workspace: Path) -> Path:
    write(
        workspace / "ok.dot",
        "digraph ok { start [shape=Mdiamond]; done [shape=Msquare]; start -> done }",
    )
    assert invoke(["run", "ok.dot", "--logs-dir", "runs/{timestamp}-{graph}", "-q"]).exit_code == 0
    return only_run_dir(workspace / "runs")


@pytest.mark.parametrize(
    ("patch", "field"),
    [
        ({"node_outcomes": []}, "node_outcomes"),
        ({"context": []}, "context"),
        ({"node_outcomes": {"start": "bogus"}}, "node_outcomes"),
        ({"completed_nodes": "abc"}, "completed_nodes"),
    ],
)
def test_resume_of_a_damaged_checkpoint_names_the_file_and_the_field(
    workspace: Path, patch: dict[str, object], field: str
) -> None:
    run_dir = _finished_run(workspace)
    path = run_dir / "checkpoint.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**data, **patch}), encoding="utf-8")
    result = _resume(run_dir)
    assert result.exit_code == 2  # nothing ran
    assert result.stderr.startswith(f"error: {path}: checkpoint field {field!r} must be ")
    assert len(result.stderr.splitlines()) == 1


def test_resume_of_a_binary_checkpoint_is_one_line(workspace: Path) -> None:
    run_dir = _finished_run(workspace)
    (run_dir / "checkpoint.json").write_bytes(b"\xff\xfe\x00\x80binary")
    result = _resume(run_dir)
    assert result.exit_code == 2  # nothing ran
    assert result.stderr == (
        f"error: {run_dir / 'checkpoint.json'}: checkpoint is not UTF-8 JSON text; "
        "the file is damaged, start a new run\n"
    )


def test_timeouts_are_echoed_as_the_user_wrote_them(workspace: Path, mark: str) -> None:
    write(
        workspace / "t.dot",
        f"""digraph t {{
            start [shape=Mdiamond]
            done  [shape=Msquare]
            slow  [shape=parallelogram, tool_command="sleep {mark}", timeout=" 0.3s "]
            note  [shape=parallelogram, tool_command="echo noted"]
            wait  [shape=parallelogram, tool_command="sleep {mark}"]
            start -> slow
            slow -> note [condition="outcome=fail"]
            note -> wait -> done
        }}""",
    )
    result = invoke(
        ["run", "t.dot", "--logs-dir", "runs/{timestamp}-{graph}", "--timeout", "1500ms"]
    )
    assert result.exit_code == 124, result.output
    assert "!! slow failed: timed out after 0.3s" in result.stdout
    run_dir = only_run_dir(workspace / "runs")
    status = json.loads((run_dir / "slow" / "status.json").read_text(encoding="utf-8"))
    assert status["failure_reason"] == "timed out after 0.3s"
    assert result.stderr.splitlines()[-1] == (
        f"pipeline timed out after 1500ms while running wait; "
        f"resume with: attractor resume {Path('runs') / run_dir.name}"
    )
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["failure_reason"] == "pipeline timed out after 1500ms while running wait"


def test_resume_from_another_directory_checks_the_original_file(
    workspace: Path, mark: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, run_dir = _timed_out_run(workspace, mark)
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["source_file"] == str(source.resolve())
    (workspace / "elsewhere").mkdir()
    write(workspace / "elsewhere" / "p.dot", "digraph other { }")  # a decoy with the same name
    monkeypatch.chdir(workspace / "elsewhere")
    result = _resume(run_dir.resolve(), "--workdir", str(workspace))
    assert result.exit_code == 0, result.output
    assert not _warnings(result)


def test_resume_from_another_directory_warns_when_the_original_changed(
    workspace: Path, mark: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source, run_dir = _timed_out_run(workspace, mark)
    source.write_text(source.read_text(encoding="utf-8") + "// edited\n", encoding="utf-8")
    (workspace / "elsewhere").mkdir()
    monkeypatch.chdir(workspace / "elsewhere")
    result = _resume(run_dir.resolve(), "--workdir", str(workspace))
    assert result.exit_code == 0, result.output
    warnings = _warnings(result)
    assert warnings == [
        f"warning: {source.resolve()} changed since this run started; "
        "resuming with the copy in the run dir"
    ]


def test_resume_applies_set_values_over_the_restored_context(workspace: Path, mark: str) -> None:
    write(
        workspace / "env.dot",
        f"""digraph env {{
            start [shape=Mdiamond]
            done  [shape=Msquare]
            hold  [shape=parallelogram, tool_command="[ -f go ] || sleep {mark}"]
            prod  [shape=parallelogram, tool_command="echo prod >> side.txt"]
            dev   [shape=parallelogram, tool_command="echo dev >> side.txt"]
            start -> hold
            hold -> prod [condition="context.env=prod"]
            hold -> dev  [condition="context.env!=prod"]
            prod -> done
            dev -> done
        }}""",
    )
    first = invoke(
        [
            "run",
            "env.dot",
            "--logs-dir",
            "runs/{timestamp}-{graph}",
            "--timeout",
            "1s",
            "--set",
            "env=dev",
        ]
    )
    assert first.exit_code == 124, first.output
    write(workspace / "go", "")
    run_dir = only_run_dir(workspace / "runs")
    result = _resume(run_dir, "--set", "env=prod")
    assert result.exit_code == 0, result.output
    assert lines_of(workspace / "side.txt") == ["prod"]
    checkpoint = json.loads((run_dir / "checkpoint.json").read_text(encoding="utf-8"))
    assert checkpoint["context"]["env"] == "prod"


def test_retry_failed_of_a_run_that_succeeded_says_what_would_work(
    workspace: Path, mark: str
) -> None:
    _, run_dir = _timed_out_run(workspace, mark)
    assert _resume(run_dir, "-q").exit_code == 0
    result = _resume(run_dir, "--retry-failed")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {run_dir}: --retry-failed continues a failed run, and this one finished "
        "(success): nothing failed to run again; --from NODE goes back to NODE\n"
    )


def test_a_run_is_named_by_the_id_attractor_runs_shows(workspace: Path, mark: str) -> None:
    source = write(
        workspace / "p.dot",
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; "
        f'b [shape=parallelogram, tool_command="[ -f go ] || sleep {mark}"]; '
        "start -> b -> done }",
    )
    assert invoke(["run", str(source), "--timeout", "1s", "-q"]).exit_code == 124
    write(workspace / "go", "")
    [listed] = json.loads(invoke(["runs", "--json"]).stdout)
    for command in (["status", listed["id"]], ["logs", listed["id"]], ["resume", listed["id"]]):
        assert invoke(command).exit_code == 0, command
    result = invoke(["status", "no-such-run"])
    assert result.exit_code == 2
    assert result.stderr == (
        "error: no-such-run: no such run directory (nor a run id under .attractor/runs); "
        "pass the directory attractor run printed, or list the runs with attractor runs\n"
    )


def test_a_resumed_runs_duration_counts_every_session(workspace: Path, mark: str) -> None:
    _, run_dir = _timed_out_run(workspace, mark)  # its first session: the 1s --timeout
    assert _resume(run_dir, "-q").exit_code == 0
    [listed] = json.loads(invoke(["runs", "--root", str(workspace / "runs"), "--json"]).stdout)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert listed["duration"] == manifest["active_seconds"] >= 1.0
    assert manifest["duration"] < manifest["active_seconds"]  # the last session alone
