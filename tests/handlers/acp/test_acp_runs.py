"""A real ACP agent process on a node, driven through ``attractor run``: streamed
messages, permission requests, files and terminals through attractor, usage and
cost in the run's budget, and turns counted against ``max_turns``."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.runkit import events, invoke, read_json, write
from tests.handlers.acp.acpkit import configure, graph, seen

WORK = [
    {"do": "say", "text": "Reading "},
    {"do": "say", "text": "the notes."},
    {"do": "read", "path": "notes.txt"},
    {"do": "write", "path": "out/result.txt", "content": "done by the agent\n", "ask": True},
    {"do": "run", "command": "sh", "args": ["-c", "echo from-terminal; echo oops >&2"]},
    {"do": "cost", "usd": 0.25},
    {"do": "say", "text": "All done."},
    {"do": "end", "tokens": [120, 30]},
]


def _run(workspace: Path, *args: str) -> tuple[int, str]:
    result = invoke(["run", "p.dot", "--logs-dir", "logs", "--sandbox", "none", *args], {})
    return result.exit_code, result.output + result.stderr


def test_a_session_streams_asks_and_works_through_attractor(workspace: Path) -> None:
    write(workspace / "notes.txt", "the notes say hello\n")
    log = configure(workspace, [WORK])
    write(workspace / "p.dot", graph(acp_permissions="allow_all"))
    code, output = _run(workspace)
    assert code == 0, output
    assert "simulated run" not in output

    assert seen(log, "cwd")[0]["cwd"] == str(workspace)
    assert seen(log, "prompt")[0]["prompt"].endswith("Fix the bug.")
    assert seen(log, "read")[0]["content"] == "the notes say hello\n"
    assert (workspace / "out" / "result.txt").read_text() == "done by the agent\n"
    ran = seen(log, "ran")[0]
    assert ran["exit_code"] == 0
    assert ran["output"] == "from-terminal\noops\n"
    assert [e["allowed"] for e in seen(log, "permission")] == [True]

    stage = workspace / "logs" / "work"
    assert (stage / "response.md").read_text() == "All done."
    status = read_json(stage / "status.json")
    assert status["outcome"] == "success"
    usage = status["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (120, 30)
    assert usage["cost"] == 0.25
    kinds = [e["type"] for e in events(workspace / "logs")]
    assert "agent_turn_started" in kinds and "tool_call_completed" in kinds
    started = [e for e in events(workspace / "logs") if e["type"] == "tool_call_started"]
    assert [e["summary"] for e in started] == ["notes.txt", "out/result.txt", "sh"]
    transcript = [json.loads(x) for x in (stage / "transcript.jsonl").read_text().splitlines()]
    assert transcript[0]["text"] == "Reading the notes."
    tools_log = (stage / "tools.log").read_text()
    assert "permission" in tools_log and "from-terminal" in tools_log


def test_the_default_policy_refuses_commands_and_the_agent_hears_why(workspace: Path) -> None:
    turns = [
        [
            {"do": "write", "path": "a.txt", "content": "x", "ask": True},
            {"do": "run", "command": "touch", "args": ["ran.txt"], "ask": True},
            {"do": "run", "command": "touch", "args": ["ran.txt"]},
            {"do": "say", "text": "could not run it"},
            {"do": "end"},
        ]
    ]
    log = configure(workspace, turns)
    write(workspace / "p.dot", graph())
    code, output = _run(workspace)
    assert code == 0, output
    assert [e["allowed"] for e in seen(log, "permission")] == [True, False]
    assert (workspace / "a.txt").read_text() == "x"
    assert not (workspace / "ran.txt").exists()
    error = seen(log, "error")[0]
    assert "acp_permissions=allow_edits does not allow running commands" in error["data"]["reason"]
    warnings = [e for e in events(workspace / "logs") if e["type"] == "agent_warning"]
    assert any("refused execute" in w["message"] for w in warnings)


def test_terminal_output_keeps_its_latest_bytes_within_the_limit(workspace: Path) -> None:
    run = {"do": "run", "command": "seq", "args": ["1", "5000"], "limit": 10, "cwd": "sub"}
    (workspace / "sub").mkdir()
    log = configure(workspace, [[run, {"do": "end"}]])
    write(workspace / "p.dot", graph(acp_permissions="allow_all"))
    code, output = _run(workspace)
    assert code == 0, output
    ran = seen(log, "ran")[0]
    assert (ran["output"], ran["truncated"], ran["exit_code"]) == ("4999\n5000\n", True, 0)


def test_reads_outside_the_workspace_are_refused(workspace: Path) -> None:
    secret = write(workspace.parent / "secret.txt", "top secret\n")
    log = configure(workspace, [[{"do": "read", "path": str(secret)}, {"do": "end"}]])
    write(workspace / "p.dot", graph(acp_permissions="deny"))
    code, output = _run(workspace)
    assert code == 0, output
    assert not seen(log, "content")
    assert "resolves outside the working directory" in seen(log, "error")[0]["data"]["reason"]


def test_turns_past_max_turns_stop_the_agent(workspace: Path) -> None:
    turn = [{"do": "read", "path": "notes.txt"}]
    write(workspace / "notes.txt", "n\n")
    log = configure(workspace, [[*turn * 5, {"do": "say", "text": "never"}, {"do": "end"}]])
    write(workspace / "p.dot", graph(max_turns="2"))
    code, output = _run(workspace)
    status = read_json(workspace / "logs" / "work" / "status.json")
    assert status["turns_used"] == 2
    assert status["turn_limit_reached"] is True
    assert seen(log, "cancel"), "the agent was not told to stop"
    assert len(seen(log, "content")) == 2  # a third read is refused once stopped
    assert "never" not in (workspace / "logs" / "work" / "response.md").read_text()
    del code, output


def test_ask_puts_the_agents_commands_to_a_person(workspace: Path) -> None:
    turns = [
        [
            {"do": "write", "path": "a.txt", "content": "x", "ask": True},  # edits: no question
            {"do": "run", "command": "touch", "args": ["yes.txt"], "ask": True},  # asked: yes
            {"do": "run", "command": "touch", "args": ["no.txt"], "ask": True},  # asked: no
            {"do": "run", "command": "touch", "args": ["unasked.txt"]},  # its command: yes
            {"do": "end"},
        ]
    ]
    log = configure(workspace, turns)
    write(workspace / "answers.txt", "yes\nno\nyes\n")
    write(workspace / "p.dot", graph(acp_permissions="ask"))
    code, output = _run(workspace, "--answers", "answers.txt")
    assert code == 0, output
    assert [e["allowed"] for e in seen(log, "permission")] == [True, True, False]
    assert (workspace / "yes.txt").exists() and (workspace / "unasked.txt").exists()
    assert not (workspace / "no.txt").exists()
    asked = [e for e in events(workspace / "logs") if e["type"] == "interview_started"]
    questions = [e["question"] for e in asked]
    assert questions == [
        "The agent asks for a tool call of kind execute: run touch. Allow it?",
        "The agent asks for a tool call of kind execute: run touch. Allow it?",
        "The agent asks to run the command `touch unasked.txt`. Allow it?",
    ]


def test_a_command_allowed_by_a_person_does_not_let_another_run_unasked(
    workspace: Path,
) -> None:
    sneaky = {"command": "touch", "args": ["sneaky.txt"]}
    turns = [
        [
            {"do": "run", "command": "touch", "args": ["asked.txt"], "ask": True},  # yes
            # Allowed as `touch approved.txt`, then a terminal of another command: asked (no).
            {"do": "run", "command": "touch", "args": ["approved.txt"], "ask": True,
             "instead": sneaky},
            # The same, through sh -c with exactly the approved line: no second question.
            {"do": "run", "command": "touch shell.txt", "ask": True,
             "instead": {"command": "sh", "args": ["-c", "touch shell.txt"]}},
            {"do": "end"},
        ]
    ]  # fmt: skip
    log = configure(workspace, turns)
    write(workspace / "answers.txt", "yes\nyes\nno\nyes\n")
    write(workspace / "p.dot", graph(acp_permissions="ask"))
    code, output = _run(workspace, "--answers", "answers.txt")
    assert code == 0, output
    assert (workspace / "asked.txt").exists() and (workspace / "shell.txt").exists()
    assert not (workspace / "sneaky.txt").exists()
    questions = [
        e["question"] for e in events(workspace / "logs") if e["type"] == "interview_started"
    ]
    assert questions == [
        "The agent asks for a tool call of kind execute: run touch. Allow it?",
        "The agent asks for a tool call of kind execute: run touch. Allow it?",
        "The agent asks to run the command `touch sneaky.txt`. Allow it?",
        "The agent asks for a tool call of kind execute: run touch shell.txt. Allow it?",
    ]
    assert "the person said no" in seen(log, "error")[0]["data"]["reason"]


def test_the_agents_stderr_and_its_terminals_output_are_capped_on_disk(workspace: Path) -> None:
    from attractor.proc.capped import LOG_LIMIT

    flood = "head -c 20000000 /dev/zero | tr '\\0' x; echo; echo the end"
    turns = [
        [
            {"do": "spew", "megabytes": 20},
            {"do": "run", "command": "sh", "args": ["-c", flood], "limit": 100},
            {"do": "say", "text": "done"},
            {"do": "end"},
        ]
    ]
    log = configure(workspace, turns)
    write(workspace / "p.dot", graph(acp_permissions="allow_all"))
    code, output = _run(workspace)
    assert code == 0, output
    stage = workspace / "logs" / "work"
    for path in (stage / "agent_stderr.txt", stage / "acp_terminals" / "term-1.log"):
        size = path.stat().st_size
        assert LOG_LIMIT < size < LOG_LIMIT + 200, (path, size)
        with path.open("rb") as fh:
            fh.seek(-150, 2)
            end = fh.read().decode()
        assert f"[attractor: this log was cut at {LOG_LIMIT} bytes; " in end
        assert end.endswith(" more bytes were left out]\n")
    # The agent still got the end of its command's output, and its exit status.
    (ran,) = seen(log, "ran")
    assert ran["exit_code"] == 0 and ran["truncated"] is True
