"""The openai adapter against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import time
from dataclasses import replace

import anyio
import pytest

from attractor.errors import RetryableProviderError
from attractor.llm.openai_model import OpenAIModel, parse_arguments
from attractor.llm.retry import RetryPolicy
from attractor.llm.types import Message, ModelRequest, ToolDefinition
from tests.llm.fake_http import FakeServer, Reply, refused_url
from tests.llm.wire import (
    NOT_AN_API,
    READ_FILE,
    ask_once,
    conversation,
    failure_of,
    openai_chunk,
    openai_completion,
    openai_error,
    openai_usage_chunk,
    simple_request,
)

pytestmark = pytest.mark.anyio


def make_model(url: str, retry: RetryPolicy, **options: object) -> OpenAIModel:
    return OpenAIModel(
        options.pop("model", "gpt-test"),  # type: ignore[arg-type]
        api_key="sk-test",
        base_url=f"{url}/v1",
        retry=retry,
        **options,  # type: ignore[arg-type]
    )


async def test_plain_answer_and_request_shape_without_tools(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(Reply(body=openai_completion("hello there", usage=(12, 5))))
    model = make_model(server.url, fast_retry, parallel_tool_calls=False)
    response = await ask_once(model)
    assert response.text == "hello there"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 5)
    assert response.finish_reason == "stop"
    assert (response.provider, response.model) == ("openai", "gpt-test")
    [request] = server.received
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body["messages"] == [{"role": "user", "content": "hello"}]
    # No tools offered: nothing tool-related may reach the server.
    for key in ("tools", "tool_choice", "parallel_tool_calls"):
        assert key not in request.body


async def test_tools_choice_and_conversation_shape(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(Reply(body=openai_completion("ok")))
    model = make_model(server.url, fast_retry, parallel_tool_calls=False)
    request = ModelRequest(
        messages=conversation(), tools=(READ_FILE,), tool_choice="required", max_tokens=99
    )
    await ask_once(model, request)
    body = server.bodies[0]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a text file",
                "parameters": READ_FILE.parameters,
            },
        }
    ]
    assert body["tool_choice"] == "required"
    assert body["parallel_tool_calls"] is False
    assert body["max_tokens"] == 99  # a compatible server (base_url) gets the classic name
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "user"]
    assistant = body["messages"][2]
    assert assistant["content"] == "Reading."
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_1", "call_2"]
    assert assistant["tool_calls"][0]["function"] == {
        "name": "read_file",
        "arguments": '{"path": "a.txt"}',
    }
    assert body["messages"][3] == {"role": "tool", "tool_call_id": "call_1", "content": "alpha"}
    assert body["messages"][4]["tool_call_id"] == "call_2"


async def test_each_request_sends_the_conversation_as_it_is_now(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    """A growing conversation, then one whose old tool result was compacted, then a
    shorter one: every body holds exactly the messages of its request."""
    for _ in range(4):
        server.add(Reply(body=openai_completion("ok")))
    model = make_model(server.url, fast_retry)
    talk = list(conversation())
    try:
        await model.request(ModelRequest(messages=tuple(talk[:4])))
        await model.request(ModelRequest(messages=tuple(talk)))
        talk[3] = replace(talk[3], content="[compacted]")
        await model.request(ModelRequest(messages=tuple(talk)))
        await model.request(ModelRequest(messages=tuple(talk[:2])))
    finally:
        await model.aclose()
    contents = [[m["content"] for m in body["messages"]] for body in server.bodies]
    assert contents[0] == ["You are careful.", "Read both files.", "Reading.", "alpha"]
    assert contents[1] == [*contents[0], "no such file", "Now summarise."]
    assert contents[2] == [*contents[0][:3], "[compacted]", "no such file", "Now summarise."]
    assert contents[3] == contents[0][:2]


async def test_each_request_offers_its_own_tools_and_text_arrives_unchanged(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    """The body is encoded by the adapter (the tools once for a session): each
    request still carries exactly the tools it offers, and any text as written."""
    grep = ToolDefinition("grep", "Search files", {"type": "object", "properties": {}})
    offers: list[tuple[ToolDefinition, ...]] = [(READ_FILE,), (READ_FILE,), (READ_FILE, grep)]
    offers += [(), (READ_FILE,)]
    for _ in offers:
        server.add(Reply(body=openai_completion("ok")))
    model = make_model(server.url, fast_retry)
    text = 'naïve "quoted" \\ back\nslash, emoji 🙂, line\u2028separator'
    talk = (*conversation(), Message.user(text))
    try:
        for tools in offers:
            await model.request(ModelRequest(messages=talk, tools=tools))
    finally:
        await model.aclose()
    names = [[t["function"]["name"] for t in body.get("tools", ())] for body in server.bodies]
    assert names == [["read_file"], ["read_file"], ["read_file", "grep"], [], ["read_file"]]
    assert ["tool_choice" in body for body in server.bodies] == [True, True, True, False, True]
    assert all(body["messages"][-1] == {"role": "user", "content": text} for body in server.bodies)
    assert all(body["model"] == "gpt-test" for body in server.bodies)


async def test_tool_calls_parsed_and_bad_json_reported(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    calls = (
        ("call_a", "read_file", '{"path": "x.py"}'),
        ("call_b", "read_file", '{"path": '),
        ("call_c", "read_file", "[1, 2]"),
        ("call_d", "list", ""),
    )
    server.add(Reply(body=openai_completion(None, tool_calls=calls, finish="tool_calls")))
    model = make_model(server.url, fast_retry)
    response = await ask_once(model, simple_request(tools=(READ_FILE,)))
    assert response.finish_reason == "tool_calls"
    assert response.text == ""
    good, broken, not_object, empty = response.tool_calls
    assert (good.id, good.name, good.arguments, good.arguments_error) == (
        "call_a",
        "read_file",
        {"path": "x.py"},
        None,
    )
    assert broken.arguments == {}
    assert broken.arguments_error is not None and "not valid JSON" in broken.arguments_error
    assert not_object.arguments_error is not None and "list" in not_object.arguments_error
    assert (empty.arguments, empty.arguments_error) == ({}, None)


def test_parse_arguments_never_raises() -> None:
    assert parse_arguments('{"a": 1}') == ({"a": 1}, None)
    assert parse_arguments(None) == ({}, None)
    for bad in ("{", "null", '"text"', "1", "{'a': 1}"):
        arguments, error = parse_arguments(bad)
        assert arguments == {}
        assert error


async def test_reasoning_effort_sent_to_reasoning_models_only(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(Reply(body=openai_completion()), Reply(body=openai_completion()))
    reasoning = make_model(server.url, fast_retry, model="o3-mini")
    plain = make_model(server.url, fast_retry, model="gpt-4o", reasoning_effort="high")
    try:
        kept = await reasoning.request(simple_request(reasoning_effort="low"))
        dropped = await plain.request(simple_request())
    finally:
        await reasoning.aclose()
        await plain.aclose()
    assert server.bodies[0]["reasoning_effort"] == "low"
    assert kept.notes == ()
    assert "reasoning_effort" not in server.bodies[1]
    assert len(dropped.notes) == 1 and "gpt-4o" in dropped.notes[0]


async def test_retries_429_and_500_then_succeeds(server: FakeServer) -> None:
    waits: list[tuple[int | None, float]] = []
    policy = RetryPolicy(
        base_delay=0.001, jitter=0.0, on_retry=lambda e, n, d: waits.append((e.status, d))
    )
    server.add(
        Reply(429, openai_error("slow down", "rate_limit"), headers={"retry-after-ms": "40"}),
        Reply(500, openai_error("boom", "server_error")),
        Reply(body=openai_completion("finally")),
    )
    model = make_model(server.url, policy)
    response = await ask_once(model)
    assert response.text == "finally"
    assert len(server.received) == 3
    # The server's Retry-After wins over the computed backoff.
    # then the backoff doubles per retry.
    assert waits == [(429, 0.04), (500, 0.002)]


async def test_retry_after_seconds_header_is_honoured(server: FakeServer) -> None:
    waits: list[float] = []
    policy = RetryPolicy(base_delay=5.0, on_retry=lambda e, n, d: waits.append(d))
    server.add(
        Reply(429, openai_error("slow down"), headers={"Retry-After": "0"}),
        Reply(body=openai_completion()),
    )
    model = make_model(server.url, policy)
    await ask_once(model)
    assert waits == [0.0]


async def test_too_long_retry_after_fails_at_once(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(Reply(429, openai_error("quota"), headers={"Retry-After": "3600"}))
    model = make_model(server.url, fast_retry)
    error = await failure_of(model, RetryableProviderError)
    assert len(server.received) == 1
    assert error.retry_after == 3600
    assert "asked to wait 3600s, longer than the 600s attractor waits" in str(error)


async def test_persistent_5xx_gives_up_with_retryable_error(server: FakeServer) -> None:
    policy = RetryPolicy(max_retries=2, base_delay=0.001, jitter=0.0)
    server.add(*(Reply(503, openai_error("overloaded", "server_error")) for _ in range(3)))
    model = make_model(server.url, policy)
    error = await failure_of(model, RetryableProviderError)
    assert len(server.received) == 3
    assert (error.provider, error.model, error.status) == ("openai", "gpt-test", 503)
    assert "gave up after 3 attempts" in error.reason
    assert "overloaded" in str(error)


@pytest.mark.parametrize(
    ("status", "label"),
    [
        (400, "bad request"),
        (401, "authentication failed"),
        (403, "permission denied"),
        (404, "not found"),
    ],
)
async def test_client_errors_are_not_retried(
    server: FakeServer, fast_retry: RetryPolicy, status: int, label: str
) -> None:
    server.add(Reply(status, openai_error("Incorrect API key provided")))
    model = make_model(server.url, fast_retry)
    error = await failure_of(model)
    assert not isinstance(error, RetryableProviderError)
    assert len(server.received) == 1
    assert (error.provider, error.model, error.status) == ("openai", "gpt-test", status)
    text = str(error)
    assert f"openai model gpt-test (HTTP {status})" in text
    assert label in text and "Incorrect API key provided" in text
    assert "\n" not in text


async def test_connection_refused_is_retried_then_reported(fast_retry: RetryPolicy) -> None:
    retries: list[int] = []
    policy = RetryPolicy(
        max_retries=2, base_delay=0.001, on_retry=lambda e, n, d: retries.append(n)
    )
    url = refused_url()
    model = make_model(url, policy)
    error = await failure_of(model, RetryableProviderError)
    assert retries == [1, 2]
    assert error.status is None
    assert "connection failed" in error.reason
    assert f"({url}" in error.reason  # where it went: a wrong --base-url shows
    assert "gave up after 3 attempts" in error.reason


async def test_timeout_is_retried_then_reported(server: FakeServer) -> None:
    policy = RetryPolicy(max_retries=1, base_delay=0.001)
    server.add(Reply(hold=True), Reply(hold=True))
    model = make_model(server.url, policy, timeout=0.3)
    error = await failure_of(model, RetryableProviderError)
    assert len(server.received) == 2
    assert "timed out" in error.reason


async def test_cancellation_aborts_in_flight_request(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(Reply(hold=True))
    model = make_model(server.url, fast_retry)
    finished = False
    started = time.monotonic()
    try:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as group:

                async def cancel_on_arrival() -> None:
                    await anyio.to_thread.run_sync(server.arrived.wait)
                    group.cancel_scope.cancel()

                group.start_soon(cancel_on_arrival)
                await model.request(simple_request())
                finished = True
    finally:
        await model.aclose()
    assert not finished
    assert len(server.received) == 1  # cancellation is not a retryable failure
    assert time.monotonic() - started < 5


async def test_streaming_assembles_text_and_tool_call_deltas(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    call_start = {"index": 0, "id": "call_s", "type": "function"}
    events = (
        openai_chunk({"role": "assistant", "content": "Let me "}),
        openai_chunk({"content": "look."}),
        openai_chunk(
            {"tool_calls": [{**call_start, "function": {"name": "read_file", "arguments": ""}}]}
        ),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"pa'}}]}),
        openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": 'th": "z.md"}'}}]}),
        openai_chunk({}, finish="tool_calls"),
        openai_usage_chunk(40, 12),
        "[DONE]",
    )
    server.add(Reply(events=tuple((None, e) for e in events)))
    model = make_model(server.url, fast_retry, stream=True)
    response = await ask_once(model, simple_request(tools=(READ_FILE,)))
    assert response.text == "Let me look."
    [call] = response.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_s", "read_file", {"path": "z.md"})
    assert response.finish_reason == "tool_calls"
    assert response.usage is not None and response.usage.total_tokens == 52
    body = server.bodies[0]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


async def test_streaming_request_is_retried_on_server_error(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    events = (openai_chunk({"content": "ok"}, finish="stop"), "[DONE]")
    server.add(
        Reply(502, openai_error("bad gateway")),
        Reply(events=tuple((None, e) for e in events)),
    )
    model = make_model(server.url, fast_retry, stream=True)
    response = await ask_once(model)
    assert response.text == "ok"
    assert response.usage is None
    assert len(server.received) == 2


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize(("raw", "content_type"), NOT_AN_API)
async def test_a_200_answer_that_is_not_a_completion_is_a_clear_provider_error(
    server: FakeServer, fast_retry: RetryPolicy, raw: bytes, content_type: str, stream: bool
) -> None:
    server.add(Reply(raw=raw, content_type=content_type))
    model = make_model(server.url, fast_retry, stream=stream)
    error = await failure_of(model)
    assert not isinstance(error, RetryableProviderError)
    assert len(server.received) == 1  # a wrong URL does not heal: no retries
    assert (error.provider, error.model, error.status) == ("openai", "gpt-test", 200)
    assert error.reason == (
        f"the server did not answer with a chat completion (got {content_type}); check --base-url"
    )


async def test_a_plain_answer_is_read_as_the_server_wrote_it(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    """Usage details, a call without an id, a call of another type and an answer
    without choices, read from the JSON itself."""
    call = {"id": None, "type": "function", "function": {"name": "grep", "arguments": "{}"}}
    other = {"id": "x", "type": "custom", "custom": {"name": "grep", "input": ""}}
    usage = {
        "prompt_tokens": 30,
        "completion_tokens": 7,
        "total_tokens": 37,
        "prompt_tokens_details": {"cached_tokens": 20, "cache_write_tokens": 5},
        "completion_tokens_details": {"reasoning_tokens": 3},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [other, call]}
    choice = {"index": 0, "message": message, "finish_reason": "stop"}
    body = {"id": "c", "object": "chat.completion", "created": 0, "model": "served-name"}
    server.add(Reply(body={**body, "choices": [choice], "usage": usage}))
    server.add(Reply(body={**body, "choices": []}))
    model = make_model(server.url, fast_retry)
    try:
        answer = await model.request(simple_request())
        empty = await failure_of(model)
    finally:
        await model.aclose()
    assert (answer.text, answer.model, answer.finish_reason) == ("", "served-name", "tool_calls")
    [only] = answer.tool_calls
    assert (only.id, only.name, only.arguments) == ("call_1", "grep", {})
    assert answer.usage is not None
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (30, 7)
    assert (answer.usage.cache_read_tokens, answer.usage.cache_write_tokens) == (20, 5)
    assert answer.usage.reasoning_tokens == 3
    assert (empty.reason, empty.status) == ("response has no choices", None)


async def test_a_streams_usage_is_read_as_a_plain_answers_is(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    """The details, and a count a server wrote as a JSON ``true``, alike both ways."""
    usage = {
        "prompt_tokens": 30,
        "completion_tokens": True,
        "total_tokens": 31,
        "prompt_tokens_details": {"cached_tokens": 20, "cache_write_tokens": 5},
        "completion_tokens_details": {"reasoning_tokens": 3},
    }
    plain = openai_completion("ok")
    server.add(Reply(body={**plain, "usage": usage}))
    last = {**openai_usage_chunk(0, 0), "usage": usage}
    events = (openai_chunk({"content": "ok"}, finish="stop"), last, "[DONE]")
    server.add(Reply(events=tuple((None, e) for e in events)))
    answers = []
    for stream in (False, True):
        model = make_model(server.url, fast_retry, stream=stream)
        answers.append(await ask_once(model))
    read = [answer.usage for answer in answers]
    assert read[0] == read[1]
    assert read[0] is not None
    assert (read[0].input_tokens, read[0].output_tokens) == (30, 1)
    assert type(read[1].output_tokens) is int  # not the JSON true itself
    assert (read[1].cache_read_tokens, read[1].cache_write_tokens) == (20, 5)
    assert read[1].reasoning_tokens == 3


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("key", [None, "sk-test"], ids=["no-key", "key"])
async def test_openai_custom_headers_reach_the_server_but_never_decide_the_key(
    server: FakeServer,
    fast_retry: RetryPolicy,
    monkeypatch: pytest.MonkeyPatch,
    stream: bool,
    key: str | None,
) -> None:
    monkeypatch.setenv("OPENAI_CUSTOM_HEADERS", "X-Gateway-Key: g1\nAuthorization: Bearer other")
    if stream:
        events = (openai_chunk({"content": "ok"}, finish="stop"), "[DONE]")
        server.add(Reply(events=tuple((None, e) for e in events)))
    else:
        server.add(Reply(body=openai_completion("ok")))
    url = f"{server.url}/v1"
    model = OpenAIModel("m", api_key=key, base_url=url, retry=fast_retry, stream=stream)
    assert (await ask_once(model)).text == "ok"
    [received] = server.received
    assert received.headers["x-gateway-key"] == "g1"
    assert received.headers.get("authorization") == (f"Bearer {key}" if key else None)
