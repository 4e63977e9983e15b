"""Long and parallel sessions: concurrent read-only calls, steering, subagents, compaction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from attractor.agent.hooks import ToolHooks
from attractor.agent.session import AgentSession, SessionConfig
from attractor.agent.tools import Tool, ToolContext, ToolRegistry, default_registry
from attractor.agent.tools.base import schema
from attractor.agent.transcript import Transcript
from attractor.events import AgentWarning
from attractor.llm.scripted import ScriptedModel, ScriptedResponse
from attractor.llm.types import ModelRequest, ModelResponse, ToolDefinition

from ._helpers import Recorder, read_jsonl

WAIT = 10.0  # seconds a probe waits for its partner before the test fails


def _session(
    tmp_path: Path,
    model: ScriptedModel,
    *,
    tools: ToolRegistry | None = None,
    max_turns: int = 8,
    **config: Any,
) -> tuple[AgentSession, Recorder]:
    workdir = tmp_path / "work"
    workdir.mkdir(exist_ok=True)
    events = Recorder()
    session = AgentSession(
        model,
        SessionConfig(
            node_id="work", prompt="do the task", workdir=workdir, max_turns=max_turns, **config
        ),
        tools=tools or default_registry(),
        transcript=Transcript(tmp_path / "stage"),
        emit=events,
    )
    return session, events


def _lines(tmp_path: Path, *under: str) -> list[dict[str, Any]]:
    return read_jsonl(tmp_path.joinpath("stage", *under, "transcript.jsonl"))


# -- concurrency ----------------------------------------------------------------------


class Probes:
    """Tools that log when they start and end; a reader waits until ``expect`` readers run."""

    def __init__(self, expect: int) -> None:
        self.log: list[tuple[str, str]] = []
        self.expect = expect
        self.running = 0
        self.together = anyio.Event()

    def reader(self, name: str) -> Tool:
        async def run(ctx: ToolContext, args: dict[str, Any]) -> str:
            self.log.append(("start", name))
            self.running += 1
            if self.running >= self.expect:
                self.together.set()
            with anyio.fail_after(WAIT):  # one at a time would wait here for ever
                await self.together.wait()
            self.running -= 1
            self.log.append(("end", name))
            return f"{name} read"

        return Tool(ToolDefinition(name, "probe", schema({})), run, read_only=True)

    def writer(self, name: str) -> Tool:
        async def run(ctx: ToolContext, args: dict[str, Any]) -> str:
            self.log.append(("start", name))
            await anyio.lowlevel.checkpoint()
            self.log.append(("end", name))
            return f"{name} wrote"

        return Tool(ToolDefinition(name, "probe", schema({})), run)


def _calls(*names: str) -> ScriptedResponse:
    return ScriptedResponse("", tuple((name, {}) for name in names))


@pytest.mark.anyio
async def test_read_only_calls_of_one_reply_overlap_and_writes_stay_ordered(
    tmp_path: Path,
) -> None:
    probes = Probes(expect=2)
    tools = ToolRegistry(
        [probes.reader("read_a"), probes.reader("read_b"), probes.writer("write_w")]
    )
    model = ScriptedModel([_calls("read_a", "read_b", "write_w"), ScriptedResponse("done")])
    session, _ = _session(tmp_path, model, tools=tools)
    result = await session.run()
    assert result.text == "done"
    # Both readers started before either ended: they ran at the same time.
    assert probes.log[:2] == [("start", "read_a"), ("start", "read_b")]
    assert set(probes.log[2:4]) == {("end", "read_a"), ("end", "read_b")}
    # The write waited for both and ran alone.
    assert probes.log[4:] == [("start", "write_w"), ("end", "write_w")]
    # Results go back in the order the model asked for them.
    answers = [m for m in model.requests[1].messages if m.role == "tool"]
    assert [m.content for m in answers] == ["read_a read", "read_b read", "write_w wrote"]
    assert not any(m.is_error for m in answers)


@pytest.mark.anyio
async def test_with_tool_hooks_calls_run_one_at_a_time(tmp_path: Path) -> None:
    probes = Probes(expect=1)
    tools = ToolRegistry([probes.reader("read_a"), probes.reader("read_b")])
    model = ScriptedModel([_calls("read_a", "read_b"), ScriptedResponse("done")])
    hooks = ToolHooks(post="true", stage_dir=tmp_path / "stage")
    session, _ = _session(tmp_path, model, tools=tools, tool_hooks=hooks)
    await session.run()
    assert probes.log == [
        ("start", "read_a"),
        ("end", "read_a"),
        ("start", "read_b"),
        ("end", "read_b"),
    ]


# -- steering -------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_steering_message_goes_out_with_the_next_request(tmp_path: Path) -> None:
    holder: list[AgentSession] = []

    async def interrupt(ctx: ToolContext, args: dict[str, Any]) -> str:
        holder[0].steer("Stop: work on b.txt instead.")  # a host, mid tool round
        return "looked"

    tools = default_registry().with_tools(
        Tool(ToolDefinition("look", "look around", schema({})), interrupt)
    )
    model = ScriptedModel([_calls("look"), ScriptedResponse("switching to b.txt")])
    session, _ = _session(tmp_path, model, tools=tools)
    holder.append(session)
    session.steer("Also keep the tests green.")  # before the first request
    await session.run()
    first, second = model.requests
    assert first.messages[-1].role == "user"
    assert "Also keep the tests green." in first.messages[-1].content
    assert second.messages[-1].role == "user"
    assert second.messages[-1].content == "Stop: work on b.txt instead."
    assert second.messages[-2].role == "tool"  # after the tool results
    lines = _lines(tmp_path)
    assert lines[0]["steering"] == ["Also keep the tests green."]
    assert lines[1]["steering"] == ["Stop: work on b.txt instead."]
    assert len(session.steering) == 0


def test_an_empty_steering_message_is_refused(tmp_path: Path) -> None:
    session, _ = _session(tmp_path, ScriptedModel([]))
    with pytest.raises(ValueError, match="must not be empty"):
        session.steer("  ")


# -- subagents ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_subagent_turns_are_charged_to_the_parent(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse(
                "", (("spawn_agent", {"task": "list sub", "working_dir": "sub", "max_turns": 3}),)
            ),
            ScriptedResponse("child looks", (("list_dir", {}),)),
            ScriptedResponse("child done: one file"),
            ScriptedResponse("all done"),
        ]
    )
    session, events = _session(tmp_path, model, max_turns=6, subagent_depth=1)
    (tmp_path / "work" / "sub").mkdir()
    (tmp_path / "work" / "sub" / "f.txt").write_text("x")
    result = await session.run()
    assert result.text == "all done"
    assert session.turns_used == 2 and session.subagent_turns == 2
    assert result.turns_used == 4  # the parent's two and the child's two
    answer = [m for m in model.requests[3].messages if m.role == "tool"][-1].content
    assert "subagent agent-1 in sub finished after 2 of 3 turn(s)" in answer
    assert answer.endswith("child done: one file")
    # The child worked in sub/, without spawn_agent of its own, with its own transcript.
    child_tools = [m for m in model.requests[2].messages if m.role == "tool"]
    assert child_tools[0].content == "f.txt"
    child = _lines(tmp_path, "subagents", "agent-1")
    assert [line["turn"] for line in child] == [1, 2]
    assert "spawn_agent" not in child[0]["tools_offered"]
    assert "spawn_agent" in _lines(tmp_path)[0]["tools_offered"]


@pytest.mark.anyio
async def test_a_subagent_cannot_spend_the_parents_last_turn(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse("", (("spawn_agent", {"task": "explore"}),)),
            ScriptedResponse("child wants more", (("list_dir", {}),)),
            ScriptedResponse("parent summary"),
        ]
    )
    session, _ = _session(tmp_path, model, max_turns=3, subagent_depth=1)
    result = await session.run()
    # 3 turns: the parent's first, the child's only one (its final), the parent's final.
    assert len(model.requests) == 3 and result.turns_used == 3
    assert result.turn_limit_reached
    assert [line["kind"] for line in _lines(tmp_path)] == ["work", "final"]
    assert [line["kind"] for line in _lines(tmp_path, "subagents", "agent-1")] == ["final"]


@pytest.mark.anyio
async def test_spawn_agent_refused_when_no_turns_are_left(tmp_path: Path) -> None:
    model = ScriptedModel(
        [ScriptedResponse("", (("spawn_agent", {"task": "explore"}),)), ScriptedResponse("ok")]
    )
    session, _ = _session(tmp_path, model, max_turns=2, subagent_depth=1)
    await session.run()
    [answer] = [m for m in model.requests[1].messages if m.role == "tool"]
    assert answer.is_error and "no turns are left for a subagent" in answer.content


@pytest.mark.anyio
async def test_spawn_agent_working_dir_must_stay_inside(tmp_path: Path) -> None:
    model = ScriptedModel(
        [
            ScriptedResponse("", (("spawn_agent", {"task": "x", "working_dir": "../.."}),)),
            ScriptedResponse("ok"),
        ]
    )
    session, _ = _session(tmp_path, model, max_turns=5, subagent_depth=1)
    await session.run()
    [answer] = [m for m in model.requests[1].messages if m.role == "tool"]
    assert answer.is_error and "outside" in answer.content
    assert session.subagent_turns == 0


# -- compaction -----------------------------------------------------------------------


@pytest.mark.anyio
async def test_old_tool_outputs_are_compacted_near_the_context_window(tmp_path: Path) -> None:
    read = ScriptedResponse("reading", (("read_file", {"path": "big.txt"}),))
    model = ScriptedModel([read, read, read, read, ScriptedResponse("done")])
    session, events = _session(tmp_path, model, max_turns=10, context_window=2000)
    (tmp_path / "work" / "big.txt").write_text("".join(f"line {n} of text\n" for n in range(200)))
    await session.run()
    lines = _lines(tmp_path)
    compacted = [line for line in lines if "compacted" in line]
    assert compacted, "no compaction recorded"
    record = compacted[0]["compacted"]
    assert record["context_window"] == 2000
    assert record["estimated_tokens_before"] > 0.8 * 2000
    assert record["estimated_tokens_after"] < record["estimated_tokens_before"]
    assert record["dropped"] and all(d["tool"] == "read_file" for d in record["dropped"])
    # What the model saw: old outputs replaced by a note, the latest kept in full.
    turn = compacted[0]["turn"]
    outputs = [m.content for m in model.requests[turn - 1].messages if m.role == "tool"]
    assert outputs[0].startswith("[tool output compacted to save context")
    assert "line 199 of text" in outputs[-1]
    warnings = [e.message for e in events.of(AgentWarning)]
    assert any("were compacted" in w for w in warnings)


@pytest.mark.anyio
async def test_no_compaction_without_a_window(tmp_path: Path) -> None:
    read = ScriptedResponse("reading", (("read_file", {"path": "big.txt"}),))
    model = ScriptedModel([read, read, read, ScriptedResponse("done")])
    session, _ = _session(tmp_path, model)
    (tmp_path / "work" / "big.txt").write_text("x" * 20_000)
    await session.run()
    assert not any("compacted" in line for line in _lines(tmp_path))


class SteeredWhileAnswering(ScriptedModel):
    """A scripted model whose host steers the session while request ``at`` is answered."""

    def __init__(self, responses: list[ScriptedResponse], at: int, message: str) -> None:
        super().__init__(responses)
        self.session: AgentSession | None = None
        self.at = at
        self.message = message

    async def request(self, request: ModelRequest) -> ModelResponse:
        if len(self.requests) + 1 == self.at and self.session is not None:
            self.session.steer(self.message)
        return await super().request(request)


@pytest.mark.anyio
async def test_steering_during_the_last_answer_gets_one_more_turn(tmp_path: Path) -> None:
    model = SteeredWhileAnswering(
        [ScriptedResponse("all done"), ScriptedResponse("done, with the docs too")],
        at=1,
        message="Please also update the docs.",
    )
    session, _ = _session(tmp_path, model)
    model.session = session
    result = await session.run()
    assert result.text == "done, with the docs too" and result.turns_used == 2
    second = model.requests[1].messages
    assert second[-2].role == "assistant" and second[-2].content == "all done"
    assert second[-1].content == "Please also update the docs."
