"""The OpenAI Responses adapter against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import pytest
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

from attractor.errors import ProviderError, RetryableProviderError
from attractor.llm.openai_responses import OpenAIResponsesModel
from attractor.llm.retry import RetryPolicy
from attractor.llm.types import Message, ModelRequest
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.sdk_types import assert_conforms
from tests.llm.wire import NOT_AN_API, READ_FILE, ask_once, conversation, failure_of, openai_error
from tests.llm.wire_responses import function_call, output_text, reasoning_item, responses_reply

pytestmark = pytest.mark.anyio


def make_model(url: str, retry: RetryPolicy, **options: object) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(
        options.pop("model", "gpt-5"),  # type: ignore[arg-type]
        api_key="sk-test",
        base_url=f"{url}/v1",
        retry=retry,
        **options,  # type: ignore[arg-type]
    )


async def test_request_fits_the_sdk_types_and_usage_is_complete(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(Reply(body=responses_reply([output_text("done")], cached=30, reasoning=9)))
    model = make_model(server.url, fast_retry, parallel_tool_calls=False)
    request = ModelRequest(conversation(), (READ_FILE,), reasoning_effort="high", max_tokens=500)
    response = await ask_once(model, request)
    assert response.text == "done" and response.finish_reason == "stop"
    assert response.usage is not None
    assert response.usage.to_json() == {
        "input_tokens": 40,
        "output_tokens": 12,
        "cache_read_tokens": 30,
        "cache_write_tokens": 0,
        "reasoning_tokens": 9,
    }
    [received] = server.received
    assert received.path == "/v1/responses"
    body = received.body
    assert_conforms(ResponseCreateParamsNonStreaming, body)
    assert body["instructions"] == "You are careful."
    assert body["reasoning"] == {"effort": "high"}
    assert body["include"] == ["reasoning.encrypted_content"] and body["store"] is False
    assert body["max_output_tokens"] == 500 and body["parallel_tool_calls"] is False
    kinds = [item.get("type", item.get("role")) for item in body["input"]]
    assert kinds == [
        "user",
        "assistant",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
        "user",
    ]


async def test_encrypted_reasoning_goes_back_before_its_tool_call(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(
        Reply(
            body=responses_reply(
                [
                    reasoning_item("rs_1", "SECRET-1"),
                    function_call("call_9", "read_file", '{"path": "a.txt"}'),
                ]
            )
        ),
        Reply(body=responses_reply([output_text("it says alpha")])),
    )
    model = make_model(server.url, fast_retry)
    try:
        first = await model.request(ModelRequest((Message.user("read a.txt"),), (READ_FILE,)))
        [call] = first.tool_calls
        assert (call.id, call.arguments, first.finish_reason) == (
            "call_9",
            {"path": "a.txt"},
            "tool_calls",
        )
        history = (
            Message.user("read a.txt"),
            Message.assistant(first.text, first.tool_calls),
            Message.tool(call, "alpha"),
        )
        await model.request(ModelRequest(history, (READ_FILE,)))
    finally:
        await model.aclose()
    second = server.received[1].body
    assert_conforms(ResponseCreateParamsNonStreaming, second)
    reasoning, replayed_call, result = second["input"][1:]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"] == "SECRET-1"
    assert replayed_call["type"] == "function_call" and replayed_call["call_id"] == "call_9"
    assert result == {"type": "function_call_output", "call_id": "call_9", "output": "alpha"}


async def test_effort_is_not_sent_to_a_model_without_reasoning(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(Reply(body=responses_reply([output_text("ok")], model="gpt-4.1")))
    model = make_model(server.url, fast_retry, model="gpt-4.1")
    response = await ask_once(model, ModelRequest((Message.user("hi"),), reasoning_effort="low"))
    body = server.received[0].body
    assert "reasoning" not in body and "include" not in body
    assert response.notes == ("reasoning_effort='low' ignored: gpt-4.1 does not support it",)


async def test_incomplete_reply_is_a_length_finish(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    reply = responses_reply(
        [output_text("trunc")], status="incomplete", incomplete="max_output_tokens"
    )
    server.add(Reply(body=reply))
    response = await ask_once(make_model(server.url, fast_retry))
    assert (response.text, response.finish_reason) == ("trunc", "length")


async def test_rate_limit_is_retried_then_answered(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(
        Reply(429, openai_error("slow down", "rate_limit_error"), {"retry-after-ms": "1"}),
        Reply(body=responses_reply([output_text("fine")])),
    )
    response = await ask_once(make_model(server.url, fast_retry))
    assert response.text == "fine" and len(server.received) == 2


async def test_persistent_server_errors_give_up_with_the_reason(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(*[Reply(503, openai_error("overloaded", "server_error"))] * 4)
    error = await failure_of(make_model(server.url, fast_retry), RetryableProviderError)
    assert "overloaded" in str(error) and "gave up after 4 attempts" in str(error)


async def test_bad_request_is_not_retried(server: FakeServer, fast_retry: RetryPolicy) -> None:
    server.add(Reply(400, openai_error("input is malformed")))
    error = await failure_of(make_model(server.url, fast_retry))
    assert "bad request" in str(error) and "input is malformed" in str(error)
    assert len(server.received) == 1


async def test_streamed_reply_uses_the_final_event(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    final = responses_reply([output_text("streamed")], usage=(5, 2))
    events = (
        (
            "response.created",
            {
                "type": "response.created",
                "sequence_number": 0,
                "response": {**final, "status": "in_progress", "output": []},
            },
        ),
        (
            "response.completed",
            {"type": "response.completed", "sequence_number": 1, "response": final},
        ),
    )
    server.add(Reply(events=events))
    response = await ask_once(make_model(server.url, fast_retry, stream=True))
    assert response.text == "streamed"
    assert response.usage is not None and response.usage.total_tokens == 7
    assert server.received[0].body["stream"] is True


@pytest.mark.parametrize(("raw", "content_type"), NOT_AN_API)
async def test_a_reply_that_is_not_the_api_is_a_clear_error(
    server: FakeServer, fast_retry: RetryPolicy, raw: bytes, content_type: str
) -> None:
    server.add(Reply(raw=raw, content_type=content_type))
    error = await failure_of(make_model(server.url, fast_retry), ProviderError)
    assert "did not answer with a Responses API reply" in str(error)
