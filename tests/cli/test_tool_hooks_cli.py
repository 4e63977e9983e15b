"""tool_hooks.pre / tool_hooks.post through the real CLI, with the scripted backend as the model."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from click.testing import Result

from tests.cli.runkit import events, finish, invoke, only_run_dir, spawn, write

#: A pre hook that reads the call from stdin and refuses the shell tool.
NO_SHELL = """\
if grep -q '"name": "shell"'; then
    echo "shell is not allowed in this pipeline" >&2
    exit 1
fi
"""


def _shell(marker: str) -> dict[str, Any]:
    """A model turn that runs ``touch MARKER`` in the shell."""
    call = {"name": "shell", "arguments": {"command": f"touch {marker}"}}
    return {"text": f"creating {marker}", "tool_calls": [call]}


def _run(workspace: Path, dot: str, responses: list[dict[str, Any]]) -> Result:
    write(workspace / "p.dot", dot)
    write(workspace / "model.json", json.dumps({"responses": responses, "then": "stop"}))
    args = ["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}"]
    return invoke([*args, "--backend", "scripted:model.json"])


def _tool_events(workspace: Path) -> list[dict[str, Any]]:
    run_dir = only_run_dir(workspace / "runs")
    return [e for e in events(run_dir) if e["type"] == "tool_call_completed"]


def test_a_graph_pre_hook_blocks_shell_end_to_end(workspace: Path) -> None:
    hook = write(workspace / "hooks" / "no_shell.sh", NO_SHELL)
    dot = f"""\
digraph hooks {{
    graph [tool_hooks.pre="sh {hook}"]
    start [shape=Mdiamond]
    done  [shape=Msquare]
    work  [prompt="Create the marker"]
    start -> work -> done
}}
"""
    result = _run(workspace, dot, [_shell("made.txt"), {"text": "gave up"}])

    assert result.exit_code == 0, result.output
    assert not (workspace / "made.txt").exists()
    [call] = _tool_events(workspace)
    assert call["tool"] == "shell" and call["is_error"]
    assert "shell was not run: the tool_hooks.pre hook blocked this call" in call["output"]
    assert "shell is not allowed in this pipeline" in call["output"]
    run_dir = only_run_dir(workspace / "runs")
    warnings = [e for e in events(run_dir) if e["type"] == "agent_warning"]
    assert [w["node"] for w in warnings] == ["work"]
    assert "tool_hooks.pre blocked shell (exit code 1)" in warnings[0]["message"]
    assert "tool_hooks.pre blocked shell" in result.output  # the live display shows it
    assert "hook blocked this call" in (run_dir / "work" / "tools.log").read_text()
    hooks_log = (run_dir / "work" / "hooks.log").read_text()
    assert "--- pre shell: exit code 1, blocked the call" in hooks_log


def test_nodes_inherit_override_or_turn_off_the_graph_hooks(workspace: Path) -> None:
    hook = write(workspace / "hooks" / "no_shell.sh", NO_SHELL)
    audit = workspace / "audit.jsonl"
    dot = f"""\
