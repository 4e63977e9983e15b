"""Prompt caching on the Anthropic adapter: breakpoints on the stable prefix, cache usage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

from attractor.agent.session import AgentSession, SessionConfig
from attractor.agent.tools import default_registry
from attractor.agent.transcript import Transcript
from attractor.llm.anthropic_model import AnthropicModel
from attractor.llm.pricing import PricedModel, PriceTable
from attractor.llm.retry import RetryPolicy
from attractor.llm.types import ModelRequest
from tests.agent._helpers import Recorder
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.sdk_types import assert_conforms
from tests.llm.wire import READ_FILE, anthropic_message, ask_once, conversation

pytestmark = pytest.mark.anyio

TURNS = 20
MARK = {"type": "ephemeral"}


def make_model(url: str, retry: RetryPolicy, **options: Any) -> AnthropicModel:
    model = options.pop("model", "claude-haiku-4-5")
    return AnthropicModel(model, api_key="ak-test", base_url=url, retry=retry, **options)


def marks(body: dict[str, Any]) -> list[str]:
    """Where the request's cache breakpoints are: tools, system, or message index."""
    found = [f"tool {t['name']}" for t in body.get("tools", []) if "cache_control" in t]
    found += ["system" for block in body.get("system", []) if "cache_control" in block]
    for index, turn in enumerate(body["messages"]):
        found += [f"message {index}" for b in turn["content"] if "cache_control" in b]
    return found


def unmarked(value: Any) -> Any:
    """``value`` without its cache_control marks: the prefix the cache compares."""
    if isinstance(value, dict):
        return {k: unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


def cached_reply(index: int) -> dict[str, Any]:
    """A reply reporting that everything before this turn came from the cache."""
    content: list[dict[str, Any]] = [
        {
            "type": "tool_use",
            "id": f"toolu_{index}",
            "name": "list_dir",
            "input": {"path": f"d{index}"},
        }
    ]
    stop = "tool_use"
    if index == TURNS:
        content, stop = [{"type": "text", "text": "all directories listed"}], "end_turn"
    body = anthropic_message(content, stop_reason=stop, usage=(50, 10))
    body["usage"]["cache_read_input_tokens"] = 0 if index == 1 else 1000 + 100 * index
    body["usage"]["cache_creation_input_tokens"] = 1000 if index == 1 else 100
    return body


async def test_breakpoints_sit_on_tools_system_and_the_latest_user_turns(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    await ask_once(make_model(server.url, fast_retry), ModelRequest(conversation(), (READ_FILE,)))
    body = server.received[0].body
    assert_conforms(MessageCreateParamsNonStreaming, body)
    # Turns: user, assistant (calls), user (results + text). Both user turns marked.
    assert marks(body) == ["tool read_file", "system", "message 0", "message 2"]
    assert body["system"][0]["cache_control"] == MARK


async def test_cache_can_be_switched_off(server: FakeServer, fast_retry: RetryPolicy) -> None:
    server.add(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    model = make_model(server.url, fast_retry, prompt_cache=False)
    await ask_once(model, ModelRequest(conversation(), (READ_FILE,)))
    assert marks(server.received[0].body) == []


async def test_cache_reads_and_writes_are_reported(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    body = anthropic_message([{"type": "text", "text": "ok"}], usage=(10, 5))
    body["usage"].update(cache_read_input_tokens=2000, cache_creation_input_tokens=300)
    server.add(Reply(body=body))
    model = PricedModel(make_model(server.url, fast_retry), PriceTable())
    response = await ask_once(model)
    assert response.usage is not None
    usage = response.usage.to_json()
    assert usage["input_tokens"] == 2310
    assert (usage["cache_read_tokens"], usage["cache_write_tokens"]) == (2000, 300)
    # claude-haiku-4-5: $1 fresh, $0.10 cache read, $1.25 cache write, $5 output per M.
    expected = (10 * 1 + 2000 * 0.1 + 300 * 1.25 + 5 * 5) / 1e6
    assert usage["cost"] == pytest.approx(expected)


async def test_twenty_turn_session_keeps_a_stable_marked_prefix(
    server: FakeServer, fast_retry: RetryPolicy, tmp_path: Path
) -> None:
    server.add(*(Reply(body=cached_reply(i)) for i in range(1, TURNS + 1)))
    model = make_model(server.url, fast_retry)
    session = AgentSession(
        model,
        SessionConfig(node_id="n", prompt="list them all", workdir=tmp_path, max_turns=30),
        tools=default_registry(),
        transcript=Transcript(tmp_path / "stage"),
        emit=Recorder(),
    )
    try:
        result = await session.run()
    finally:
        await model.aclose()
    assert result.text == "all directories listed" and result.turns_used == TURNS
    bodies = server.bodies
    assert len(bodies) == TURNS
    for turn, body in enumerate(bodies, start=1):
        assert_conforms(MessageCreateParamsNonStreaming, body)
        found = marks(body)
        assert len(found) <= 4, f"turn {turn}: {found}"  # the API allows four
        last = f"message {len(body['messages']) - 1}"
        assert found[:2] == [f"tool {body['tools'][-1]['name']}", "system"] and found[-1] == last
    for before, after in zip(bodies, bodies[1:], strict=False):
        # Each request starts with the whole previous one: the cached prefix holds.
        assert unmarked(after["messages"][: len(before["messages"])]) == unmarked(
            before["messages"]
        )
        # The previous request's last breakpoint is marked again, so it is read back.
        assert f"message {len(before['messages']) - 1}" in marks(after)
    assert result.usage.cache_read_tokens == sum(1000 + 100 * i for i in range(2, TURNS + 1))
    assert result.usage.cache_write_tokens == 1000 + 100 * (TURNS - 1)
