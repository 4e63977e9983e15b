"""Tool call hooks around the agent's tools: real hook commands, the scripted model."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import anyio
import pytest

from attractor.agent.hooks import ToolHooks
from attractor.agent.session import AgentSession, SessionConfig, SessionResult
from attractor.agent.tools import ToolContext, ToolResult, default_registry
from attractor.agent.transcript import Transcript
from attractor.dot.parser import parse_dot
from attractor.events import AgentWarning, ToolCallCompleted
from attractor.handlers.agent_backend import tool_hooks_for
from attractor.llm.scripted import ScriptedModel, ScriptedResponse
from attractor.llm.types import Message, ToolCall

from ._helpers import Recorder

#: Blocks write_file, saying why on stderr; lets every other tool through.
NO_WRITES = (
    'if grep -q \'"name": "write_file"\'; then '
    "echo 'writes are frozen for this node' >&2; exit 1; fi"
)


class Run:
    """One finished session and everything it left behind."""

    def __init__(
        self, tmp_path: Path, result: SessionResult, events: Recorder, model: ScriptedModel
    ) -> None:
        self.workdir = tmp_path / "work"
        self.stage = tmp_path / "stage"
        self.result = result
        self.events = events
        self.model = model

    def tool_answers(self) -> list[Message]:
        """What the model was told about its tool calls, from its last request."""
        return [m for m in self.model.requests[-1].messages if m.role == "tool"]

    def warnings(self) -> list[str]:
        return [e.message for e in self.events.of(AgentWarning)]


async def _run(tmp_path: Path, hooks: ToolHooks, *calls: tuple[str, dict[str, Any]]) -> Run:
    """A session whose model makes ``calls`` in one turn, then stops."""
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    stage = tmp_path / "stage"
    hooks = ToolHooks(
        pre=hooks.pre, post=hooks.post, timeout=hooks.timeout, node_id="work", stage_dir=stage
    )
    model = ScriptedModel([ScriptedResponse("working", calls), ScriptedResponse("done")])
    events = Recorder()
    session = AgentSession(
        model,
        SessionConfig(
            node_id="work",
            prompt="do the task",
            workdir=workdir,
            max_turns=5,
            report=False,
            tool_hooks=hooks,
        ),
        tools=default_registry(),
        transcript=Transcript(stage),
        emit=events,
    )
    return Run(tmp_path, await session.run(), events, model)


def _same_dir(path: str, expected: Path) -> bool:
    return Path(path).resolve() == expected.resolve()


def _read_fifo(path: Path) -> str:
    return path.read_text()


def _write(path: str = "a.txt", content: str = "hello") -> tuple[str, dict[str, Any]]:
    return ("write_file", {"path": path, "content": content})


# -- pre hook -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_failing_pre_hook_blocks_write_file_and_the_model_learns_why(
    tmp_path: Path,
) -> None:
    run = await _run(tmp_path, ToolHooks(pre=NO_WRITES), _write())

    assert not (run.workdir / "a.txt").exists()
    [answer] = run.tool_answers()
    assert answer.is_error
    assert "write_file was not run" in answer.content
    assert "tool_hooks.pre hook blocked" in answer.content
    assert "exit code 1" in answer.content
    assert "writes are frozen for this node" in answer.content
    [completed] = run.events.of(ToolCallCompleted)
    assert completed.is_error and "blocked" in completed.output
    [warning] = run.warnings()
    assert "tool_hooks.pre blocked write_file (exit code 1)" in warning
    assert "writes are frozen" in warning
    tools_log = (run.stage / "tools.log").read_text()
    assert "write_file" in tools_log and "hook blocked this call" in tools_log
    hooks_log = (run.stage / "hooks.log").read_text()
    assert "--- pre write_file: exit code 1, blocked the call" in hooks_log
    assert run.result.text == "done"


@pytest.mark.anyio
async def test_the_grep_one_liner_blocks_only_the_tool_it_names(tmp_path: Path) -> None:
    hooks = ToolHooks(pre="grep -q write_file && exit 1 || exit 0")
    run = await _run(tmp_path, hooks, _write(), ("list_dir", {"path": "."}))

    assert not (run.workdir / "a.txt").exists()
    blocked, listed = run.tool_answers()
    assert blocked.is_error and "(the hook printed nothing)" in blocked.content
    assert not listed.is_error and "blocked" not in listed.content


@pytest.mark.anyio
async def test_a_passing_pre_hook_lets_the_call_through(tmp_path: Path) -> None:
    run = await _run(tmp_path, ToolHooks(pre=NO_WRITES), ("shell", {"command": "echo hi"}))

    [answer] = run.tool_answers()
    assert not answer.is_error
    assert "hi" in answer.content and "[exit code 0]" in answer.content
    assert run.warnings() == []
    assert "--- pre shell: exit code 0, ok" in (run.stage / "hooks.log").read_text()


@pytest.mark.anyio
async def test_the_pre_hook_gets_the_call_on_stdin_and_in_its_environment(
    tmp_path: Path,
) -> None:
    seen = tmp_path / "seen"
    hook = (
        f"cat > {seen}.json; "
        f'printf "%s\\n" "$ATTRACTOR_HOOK_PHASE" "$ATTRACTOR_TOOL_NAME" "$ATTRACTOR_NODE_ID" '
        f'"$ATTRACTOR_STAGE_DIR" "$PWD" "$ATTRACTOR_TOOL_ARGS" > {seen}.env'
    )
    run = await _run(tmp_path, ToolHooks(pre=hook), _write("b.txt", "body"))

    assert (run.workdir / "b.txt").read_text() == "body"
    payload = json.loads((tmp_path / "seen.json").read_text())
    assert payload["phase"] == "pre"
    assert payload["name"] == "write_file"
    assert payload["arguments"] == {"path": "b.txt", "content": "body"}
    assert payload["node_id"] == "work" and payload["call_id"]
    phase, name, node, stage, cwd, args = (tmp_path / "seen.env").read_text().splitlines()
    assert (phase, name, node) == ("pre", "write_file", "work")
    assert Path(stage) == run.stage
    assert _same_dir(cwd, run.workdir)
    assert json.loads(args) == {"path": "b.txt", "content": "body"}


@pytest.mark.anyio
async def test_a_pre_hook_that_times_out_blocks_the_call(tmp_path: Path) -> None:
    run = await _run(tmp_path, ToolHooks(pre="sleep 30", timeout=0.3), _write())

    assert not (run.workdir / "a.txt").exists()
    [answer] = run.tool_answers()
    assert answer.is_error and "timed out after 0.3s" in answer.content
    [warning] = run.warnings()
    assert "timed out" in warning


# -- post hook ----------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_post_hook_receives_the_call_and_its_result(tmp_path: Path) -> None:
    out = tmp_path / "post.json"
    env = tmp_path / "post.env"
    hook = f'cat > {out}; echo "$ATTRACTOR_HOOK_PHASE $ATTRACTOR_TOOL_IS_ERROR" > {env}'
    run = await _run(tmp_path, ToolHooks(post=hook), _write("c.txt", "abc"))

    assert (run.workdir / "c.txt").read_text() == "abc"
    payload = json.loads(out.read_text())
    assert payload["phase"] == "post"
    assert payload["name"] == "write_file"
    assert payload["arguments"] == {"path": "c.txt", "content": "abc"}
    assert payload["is_error"] is False
    [answer] = run.tool_answers()
    assert payload["output"] == answer.content
    assert env.read_text().split() == ["post", "false"]


@pytest.mark.anyio
async def test_the_post_hook_sees_error_results_too(tmp_path: Path) -> None:
    out = tmp_path / "post.json"
    run = await _run(tmp_path, ToolHooks(post=f"cat > {out}"), ("read_file", {"path": "nope"}))

    payload = json.loads(out.read_text())
    assert payload["is_error"] is True
    [answer] = run.tool_answers()
    assert answer.is_error and payload["output"] == answer.content


@pytest.mark.anyio
async def test_a_failing_post_hook_is_recorded_but_changes_nothing(tmp_path: Path) -> None:
    hook = "echo audit store unreachable >&2; exit 3"
    run = await _run(tmp_path, ToolHooks(post=hook), _write())

    assert (run.workdir / "a.txt").read_text() == "hello"
    [answer] = run.tool_answers()
    assert not answer.is_error and "blocked" not in answer.content
    [warning] = run.warnings()
    assert "tool_hooks.post failed after write_file (exit code 3)" in warning
    assert "the tool result stands" in warning and "audit store unreachable" in warning
    assert "--- post write_file: exit code 3, failed" in (run.stage / "hooks.log").read_text()


@pytest.mark.anyio
async def test_no_post_hook_runs_for_a_blocked_call(tmp_path: Path) -> None:
    out = tmp_path / "post.json"
    run = await _run(tmp_path, ToolHooks(pre="exit 1", post=f"cat > {out}"), _write())

    assert not (run.workdir / "a.txt").exists()
    assert not out.exists()


@pytest.mark.anyio
async def test_without_hooks_nothing_runs_and_no_hooks_log(tmp_path: Path) -> None:
    run = await _run(tmp_path, ToolHooks(), _write())

    assert (run.workdir / "a.txt").read_text() == "hello"
    assert not (run.stage / "hooks.log").exists()


# -- cancellation ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_cancelling_a_running_hook_kills_it_and_propagates(tmp_path: Path) -> None:
    started = tmp_path / "hook.pid"
    os.mkfifo(started)  # the hook writes its pid here once it runs
    hooks = ToolHooks(pre=f"echo $$ > {started}; exec sleep 60", stage_dir=tmp_path)
    executed: list[ToolCall] = []

    async def execute(call: ToolCall, context: ToolContext) -> ToolResult:
        executed.append(call)
        return ToolResult("ran")

    call = ToolCall(id="c1", name="shell", arguments={"command": "true"})
    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:

            async def hook_then_tool() -> None:
                await hooks.run(call, ToolContext(tmp_path), execute, lambda _: None)

            tg.start_soon(hook_then_tool)
            pid = int(await anyio.to_thread.run_sync(_read_fifo, started, abandon_on_cancel=True))
            tg.cancel_scope.cancel()

    assert executed == []
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


# -- graph default and node override (the codergen adapter) ----------------------------


def test_nodes_inherit_the_graph_hooks_override_them_or_turn_them_off(tmp_path: Path) -> None:
    graph = parse_dot(
        """digraph G {
            graph [tool_hooks.pre="check-all", tool_hooks.post="audit"]
            inherits [prompt=p]
            own      [prompt=p, tool_hooks.pre="check-mine"]
            off      [prompt=p, tool_hooks.pre="", tool_hooks.post=" "]
        }"""
    )
    inherits = tool_hooks_for(graph.node("inherits"), tmp_path)
    own = tool_hooks_for(graph.node("own"), tmp_path)
    off = tool_hooks_for(graph.node("off"), tmp_path)

    assert (inherits.pre, inherits.post) == ("check-all", "audit")
    assert (own.pre, own.post) == ("check-mine", "audit")
    assert (off.pre, off.post) == ("", "")
    assert inherits.node_id == "inherits" and inherits.stage_dir == tmp_path


def test_no_hooks_anywhere_means_empty_hooks(tmp_path: Path) -> None:
    graph = parse_dot("digraph G { w [prompt=p] }")
    hooks = tool_hooks_for(graph.node("w"), tmp_path)
    assert (hooks.pre, hooks.post) == ("", "")
