"""OpenAI adapter on the official SDK's Responses API, for OpenAI's own service.

The Responses API is the one OpenAI's reasoning models are built for: it takes a
reasoning effort, and with ``store=False`` it hands back the model's reasoning
as encrypted items. Those items are kept by the id of the tool call they led to
and sent back, unchanged and in place, whenever that turn is replayed, so the
model keeps its chain of thought across tool rounds. OpenAI-compatible servers
(``--base-url``) stay on Chat Completions (:mod:`attractor.llm.openai_model`).
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

from attractor.errors import ProviderError, ProviderNotInstalledError
from attractor.llm.openai_model import (
    DEFAULT_TIMEOUT,
    PROVIDER,
    client_options,
    make_tool_call,
    supports_reasoning_effort,
)
from attractor.llm.retry import DEFAULT_POLICY, RetryPolicy
from attractor.llm.sdk_model import SdkModel
from attractor.llm.types import (
    FinishReason,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolDefinition,
    Usage,
)

try:
    import openai
    from openai import AsyncOpenAI
    from openai.types.responses import Response, ResponseUsage
except ImportError as exc:
    raise ProviderNotInstalledError("openai", "openai") from exc

#: Reasoning items kept for round-tripping; only the latest turns ever need them.
_REASONING_CACHE_LIMIT = 64
_INCOMPLETE: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}
_FINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


class OpenAIResponsesModel(SdkModel):
    """A :class:`~attractor.llm.types.Model` backed by OpenAI's Responses API.

    Args:
        model: Model id, e.g. ``gpt-5``.
        api_key: The key to send, given in code (else see ``api_key_env``).
        base_url: Another Responses endpoint (a proxy or a test server).
        api_key_env: The variable holding the key; None: ``OPENAI_API_KEY`` for
            OpenAI's own service, no key for any other endpoint.
        stream: Receive the answer as a stream of events and keep the final one.
        parallel_tool_calls: ``False`` asks for at most one tool call per turn.
        reasoning_effort: Default effort when a request names none.
        retry: Retry policy for transient failures.
        timeout: Seconds before one HTTP attempt times out.
    """

    PROVIDER = PROVIDER
    ANSWER = "a Responses API reply"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        stream: bool = False,
        parallel_tool_calls: bool | None = None,
        reasoning_effort: str | None = None,
        retry: RetryPolicy = DEFAULT_POLICY,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._model = model
        self._stream = stream
        self._parallel_tool_calls = parallel_tool_calls
        self._reasoning_effort = reasoning_effort
        self._retry = retry
        # tool call id -> encrypted reasoning items of the turn that made the call.
        self._reasoning: dict[str, list[dict[str, Any]]] = {}
        client, self._per_request = client_options(api_key, api_key_env, base_url)
        self._client = AsyncOpenAI(
            **client,
            max_retries=0,  # our retry policy is the only one
            timeout=timeout,
        )

    def _sdk(self) -> ModuleType:
        return openai

    def _build_kwargs(self, request: ModelRequest) -> tuple[dict[str, Any], tuple[str, ...]]:
        instructions, items = messages_to_input(request.messages, self._reasoning)
        # Nothing is kept on OpenAI's side: the reasoning comes back encrypted instead.
        kwargs: dict[str, Any] = {
            "model": self._model,
            "input": items,
            "store": False,
            **self._per_request,
        }
        if instructions:
            kwargs["instructions"] = instructions
        if request.max_tokens is not None:
            kwargs["max_output_tokens"] = request.max_tokens
        if request.tools:
            kwargs["tools"] = [tool_to_responses(t) for t in request.tools]
            kwargs["tool_choice"] = request.tool_choice
            if self._parallel_tool_calls is not None:
                kwargs["parallel_tool_calls"] = self._parallel_tool_calls
        notes: tuple[str, ...] = ()
        effort = request.reasoning_effort or self._reasoning_effort
        if supports_reasoning_effort(self._model):
            kwargs["include"] = ["reasoning.encrypted_content"]
            if effort:
                kwargs["reasoning"] = {"effort": effort}
        elif effort:
            notes = (f"reasoning_effort={effort!r} ignored: {self._model} does not support it",)
        return kwargs, notes

    async def _send_plain(self, kwargs: dict[str, Any]) -> ModelResponse:
        # The raw response keeps the status and content type for a clear error
        # when a 200 answer is not a Responses reply.
        raw = await self._client.responses.with_raw_response.create(**kwargs)
        status, content_type = raw.status_code, raw.headers.get("content-type")
        try:
            response = raw.parse()
            if isinstance(response, Response) and isinstance(response.output, list):
                return self._translate(response)
        except (ValueError, AttributeError, TypeError) as error:
            raise self._not_an_answer(status, content_type) from error
        raise self._not_an_answer(status, content_type)

    async def _send_streaming(self, kwargs: dict[str, Any]) -> ModelResponse:
        stream = await self._client.responses.create(**kwargs, stream=True)
        status = stream.response.status_code
        content_type = stream.response.headers.get("content-type")
        final: Response | None = None
        async with stream:
            try:
                async for event in stream:
                    if event.type in _FINAL_EVENTS:
                        final = event.response
            except (AttributeError, TypeError) as error:  # events that are not events
                raise self._not_an_answer(status, content_type) from error
        if final is None:
            raise self._not_an_answer(status, content_type)
        return self._translate(final)

    def _translate(self, response: Response) -> ModelResponse:
        if response.status == "failed":
            detail = response.error.message if response.error is not None else "no detail"
            raise ProviderError(f"response failed: {detail}", provider=PROVIDER, model=self._model)
        answer, reasoning = response_to_answer(response, self._model)
        if reasoning:
            for call in answer.tool_calls:
                self._reasoning[call.id] = reasoning
            while len(self._reasoning) > _REASONING_CACHE_LIMIT:
                del self._reasoning[next(iter(self._reasoning))]
        return answer


def messages_to_input(
    messages: tuple[Message, ...], reasoning: dict[str, list[dict[str, Any]]] | None = None
) -> tuple[str, list[dict[str, Any]]]:
    """The system prompt as instructions, and the rest as Responses input items."""
    system: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.content)
        elif message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id,
                    "output": message.content,
                }
            )
        elif message.role == "assistant":
            items.extend(_assistant_items(message, reasoning or {}))
        else:
            items.append({"role": "user", "content": message.content})
    return "\n\n".join(part for part in system if part), items


def _assistant_items(
    message: Message, reasoning: dict[str, list[dict[str, Any]]]
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if message.tool_calls:
        # The reasoning goes back where the model produced it: before its calls.
        items.extend(reasoning.get(message.tool_calls[0].id, ()))
    if message.content or not message.tool_calls:
        items.append({"role": "assistant", "content": message.content})
    items.extend(_call_item(call) for call in message.tool_calls)
    return items


def _call_item(call: ToolCall) -> dict[str, Any]:
    return {
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": json.dumps(call.arguments),
    }


def tool_to_responses(tool: ToolDefinition) -> dict[str, Any]:
    """One tool definition in the Responses shape (flat, not nested under ``function``)."""
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        # Strict mode demands every property be required; our schemas have optional ones.
        "strict": False,
    }


def response_to_answer(
    response: Response, model: str
) -> tuple[ModelResponse, list[dict[str, Any]]]:
    """Translate a reply; also return its encrypted reasoning items for round-tripping."""
    text: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    refused = False
    for item in response.output:
        if item.type == "message":
            for part in item.content:
                if part.type == "output_text":
                    text.append(part.text)
                elif part.type == "refusal":
                    text.append(part.refusal)
                    refused = True
        elif item.type == "function_call":
            calls.append(make_tool_call(item.call_id, item.name, item.arguments, len(calls)))
        elif item.type == "reasoning" and item.encrypted_content:
            reasoning.append(
                {
                    "type": "reasoning",
                    "id": item.id,
                    "summary": [{"type": "summary_text", "text": s.text} for s in item.summary],
                    "encrypted_content": item.encrypted_content,
                }
            )
    answer = ModelResponse(
        text="".join(text),
        tool_calls=tuple(calls),
        usage=usage_of(response.usage),
        finish_reason=_finish(response, bool(calls), refused),
        model=response.model or model,
        provider=PROVIDER,
    )
    return answer, reasoning


def _finish(response: Response, has_calls: bool, refused: bool) -> FinishReason:
    if response.status == "incomplete":
        details = response.incomplete_details
        return _INCOMPLETE.get(details.reason or "" if details else "", "other")
    if refused:
        return "content_filter"
    return "tool_calls" if has_calls else "stop"


def usage_of(usage: ResponseUsage | None) -> Usage | None:
    """Token counts, with the automatic prompt-cache hits and the reasoning tokens."""
    if usage is None:
        return None
    details = usage.input_tokens_details
    output = usage.output_tokens_details
    return Usage(
        usage.input_tokens,
        usage.output_tokens,
        cache_read_tokens=(details.cached_tokens or 0) if details else 0,
        # Older SDK releases do not know cache writes; OpenAI reports them lately.
        cache_write_tokens=getattr(details, "cache_write_tokens", 0) or 0,
        reasoning_tokens=(output.reasoning_tokens or 0) if output else 0,
    )
