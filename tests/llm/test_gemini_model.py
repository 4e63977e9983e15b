"""The Gemini adapter (google-genai SDK) against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

from typing import Any

import pytest
from google.genai import types

from attractor.errors import MissingCredentialsError, ProviderError, RetryableProviderError
from attractor.llm.credentials import resolve_key
from attractor.llm.gemini_model import GeminiModel
from attractor.llm.retry import RetryPolicy
from attractor.llm.types import Message, ModelRequest
from tests.llm.fake_http import FakeServer, Reply, refused_url
from tests.llm.sdk_types import assert_conforms
from tests.llm.wire import NOT_AN_API, READ_FILE, ask_once, conversation, failure_of
from tests.llm.wire_responses import gemini_error, gemini_reply

pytestmark = pytest.mark.anyio


def make_model(url: str, retry: RetryPolicy, **options: Any) -> GeminiModel:
    model = options.pop("model", "gemini-2.5-flash")
    return GeminiModel(model, api_key="gk-test", base_url=url, retry=retry, **options)


def assert_gemini_body(body: dict[str, Any]) -> None:
    """Each part of a generateContent body fits the SDK's own (extra-forbidding) models."""
    assert set(body) <= {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"}
    assert_conforms(list[types.Content], body["contents"])
    if "systemInstruction" in body:
        assert_conforms(types.Content, body["systemInstruction"])
    assert_conforms(list[types.Tool], body.get("tools", []))
    if "toolConfig" in body:
        assert_conforms(types.ToolConfig, body["toolConfig"])
    if "generationConfig" in body:
        assert_conforms(types.GenerationConfig, body["generationConfig"])


async def test_request_fits_the_sdk_types(server: FakeServer, fast_retry: RetryPolicy) -> None:
    server.add(Reply(body=gemini_reply([{"text": "done"}], thoughts=5, cached=12)))
    model = make_model(server.url, fast_retry)
    request = ModelRequest(conversation(), (READ_FILE,), reasoning_effort="low", max_tokens=300)
    response = await ask_once(model, request)
    assert (response.text, response.finish_reason, response.provider) == ("done", "stop", "gemini")
    assert response.usage is not None
    assert response.usage.to_json() == {
        "input_tokens": 30,
        "output_tokens": 13,
        "cache_read_tokens": 12,
        "cache_write_tokens": 0,
        "reasoning_tokens": 5,
    }
    [received] = server.received
    assert received.path.endswith("/models/gemini-2.5-flash:generateContent")
    assert received.headers["x-goog-api-key"] == "gk-test"
    body = received.body
    assert_gemini_body(body)
    roles = [c["role"] for c in body["contents"]]
    assert roles == ["user", "model", "user"]  # both results and the next text share a turn
    results = body["contents"][2]["parts"]
    assert [p.get("functionResponse", {}).get("response") for p in results[:2]] == [
        {"output": "alpha"},
        {"error": "no such file"},
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}


async def test_a_thinking_turn_is_replayed_with_its_signature(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    call = {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}}
    server.add(
        Reply(body=gemini_reply([{**call, "thoughtSignature": "c2lnbmVk"}])),
        Reply(body=gemini_reply([{"text": "alpha it is"}])),
    )
    model = make_model(server.url, fast_retry)
    try:
        first = await model.request(ModelRequest((Message.user("read a.txt"),), (READ_FILE,)))
        [tool_call] = first.tool_calls
        assert tool_call.arguments == {"path": "a.txt"} and first.finish_reason == "tool_calls"
        history = (
            Message.user("read a.txt"),
            Message.assistant(first.text, first.tool_calls),
            Message.tool(tool_call, "alpha"),
        )
        second = await model.request(ModelRequest(history, (READ_FILE,)))
    finally:
        await model.aclose()
    assert second.text == "alpha it is"
    body = server.received[1].body
    assert_gemini_body(body)
    replayed = body["contents"][1]
    assert replayed["role"] == "model"
    [part] = replayed["parts"]
    assert part["thoughtSignature"] == "c2lnbmVk"
    assert "id" not in part["functionCall"]  # an id made up here is never sent


async def test_rate_limit_honours_retry_after_then_answers(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    waits: list[float] = []
    policy = RetryPolicy(max_retries=2, on_retry=lambda e, n, wait: waits.append(wait))
    server.add(
        Reply(429, gemini_error(429, "RESOURCE_EXHAUSTED", "quota"), {"retry-after": "0.01"}),
        Reply(body=gemini_reply([{"text": "ok"}])),
    )
    response = await ask_once(make_model(server.url, policy))
    assert response.text == "ok" and waits == [0.01]


async def test_retry_delay_in_the_error_body_is_honoured(server: FakeServer) -> None:
    waits: list[float] = []
    policy = RetryPolicy(max_retries=1, on_retry=lambda e, n, wait: waits.append(wait))
    body = gemini_error(429, "RESOURCE_EXHAUSTED", "quota exceeded")
    body["error"]["details"] = [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.02s"}
    ]
    server.add(Reply(429, body), Reply(body=gemini_reply([{"text": "back"}])))
    response = await ask_once(make_model(server.url, policy))
    assert response.text == "back" and waits == [0.02]


async def test_effort_becomes_a_thinking_budget_or_a_note(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(*[Reply(body=gemini_reply([{"text": "ok"}]))] * 2)
    pro = make_model(server.url, fast_retry, model="gemini-2.5-pro")
    await ask_once(pro, ModelRequest((Message.user("hi"),), reasoning_effort="none"))
    config = server.received[0].body["generationConfig"]
    assert_conforms(types.GenerationConfig, config)
    assert config["thinkingConfig"] == {"thinking_budget": 128}  # pro cannot turn it off
    old = make_model(server.url, fast_retry, model="gemini-2.0-flash")
    response = await ask_once(old, ModelRequest((Message.user("hi"),), reasoning_effort="high"))
    assert not server.received[1].body.get("generationConfig")
    assert response.notes == ("reasoning_effort='high' ignored: gemini-2.0-flash has no thinking",)


async def test_persistent_server_errors_give_up(
    server: FakeServer, fast_retry: RetryPolicy
) -> None:
    server.add(*[Reply(503, gemini_error(503, "UNAVAILABLE", "overloaded"))] * 4)
    error = await failure_of(make_model(server.url, fast_retry), RetryableProviderError)
    assert "overloaded" in str(error) and "gave up after 4 attempts" in str(error)
    assert error.provider == "gemini"


async def test_bad_request_is_not_retried(server: FakeServer, fast_retry: RetryPolicy) -> None:
    server.add(Reply(400, gemini_error(400, "INVALID_ARGUMENT", "bad schema")))
    error = await failure_of(make_model(server.url, fast_retry))
    assert str(error).count("bad schema") == 1 and "bad request" in str(error)
    assert len(server.received) == 1


async def test_refused_connection_is_retried_then_reported(fast_retry: RetryPolicy) -> None:
    error = await failure_of(make_model(refused_url(), fast_retry), RetryableProviderError)
    assert "connection failed" in str(error)


async def test_safety_stop_is_a_content_filter(server: FakeServer, fast_retry: RetryPolicy) -> None:
    server.add(Reply(body=gemini_reply([{"text": ""}], finish="SAFETY")))
    response = await ask_once(make_model(server.url, fast_retry))
    assert response.finish_reason == "content_filter"


@pytest.mark.parametrize(("raw", "content_type"), NOT_AN_API)
async def test_a_reply_that_is_not_the_api_is_a_clear_error(
    server: FakeServer, fast_retry: RetryPolicy, raw: bytes, content_type: str
) -> None:
    server.add(Reply(raw=raw, content_type=content_type))
    error = await failure_of(make_model(server.url, fast_retry), ProviderError)
    assert "did not answer with a Gemini generateContent reply" in str(error)


def test_key_comes_from_either_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google")
    assert resolve_key("gemini", None) == "from-google"
    monkeypatch.delenv("GOOGLE_API_KEY")
    with pytest.raises(MissingCredentialsError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        resolve_key("gemini", None)
