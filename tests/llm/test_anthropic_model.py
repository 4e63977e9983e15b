"""The anthropic adapter against a local server speaking the Messages wire format."""

from __future__ import annotations

import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming

from attractor.errors import RetryableProviderError
from attractor.llm.anthropic_model import AnthropicModel, messages_to_anthropic
from attractor.llm.retry import RetryPolicy
from attractor.llm.types import Message, ModelRequest, ToolCall
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.sdk_types import assert_conforms
from tests.llm.wire import (
    NOT_AN_API,
    READ_FILE,
    anthropic_error,
    anthropic_message,
    anthropic_stream,
    ask_once,
    conversation,
    failure_of,
    simple_request,
)

pytestmark = pytest.mark.anyio


def make_model(url: str, retry: RetryPolicy, **options: object) -> AnthropicModel:
    return AnthropicModel(
        options.pop("model", "claude-test"),  # type: ignore[arg-type]
        api_key="ak-test",
        base_url=url,
        retry=retry,
        **options,  # type: ignore[arg-type]
    )


async def test_request_shape_follows_messages_api(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(Reply(body=anthropic_message([{"type": "text", "text": "done"}])))
    # Cache breakpoints are off here; test_anthropic_cache covers them.
    model = make_model(server.url, fast_retry, parallel_tool_calls=False, prompt_cache=False)
    await ask_once(model, ModelRequest(messages=conversation(), tools=(READ_FILE,)))
    [received] = server.received
    assert_conforms(MessageCreateParamsNonStreaming, received.body)
    assert received.path == "/v1/messages"
    # SDK releases differ in how they send the key; either way it must arrive.
    sent_key = received.headers.get("x-api-key") or received.headers.get("authorization")
    assert sent_key in ("ak-test", "Bearer ak-test")
    assert "anthropic-version" in received.headers
    body = received.body
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 4096  # required by the API: the default applies
    assert body["system"] == [{"type": "text", "text": "You are careful."}]
    assert body["tools"] == [
        {
            "name": "read_file",
            "description": "Read a text file",
            "input_schema": READ_FILE.parameters,
        }
    ]
    assert body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    user, assistant, results = body["messages"]
    assert user == {"role": "user", "content": [{"type": "text", "text": "Read both files."}]}
    assert assistant["role"] == "assistant"
    assert assistant["content"] == [
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "call_1", "name": "read_file", "input": {"path": "a.txt"}},
        {"type": "tool_use", "id": "call_2", "name": "read_file", "input": {"path": "b.txt"}},
    ]
    # Both tool results and the next user text share one user turn, results first.
    assert results["role"] == "user"
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "alpha"},
        {
            "type": "tool_result",
            "tool_use_id": "call_2",
            "content": "no such file",
            "is_error": True,
        },
        {"type": "text", "text": "Now summarise."},
    ]


async def test_without_tools_the_tool_history_is_sent_as_text(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    # A final or reflection turn: tools withheld, but earlier turns called them.
    server.add(Reply(body=anthropic_message([{"type": "text", "text": "summary"}])))
    model = make_model(server.url, fast_retry, prompt_cache=False)
    response = await ask_once(model, ModelRequest(messages=conversation(), tools=()))
    assert response.text == "summary"
    body = server.bodies[0]
    assert "tools" not in body and "tool_choice" not in body
    kinds = {block["type"] for turn in body["messages"] for block in turn["content"]}
    assert kinds == {"text"}  # no tool_use or tool_result block anywhere
    user, assistant, results = body["messages"]
    assert user["content"] == [{"type": "text", "text": "Read both files."}]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading."},
            {"type": "text", "text": '[called read_file {"path": "a.txt"}]'},
            {"type": "text", "text": '[called read_file {"path": "b.txt"}]'},
        ],
    }
    assert results == {
        "role": "user",
        "content": [
            {"type": "text", "text": "[result of read_file: alpha]"},
            {"type": "text", "text": "[error from read_file: no such file]"},
            {"type": "text", "text": "Now summarise."},
        ],
    }


async def test_no_tools_means_no_tool_fields(server: FakeServer, fast_retry: RetryPolicy) -> None:
    server.add(Reply(body=anthropic_message([{"type": "text", "text": "plain"}])))
    model = make_model(server.url, fast_retry)
    response = await ask_once(model, simple_request(max_tokens=300))
    await model.aclose()  # closing twice is allowed
    body = server.bodies[0]
    assert "tools" not in body and "tool_choice" not in body and "system" not in body
    assert body["max_tokens"] == 300
    assert response.text == "plain"
    assert response.finish_reason == "stop"


@pytest.mark.parametrize(("choice", "wire"), [("required", "any"), ("none", "none")])
async def test_tool_choice_mapping(
    server: FakeServer, fast_retry: RetryPolicy, choice: str, wire: str
) -> None:
    server.add(Reply(body=anthropic_message([{"type": "text", "text": "x"}])))
    model = make_model(server.url, fast_retry)
    await ask_once(model, simple_request(tools=(READ_FILE,), tool_choice=choice))
    assert server.bodies[0]["tool_choice"] == {"type": wire}