digraph hooks {{
    graph [tool_hooks.pre="sh {hook}", tool_hooks.post="cat >> {audit}; echo >> {audit}"]
    start    [shape=Mdiamond]
    done     [shape=Msquare]
    inherits [prompt="a"]
    off      [prompt="b", tool_hooks.pre=""]
    own      [prompt="c", tool_hooks.pre="test $ATTRACTOR_TOOL_NAME = shell"]
    start -> inherits -> off -> own -> done
}}
"""
    responses = [_shell("a.txt"), {"text": "a"}, _shell("b.txt"), {"text": "b"}]
    result = _run(workspace, dot, [*responses, _shell("c.txt"), {"text": "c"}])

    assert result.exit_code == 0, result.output
    assert not (workspace / "a.txt").exists()
    assert (workspace / "b.txt").exists()
    assert (workspace / "c.txt").exists()
    assert [e["is_error"] for e in _tool_events(workspace)] == [True, False, False]
    # The graph's post hook ran after the calls that ran, with their results.
    audited = [json.loads(line) for line in audit.read_text().splitlines() if line.strip()]
    assert [(a["node_id"], a["name"], a["is_error"]) for a in audited] == [
        ("off", "shell", False),
        ("own", "shell", False),
    ]
    assert all("[exit code 0]" in a["output"] for a in audited)


# -- lint ------------------------------------------------------------------------------


def _lint(workspace: Path, dot: str) -> tuple[int, list[dict[str, Any]]]:
    write(workspace / "p.dot", dot)
    result = invoke(["lint", "--format", "json", "p.dot"])
    found = [d for d in json.loads(result.stdout) if d["rule"] == "tool_hooks"]
    return result.exit_code, found


def test_lint_rejects_an_empty_graph_hook(workspace: Path) -> None:
    code, found = _lint(
        workspace,
        'digraph G { graph [tool_hooks.pre=""]; start [shape=Mdiamond]; done [shape=Msquare]\n'
        " w [prompt=p]; start -> w -> done }",
    )
    assert code == 1
    [error] = found
    assert error["severity"] == "error" and "must be a shell command" in error["message"]


def test_lint_warns_about_hooks_that_never_run(workspace: Path) -> None:
    code, found = _lint(
        workspace,
        "digraph G {\n"
        '  start [shape=Mdiamond, tool_hooks.pre="exit 1"]\n'
        "  done [shape=Msquare]\n"
        '  w [prompt=p, tool_hooks.post=""]\n'
        "  start -> w -> done\n}\n",
    )
    assert code == 0
    assert [(d["node"], d["severity"]) for d in found] == [("start", "warning"), ("w", "warning")]
    assert "never runs" in found[0]["message"]
    assert "turns off nothing" in found[1]["message"]


def test_lint_accepts_hooks_on_llm_nodes_and_node_defaults_that_reach_them(
    workspace: Path,
) -> None:
    code, found = _lint(
        workspace,
        "digraph G {\n"
        '  graph [tool_hooks.post="audit"]\n'
        "  start [shape=Mdiamond]\n"
        '  node [tool_hooks.pre="check"]\n'
        '  w [prompt=p, tool_hooks.post=""]\n'
        "  done [shape=Msquare]\n"
        "  start -> w -> done\n}\n",
    )
    assert code == 0 and found == []


def test_a_hooks_output_streams_to_events_and_logs_while_it_runs(workspace: Path) -> None:
    """The pre hook prints a line, then waits until the test saw that line as an
    event of the running step; the post hook writes to stderr."""
    flag = workspace / "go"
    pre = f"echo checking $ATTRACTOR_TOOL_NAME; while [ ! -f {flag} ]; do sleep 0.05; done"
    dot = f"""\
digraph hooks {{
    start [shape=Mdiamond]
    done  [shape=Msquare]
    work  [prompt="Create the marker", tool_hooks.pre="{pre}",
           tool_hooks.post="echo audited >&2"]
    start -> work -> done
}}
"""
    write(workspace / "p.dot", dot)
    script = {"responses": [_shell("made.txt"), {"text": "done"}], "then": "stop"}
    write(workspace / "model.json", json.dumps(script))
    args = ["run", "p.dot", "--logs-dir", "logs", "--backend", "scripted:model.json"]
    proc = spawn(args, workspace)
    try:
        line = _wait_for_output(workspace / "logs", "hook_stdout")
    finally:
        flag.touch()
        code, _, err = finish(proc)
    assert code == 0, err
    assert (line["node"], line["visit"], line["attempt"]) == ("work", 1, 1)
    assert line["text"] == "checking shell\n"
    assert (workspace / "made.txt").exists()
    kinds = [
        (e["type"], e.get("stream"))
        for e in events(workspace / "logs")
        if e["type"] in ("tool_call_started", "stage_output", "tool_call_completed")
    ]
    assert kinds == [
        ("tool_call_started", None),
        ("stage_output", "hook_stdout"),
        ("stage_output", "hook_stderr"),
        ("tool_call_completed", None),
    ]
    logs = invoke(["logs", "logs", "work"]).stdout.splitlines()
    start = logs.index("> shell: touch made.txt")
    assert logs[start + 1 : start + 3] == ["  hook| checking shell", "  hook| audited"]


def _wait_for_output(run_dir: Path, stream: str) -> dict[str, Any]:
    """The first ``stage_output`` event of ``stream`` in the running run's events."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        path = run_dir / "events.jsonl"
        if path.exists():
            for text in path.read_text().splitlines(keepends=True):
                if not text.endswith("\n"):
                    break  # a line still being written
                event = json.loads(text)
                if event.get("type") == "stage_output" and event.get("stream") == stream:
                    return event
        time.sleep(0.05)  # the run has not got there yet
    raise AssertionError(f"no {stream} event within 60s")
