"""``attractor run`` through the real CLI: output modes, exit codes, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.runkit import events, invoke, only_run_dir, read_json, run_dirs, write

LINEAR = """\
digraph linear {
    graph [goal="Say hello"]
    start [shape=Mdiamond]
    done  [shape=Msquare]
    plan  [prompt="Plan: $goal"]
    build [prompt="Build it"]
    start -> plan -> build -> done
}
"""

FAILING = """\
digraph failing {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    plan  [prompt="Plan", simulate="fail"]
    start -> plan -> done
}
"""

NO_START = """\
digraph broken {
    done [shape=Msquare]
    a    [prompt="x"]
    a -> done
}
"""


def _run(workspace: Path, text: str, *args: str, env: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    write(workspace / "p.dot", text)
    return invoke(["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}", *args], env=env)


def test_success_prints_summary_table_and_final_line(workspace: Path) -> None:
    result = _run(workspace, LINEAR)
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / "runs")
    lines = result.stdout.splitlines()
    assert lines[-1].startswith("pipeline succeeded in ")
    assert lines[-1].endswith(f"; run directory: {Path('runs') / run_dir.name}")
    header = next(line for line in lines if line.startswith("node "))
    assert header.split() == ["node", "status", "attempts", "duration", "note", "tokens"]
    rows = {line.split()[0]: line.split() for line in lines[lines.index(header) + 1 : -1]}
    assert rows["plan"][1:3] == ["success", "1"]
    assert rows["build"][1:3] == ["success", "1"]
    assert result.stderr == ""


def test_run_directory_holds_manifest_checkpoint_source_events_and_stage_files(
    workspace: Path,
) -> None:
    assert _run(workspace, LINEAR).exit_code == 0
    run_dir = only_run_dir(workspace / "runs")
    for name in ("manifest.json", "checkpoint.json", "pipeline.dot", "events.jsonl"):
        assert (run_dir / name).is_file(), name
    assert (run_dir / "pipeline.dot").read_text(encoding="utf-8") == LINEAR
    for node in ("plan", "build"):
        for name in ("prompt.md", "response.md", "status.json"):
            assert (run_dir / node / name).is_file(), f"{node}/{name}"
    assert (run_dir / "plan" / "prompt.md").read_text(encoding="utf-8") == "Plan: Say hello"


def test_default_run_directory_is_under_dot_attractor_runs(workspace: Path) -> None:
    write(workspace / "p.dot", LINEAR)
    result = invoke(["run", "p.dot"])
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / ".attractor" / "runs")
    assert run_dir.name.endswith("-linear")


def test_failed_pipeline_exits_1_with_the_reason(workspace: Path) -> None:
    result = _run(workspace, FAILING)
    assert result.exit_code == 1, result.output
    last = result.stdout.splitlines()[-1]
    assert last.startswith("pipeline failed: ")
    assert "run directory: runs" in last


def test_json_prints_every_event_as_one_json_line(workspace: Path) -> None:
    result = _run(workspace, LINEAR, "--json")
    assert result.exit_code == 0, result.output
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    assert printed[0]["type"] == "pipeline_started"
    assert printed[-1]["type"] == "pipeline_completed"
    assert all(isinstance(p["ts"], float) for p in printed)
    stages = [p["name"] for p in printed if p["type"] == "stage_completed"]
    assert "plan" in stages
    assert "build" in stages
    stored = events(only_run_dir(workspace / "runs"))
    assert [p["type"] for p in printed] == [e["type"] for e in stored]
    assert result.stderr.splitlines()[-1].startswith("pipeline succeeded")


def test_quiet_prints_only_the_final_line(workspace: Path) -> None:
    result = _run(workspace, LINEAR, "--quiet")
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()) == 1
    assert result.stdout.startswith("pipeline succeeded in ")
    assert result.stderr == ""


def test_quiet_failure_is_still_one_line(workspace: Path) -> None:
    result = _run(workspace, FAILING, "-q")
    assert result.exit_code == 1
    assert len(result.stdout.splitlines()) == 1
    assert result.stdout.startswith("pipeline failed: ")


def test_lint_errors_exit_2_printed_as_lint_prints_them_and_nothing_runs(
    workspace: Path,
) -> None:
    result = _run(workspace, NO_START)
    assert result.exit_code == 2
    linted = invoke(["lint", "p.dot"])
    assert "start_node" in linted.stdout
    assert result.stderr == linted.stdout
    assert result.stdout == ""
    assert run_dirs(workspace / "runs") == []


def test_syntax_error_exits_2_in_lint_format(workspace: Path) -> None:
    result = _run(workspace, "digraph x { a -> }\n")
    assert result.exit_code == 2
    assert result.stderr.startswith("p.dot:1:")
    assert " error syntax: " in result.stderr
    assert result.stderr == invoke(["lint", "p.dot"]).stdout
    assert not (workspace / "runs").exists()


def test_lint_warnings_are_printed_and_the_run_proceeds(workspace: Path) -> None:
    gated = LINEAR.replace('build [prompt="Build it"]', 'build [prompt="Build it", goal_gate=true]')
    result = _run(workspace, gated)
    assert result.exit_code == 0, result.output
    assert "warning goal_gate_has_retry" in result.stderr


def test_missing_file_is_a_usage_error(workspace: Path) -> None:
    result = invoke(["run", "nope.dot"])
    assert result.exit_code == 2
    assert result.stderr == "error: nope.dot: no such pipeline file; check the path\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "novalue"], '--set="novalue": expected KEY=VALUE'),
        (["--set", "=x"], '--set="=x": expected KEY=VALUE'),
        (["--auto-approve", "--answers", "a.txt"], "--auto-approve and --answers"),
        (["--json", "--quiet"], "--json and --quiet"),
        (["--answers", "missing.txt"], "--answers missing.txt: cannot read file"),
        (["--config", "missing.toml"], "config file missing.toml does not exist"),
    ],
)
def test_bad_options_exit_2_with_one_line(workspace: Path, args: list[str], message: str) -> None:
    write(workspace / "a.txt", "yes\n")
    result = _run(workspace, LINEAR, *args)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: {message}")
    assert len(result.stderr.splitlines()) == 1
    assert run_dirs(workspace / "runs") == []


@pytest.mark.parametrize(
    ("args", "env", "files", "message"),
    [
        (
            ["--max-turns", "0"],
            {},
            {},
            '--max-turns="0": must be an integer from 1 to 500',
        ),
        (
            ["--timeout", "soon"],
            {},
            {},
            '--timeout="soon": expected a duration like 90s, 5m or 1h30m',
        ),
        (
            [],
            {"ATTRACTOR_TIMEOUT": "soon"},
            {},
            'ATTRACTOR_TIMEOUT="soon": expected a duration like 90s, 5m or 1h30m',
        ),
        (
            [],
            {"ATTRACTOR_MAX_TURNS": "600"},
            {},
            'ATTRACTOR_MAX_TURNS="600": must be an integer from 1 to 500',
        ),
        (
            [],
            {},
            {"attractor.toml": 'timeout = "soon"\n'},
            'attractor.toml: timeout="soon": expected a duration like 90s, 5m or 1h30m',
        ),
        (
            [],
            {},
            {"pyproject.toml": '[tool.attractor]\nprofile = "turbo"\n'},
            'pyproject.toml [tool.attractor]: profile="turbo": expected one of',
        ),
        (
            ["--config", "ci.toml"],
            {},
            {"ci.toml": "max_total_turns = 0\n"},
            'ci.toml: max_total_turns="0": must be a positive integer',
        ),
        (
            ["--backend", "magic"],
            {},
            {},
            '--backend="magic": expected simulate, llm, scripted:FILE, claude-code, codex, '
            "gemini-cli",
        ),
    ],
)
def test_invalid_settings_exit_2_naming_their_source(
    workspace: Path,
    args: list[str],
    env: dict[str, str],
    files: dict[str, str],
    message: str,
) -> None:
    for name, text in files.items():
        write(workspace / name, text)
    result = _run(workspace, LINEAR, *args, env=env)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"error: {message}")
    assert len(result.stderr.splitlines()) == 1
    assert run_dirs(workspace / "runs") == []


def test_flag_beats_env_beats_config(workspace: Path) -> None:
    write(workspace / "attractor.toml", 'timeout = "soon"\n')
    # The env value is valid and wins over the bad config value...
    result = _run(workspace, LINEAR, "-q", env={"ATTRACTOR_TIMEOUT": "5m"})
    assert result.exit_code == 0, result.output
    # ...and a bad flag is reported even when env and config are fine.
    write(workspace / "attractor.toml", 'timeout = "5m"\n')
    result = _run(workspace, LINEAR, "--timeout", "0s", env={"ATTRACTOR_TIMEOUT": "5m"})
    assert result.exit_code == 2
    assert result.stderr.startswith('error: --timeout="0s"')


ROUTED = """\
digraph routed {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    pick  [shape=diamond]
    fast  [prompt="fast path"]
    slow  [prompt="slow path"]
    start -> pick
    pick -> fast [condition="context.mode=fast"]
    pick -> slow [condition="context.mode!=fast"]
    fast -> done
    slow -> done
}
"""


@pytest.mark.parametrize(
    ("mode", "taken", "skipped"), [("fast", "fast", "slow"), ("x", "slow", "fast")]
)
def test_set_seeds_the_context_that_conditions_read(
    workspace: Path, mode: str, taken: str, skipped: str
) -> None:
    result = _run(workspace, ROUTED, "--set", f"mode={mode}", "--set", "other=a=b")
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / "runs")
    assert (run_dir / taken / "status.json").is_file()
    assert not (run_dir / skipped).exists()
    context = read_json(run_dir / "checkpoint.json")["context"]
    assert context["mode"] == mode
    assert context["other"] == "a=b"


def test_missing_api_key_is_a_usage_error_before_the_run(workspace: Path) -> None:
    result = _run(workspace, LINEAR, "--provider", "openai", "--model", "gpt-4o-mini")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ")
    assert "OPENAI_API_KEY" in result.stderr
    assert run_dirs(workspace / "runs") == []


AGENT = """\
digraph agent {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    impl  [prompt="Keep working", max_turns=2]
    start -> impl -> done
}
"""


def test_turn_limit_prints_one_warning_naming_the_three_ways(workspace: Path) -> None:
    script = {
        "responses": [{"text": "busy", "tool_calls": [{"name": "list_dir", "arguments": {}}]}],
        "then": "repeat_last",
    }
    write(workspace / "model.json", json.dumps(script))
    result = _run(workspace, AGENT, "--backend", "scripted:model.json")
    assert result.exit_code == 1, result.output
    warnings = [line for line in result.stderr.splitlines() if "turn limit" in line]
    assert len(warnings) == 1
    for needle in ("impl", "max_turns", "--max-turns", "ATTRACTOR_MAX_TURNS"):
        assert needle in warnings[0]


def test_workdir_is_where_tool_steps_run(workspace: Path) -> None:
    (workspace / "sub").mkdir()
    text = """digraph w {
        start [shape=Mdiamond]
        done  [shape=Msquare]
        t [shape=parallelogram, tool_command="echo hi > out.txt"]
        start -> t -> done
    }"""
    result = _run(workspace, text, "--workdir", "sub", "-q")
    assert result.exit_code == 0, result.output
    assert (workspace / "sub" / "out.txt").read_text(encoding="utf-8") == "hi\n"
    assert not (workspace / "out.txt").exists()


def test_missing_workdir_is_a_usage_error_before_anything_is_written(workspace: Path) -> None:
    result = _run(workspace, LINEAR, "--workdir", "nowhere")
    assert result.exit_code == 2
    assert 'error: --workdir="nowhere": expected an existing directory' in result.stderr
    assert not (workspace / "runs").exists()


def test_kill_grace_and_shell_timeout_cap_flags_are_validated(workspace: Path) -> None:
    result = _run(workspace, LINEAR, "--kill-grace", "soon")
    assert result.exit_code == 2
    assert '--kill-grace="soon": expected a duration' in result.stderr
    ok = _run(workspace, LINEAR, "--shell-timeout-cap", "2m", "-q")
    assert ok.exit_code == 0, ok.output


CONTEXT_ONLY_EDGES = """\
digraph ctx {
    start    [shape=Mdiamond]
    exit     [shape=Msquare]
    validate [shape=parallelogram, tool_command="exit 1"]
    deploy   [shape=parallelogram, tool_command="echo deployed > deployed.txt"]
    start -> validate
    validate -> deploy [condition="context.env=prod"]
    validate -> exit   [condition="context.env!=prod"]
    deploy -> exit
}
"""


def test_a_failed_check_does_not_follow_an_edge_that_only_tests_the_context(
    workspace: Path,
) -> None:
    result = _run(workspace, CONTEXT_ONLY_EDGES, "--set", "env=prod")
    assert result.exit_code == 1, result.output
    assert not (workspace / "deployed.txt").exists()
    assert result.stdout.splitlines()[-1].startswith(
        "pipeline failed: validate failed: tool_command exited with code 1"
    )


def test_an_answers_file_that_is_not_utf8_is_a_usage_error_naming_it(workspace: Path) -> None:
    (workspace / "answers.bin").write_bytes(b"\xff\xfeY\n")
    result = _run(workspace, LINEAR, "--answers", "answers.bin")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --answers answers.bin: not a UTF-8 text file; "
        "write one answer (a key or a label) per line\n"
    )
    assert not (workspace / "runs").exists()


def test_logs_dir_is_the_run_directory_and_is_never_reused(workspace: Path) -> None:
    write(workspace / "p.dot", LINEAR)
    first = invoke(["run", "p.dot", "--logs-dir", "out/run1", "-q"])
    assert first.exit_code == 0, first.output
    assert (workspace / "out" / "run1" / "checkpoint.json").is_file()
    assert first.stdout.strip().endswith(f"run directory: {Path('out') / 'run1'}")
    again = invoke(["run", "p.dot", "--logs-dir", "out/run1", "-q"])
    assert again.exit_code == 2
    assert "already holds a run; resume it with: attractor resume out/run1" in again.stderr


def test_placeholders_give_every_run_a_fresh_directory(workspace: Path) -> None:
    write(workspace / "p.dot", LINEAR)
    env = {"ATTRACTOR_LOGS_DIR": "logs/{graph}-{timestamp}"}
    for _ in range(2):
        assert invoke(["run", "p.dot", "-q"], env=env).exit_code == 0
    made = run_dirs(workspace / "logs")
    assert len(made) == 2
    assert all(d.name.startswith("linear-") for d in made)


def test_default_run_directory(workspace: Path) -> None:
    write(workspace / "p.dot", LINEAR)
    assert invoke(["run", "p.dot", "-q"]).exit_code == 0
    [run_dir] = run_dirs(workspace / ".attractor" / "runs")
    assert run_dir.name.endswith("-linear") and (run_dir / "manifest.json").is_file()
