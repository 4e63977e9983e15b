"""``attractor logs RUN_DIR [NODE]``: step output and agent tool calls, every attempt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.cli.runkit import events, invoke, only_run_dir, write


def _run(workspace: Path, body: str, *extra: str) -> Path:
    dot = f"digraph p {{\n start [shape=Mdiamond]\n done [shape=Msquare]\n{body}\n}}\n"
    write(workspace / "p.dot", dot)
    result = invoke(["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}", *extra])
    assert result.exit_code in (0, 1), result.output + result.stderr
    return only_run_dir(workspace / "runs")


def _logs(*args: str) -> tuple[int, str, str]:
    result = invoke(["logs", *args])
    return result.exit_code, result.stdout, result.stderr


def test_a_tool_steps_output_with_colours_taken_out_off_a_terminal(workspace: Path) -> None:
    command = r"echo plain; printf '\033[31mred\033[0m\n'; echo oops >&2"
    run_dir = _run(
        workspace, f't [shape=parallelogram, tool_command="{command}"]\nstart -> t -> done'
    )
    code, out, err = _logs(str(run_dir))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "==> t (tool), visit 1, attempt 1",
        "plain",
        "red",
        "oops",
        out.splitlines()[4],
        "== pipeline succeeded",
    ]
    assert out.splitlines()[4].startswith("<== t: success in ")
    code, kept, _ = _logs(str(run_dir), "t", "--ansi")
    assert "\x1b[31mred\x1b[0m\n" in kept


def test_every_attempt_of_a_node_in_order(workspace: Path) -> None:
    command = "echo try; test -e flag || { touch flag; echo broke >&2; exit 1; }; echo fixed"
    body = f't [shape=parallelogram, max_retries=1, tool_command="{command}"]\nstart -> t -> done'
    run_dir = _run(workspace, body)
    code, out, _ = _logs(str(run_dir), "t")
    assert code == 0
    lines = out.splitlines()
    first, second = (
        lines.index("==> t (tool), visit 1, attempt 1"),
        lines.index("==> t (tool), visit 1, attempt 2"),
    )
    assert lines[first + 1 : first + 3] == ["try", "broke"]
    assert lines[first + 3].startswith("<== t: fail, will retry: ")
    assert lines[second + 1 : second + 3] == ["try", "fixed"]
    # The first attempt's files moved aside; its lines are still the first attempt's.
    assert (run_dir / "t" / "v1-a1" / "stderr.txt").read_text() == "broke\n"


def test_a_run_recorded_without_output_events_is_shown_from_its_files(workspace: Path) -> None:
    run_dir = _run(
        workspace, 't [shape=parallelogram, tool_command="echo from-the-file"]\nstart -> t -> done'
    )
    kept = [e for e in events(run_dir) if e["type"] != "stage_output"]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in kept))
    code, out, _ = _logs(str(run_dir), "t")
    assert code == 0
    assert out.splitlines()[:2] == ["==> t (tool), visit 1, attempt 1", "from-the-file"]


def test_a_flood_is_bounded_in_events_and_whole_in_logs(workspace: Path) -> None:
    run_dir = _run(
        workspace, 't [shape=parallelogram, tool_command="seq 1 300000"]\nstart -> t -> done'
    )
    chunks = [e for e in events(run_dir) if e["type"] == "stage_output"]
    assert all(len(e["text"]) <= 64 * 1024 + 200 for e in chunks)
    assert sum(len(e["text"]) for e in chunks) < (run_dir / "t" / "stdout.txt").stat().st_size
    assert any(e["skipped"] > 0 and "bytes not shown" in e["text"] for e in chunks)
    code, out, _ = _logs(str(run_dir), "t")
    assert code == 0
    shown = out.splitlines()[1:-2]
    assert shown == [str(i) for i in range(1, 300001)]


def _shell(command: str) -> dict[str, Any]:
    return {"text": "", "tool_calls": [{"name": "shell", "arguments": {"command": command}}]}


def test_an_agents_tool_calls_and_the_end_of_their_results(workspace: Path) -> None:
    replies = [_shell("seq 1 50"), _shell("echo done-here"), {"text": "all done"}]
    write(workspace / "model.json", json.dumps({"responses": replies, "then": "stop"}))
    run_dir = _run(
        workspace,
        'work [prompt="count"]\nstart -> work -> done',
        "--backend",
        "scripted:model.json",
    )
    code, out, _ = _logs(str(run_dir), "work")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "==> work (codergen), visit 1, attempt 1"
    at = lines.index("> shell: seq 1 50")
    assert lines[at + 1].startswith("  [... ") and "work/transcript.jsonl" in lines[at + 1]
    # The last 20 lines of the result: the shell tool ends it with its exit code.
    assert lines[at + 2 : at + 22] == [*(f"  {i}" for i in range(32, 51)), "  [exit code 0]"]
    assert "> shell: echo done-here" in lines
    assert "  done-here" in lines


def test_not_a_run_directory_or_no_such_node_is_one_line_and_exit_2(workspace: Path) -> None:
    code, out, err = _logs(str(workspace))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "not a run directory" in err
    run_dir = _run(workspace, 't [shape=parallelogram, tool_command="true"]\nstart -> t -> done')
    code, _, err = _logs(str(run_dir), "nope")
    assert code == 2
    assert err == (
        f"error: {run_dir}: the run's pipeline has no node 'nope'; its nodes: start, done, t\n"
    )
    code, _, err = _logs(str(run_dir), "tt")
    assert code == 2 and "has no node 'tt'; did you mean 't'? its nodes: " in err


def test_a_secret_a_step_prints_is_redacted_in_its_events_and_logs(workspace: Path) -> None:
    secret = "dt-0123456789abcdef"
    body = 't [shape=parallelogram, tool_command="echo token=$DEPLOY_TOKEN"]\nstart -> t -> done'
    write(
        workspace / "p.dot",
        f"digraph p {{\n start [shape=Mdiamond]\n done [shape=Msquare]\n{body}\n}}\n",
    )
    args = ["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}", "--env-allow", "DEPLOY_TOKEN"]
    result = invoke(args, env={"DEPLOY_TOKEN": secret})
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / "runs")
    [chunk] = [e for e in events(run_dir) if e["type"] == "stage_output"]
    assert chunk["text"] == "token=[redacted:DEPLOY_TOKEN]\n"
    assert secret not in (run_dir / "events.jsonl").read_text()
    code, out, _ = _logs(str(run_dir), "t")
    assert code == 0 and "token=[redacted:DEPLOY_TOKEN]" in out and secret not in out


def test_an_attempt_the_runs_stop_cut_short_ends_with_stopped(workspace: Path) -> None:
    write(
        workspace / "p.dot",
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; "
        'nap [shape=parallelogram, tool_command="echo dozing; sleep 30"]; start -> nap -> done }',
    )
    assert invoke(["run", "p.dot", "--logs-dir", "r", "--timeout", "2s"]).exit_code == 124
    run_dir = workspace / "r"
    code, out, _ = _logs(str(run_dir))
    assert code == 0
    lines = out.splitlines()
    assert lines[:3] == ["==> nap (tool), visit 1, attempt 1", "dozing", "<== nap: stopped"]
    assert lines[-1].startswith("== pipeline timed out")