async def test_response_with_tool_use_blocks(server: FakeServer, fast_retry: RetryPolicy) -> None:
    content = [
        {"type": "text", "text": "I will read it."},
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "q.txt"}},
    ]
    server.add(Reply(body=anthropic_message(content, stop_reason="tool_use", usage=(50, 21))))
    model = make_model(server.url, fast_retry)
    response = await ask_once(model, simple_request(tools=(READ_FILE,)))
    assert response.text == "I will read it."
    assert response.tool_calls == (ToolCall("toolu_1", "read_file", {"path": "q.txt"}),)
    assert response.finish_reason == "tool_calls"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (50, 21)
    assert (response.provider, response.model) == ("anthropic", "claude-test")


async def test_rate_limit_and_overload_are_retried(server: FakeServer) -> None:
    waits: list[tuple[int | None, float]] = []
    policy = RetryPolicy(
        base_delay=0.001, jitter=0.0, on_retry=lambda e, n, d: waits.append((e.status, d))
    )
    server.add(
        Reply(429, anthropic_error("rate_limit_error", "too fast"), headers={"retry-after": "0"}),
        Reply(529, anthropic_error("overloaded_error", "Overloaded")),
        Reply(body=anthropic_message([{"type": "text", "text": "ok"}])),
    )
    model = make_model(server.url, policy)
    response = await ask_once(model)
    assert response.text == "ok"
    assert waits == [(429, 0.0), (529, 0.002)]


async def test_authentication_error_is_not_retried(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(Reply(401, anthropic_error("authentication_error", "invalid x-api-key")))
    model = make_model(server.url, fast_retry)
    error = await failure_of(model)
    assert not isinstance(error, RetryableProviderError)
    assert len(server.received) == 1
    assert (error.provider, error.model, error.status) == ("anthropic", "claude-test", 401)
    assert "authentication_error: invalid x-api-key" in str(error)


async def test_persistent_overload_gives_up(server: FakeServer) -> None:
    policy = RetryPolicy(max_retries=1, base_delay=0.001)
    server.add(*(Reply(529, anthropic_error("overloaded_error", "Overloaded")) for _ in range(2)))
    model = make_model(server.url, policy)
    error = await failure_of(model, RetryableProviderError)
    assert error.status == 529
    assert "gave up after 2 attempts" in str(error)


async def test_reasoning_effort_becomes_thinking_and_round_trips(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "sig=="}
    call = {"type": "tool_use", "id": "toolu_9", "name": "read_file", "input": {"path": "a"}}
    server.add(
        Reply(body=anthropic_message([thinking, call], stop_reason="tool_use")),
        Reply(body=anthropic_message([{"type": "text", "text": "done"}])),
    )
    model = make_model(server.url, fast_retry, model="claude-opus-4-test")
    first = simple_request(tools=(READ_FILE,), reasoning_effort="low")
    try:
        response = await model.request(first)
        [tool_call] = response.tool_calls
        follow_up = ModelRequest(
            messages=(
                *first.messages,
                Message.assistant(response.text, response.tool_calls),
                Message.tool(tool_call, "contents"),
            ),
            tools=(READ_FILE,),
            reasoning_effort="low",
        )
        await model.request(follow_up)
    finally:
        await model.aclose()
    sent = server.bodies
    assert sent[0]["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert sent[0]["max_tokens"] == 4096 + 2048
    # The API wants the thinking block back, first, in the replayed assistant turn.
    assert sent[1]["messages"][1]["content"] == [thinking, call]


async def test_reasoning_effort_ignored_with_note_on_older_models(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(Reply(body=anthropic_message([{"type": "text", "text": "x"}])))
    model = make_model(server.url, fast_retry, model="claude-3-5-haiku-test")
    response = await ask_once(model, simple_request(reasoning_effort="high"))
    assert "thinking" not in server.bodies[0]
    assert len(response.notes) == 1 and "claude-3-5-haiku-test" in response.notes[0]


async def test_streaming_answer_is_assembled(server: FakeServer, fast_retry: RetryPolicy) -> None:
    events = anthropic_stream("Checking.", ("toolu_s", "read_file", {"path": "s.txt"}))
    server.add(Reply(events=events))
    model = make_model(server.url, fast_retry, stream=True)
    response = await ask_once(model, simple_request(tools=(READ_FILE,)))
    assert server.bodies[0]["stream"] is True
    assert response.text == "Checking."
    assert response.tool_calls == (ToolCall("toolu_s", "read_file", {"path": "s.txt"}),)
    assert response.finish_reason == "tool_calls"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (30, 15)


def test_system_messages_joined_and_empty_turns_filled() -> None:
    system, turns = messages_to_anthropic(
        (Message.system("one"), Message.system("two"), Message.user(""))
    )
    assert system == "one\n\ntwo"
    assert turns == [{"role": "user", "content": [{"type": "text", "text": "(empty)"}]}]


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(("raw", "content_type"), NOT_AN_API)
async def test_a_200_answer_that_is_not_a_message_is_a_clear_provider_error(
    server: FakeServer, fast_retry: RetryPolicy, raw: bytes, content_type: str, stream: bool
) -> None:
    server.add(Reply(raw=raw, content_type=content_type))
    model = make_model(server.url, fast_retry, stream=stream)
    error = await failure_of(model)
    assert not isinstance(error, RetryableProviderError)
    assert len(server.received) == 1
    assert (error.provider, error.model, error.status) == ("anthropic", "claude-test", 200)
    assert error.reason == (
        f"the server did not answer with a Messages API reply (got {content_type}); "
        "check --base-url"
    )
