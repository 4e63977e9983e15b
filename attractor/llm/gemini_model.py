"""Gemini adapter on Google's official ``google-genai`` SDK (the Gemini API).

Differences from the neutral types that this module absorbs: the system prompt
is a separate instruction, the assistant's role is ``model``, tool results are
``function_response`` parts of a user turn, and a thinking model's turns carry
thought signatures that must come back unchanged: a turn that made tool calls is
kept as the SDK returned it and replayed as is. Call ids the API leaves out are
made up here and never sent back.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

from attractor.errors import ProviderNotInstalledError
from attractor.llm.credentials import resolve_key
from attractor.llm.retry import DEFAULT_POLICY, RetryPolicy, connection_error, status_error
from attractor.llm.sdk_model import SdkModel
from attractor.llm.types import (
    FinishReason,
    Message,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolChoice,
    ToolDefinition,
    Usage,
)

try:
    import httpx
    from google import genai
    from google.genai import errors as genai_errors
    from google.genai import types
except ImportError as exc:
    raise ProviderNotInstalledError("gemini", "gemini") from exc

try:  # newer SDK releases talk through httpx2
    import httpx2  # type: ignore[import-not-found, unused-ignore]

    _TRANSPORT: tuple[type[Exception], ...] = (httpx.TransportError, httpx2.TransportError)
    _TIMEOUT: tuple[type[Exception], ...] = (httpx.TimeoutException, httpx2.TimeoutException)
except ImportError:  # pragma: no cover - depends on the SDK release
    _TRANSPORT = (httpx.TransportError,)
    _TIMEOUT = (httpx.TimeoutException,)

PROVIDER = "gemini"
BASE_URL_ENV = "GOOGLE_GEMINI_BASE_URL"
KEY_HEADER = "x-goog-api-key"
# The SDK insists on a key; this one is never sent (see client_options).
PLACEHOLDER_KEY = "not-sent"
DEFAULT_TIMEOUT = 600.0
SYNTHETIC_ID = "attractor_call_"

# Thinking budget per effort level (Gemini 2.5); Gemini 3 takes a level instead.
THINKING_BUDGETS = {
    "none": 0,
    "minimal": 512,
    "low": 2048,
    "medium": 8192,
    "high": 24576,
    "xhigh": 32768,
    "max": 32768,
}
PRO_MIN_BUDGET = 128
_FINISH: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
}
_MODES: dict[ToolChoice, str] = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
_TURN_CACHE_LIMIT = 64


def client_options(
    api_key: str | None, api_key_env: str | None, base_url: str | None, timeout: float
) -> dict[str, Any]:
    """The ``genai.Client`` keywords for ``base_url`` (``GOOGLE_GEMINI_BASE_URL`` if None).

    The key follows :func:`attractor.llm.credentials.resolve_key`; without one
    the key header goes out empty (the SDK's own fallback to ``GEMINI_API_KEY``
    and ``GOOGLE_API_KEY`` is shut off).

    Raises:
        MissingCredentialsError: the key's variable is not set.
    """
    base_url = base_url or os.environ.get(BASE_URL_ENV) or None
    key = resolve_key(PROVIDER, base_url, api_key=api_key, api_key_env=api_key_env)
    # The SDK's own retries stay off (retry_options=None): ours is the only policy.
    options = types.HttpOptions(base_url=base_url, timeout=int(timeout * 1000))
    if not key:
        options.headers = {KEY_HEADER: ""}
    return {"api_key": key or PLACEHOLDER_KEY, "http_options": options}


class GeminiModel(SdkModel):
    """A :class:`~attractor.llm.types.Model` backed by the Gemini API.

    Args:
        model: Model id, e.g. ``gemini-2.5-pro``.
        api_key: The key to send, given in code (else see ``api_key_env``).
        base_url: Another endpoint (a proxy or a test server).
        api_key_env: The variable holding the key; None: ``GEMINI_API_KEY`` or
            ``GOOGLE_API_KEY`` for Google's own service, no key for any other.
        reasoning_effort: Default effort when a request names none.
        retry: Retry policy for transient failures.
        timeout: Seconds before one HTTP attempt times out.
    """

    PROVIDER = PROVIDER
    ANSWER = "a Gemini generateContent reply"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        reasoning_effort: str | None = None,
        retry: RetryPolicy = DEFAULT_POLICY,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self._model = model
        self._stream = False
        self._reasoning_effort = reasoning_effort
        self._retry = retry
        self._calls = 0
        # first tool call id -> the model turn that made it, signatures and all.
        self._turns: dict[str, types.Content] = {}
        self._client = genai.Client(**client_options(api_key, api_key_env, base_url, timeout))

    def _sdk(self) -> ModuleType:
        return genai

    async def aclose(self) -> None:
        await self._client.aio.aclose()

    def _build_kwargs(self, request: ModelRequest) -> tuple[dict[str, Any], tuple[str, ...]]:
        system, contents = messages_to_gemini(request.messages, self._turns)
        config: dict[str, Any] = {}
        if system:
            config["system_instruction"] = system
        if request.max_tokens is not None:
            config["max_output_tokens"] = request.max_tokens
        if request.tools:
            declarations = [_declare(t) for t in request.tools]
            config["tools"] = [types.Tool(function_declarations=declarations)]
            mode = _MODES[request.tool_choice]
            config["tool_config"] = types.ToolConfig(
                function_calling_config=types.FunctionCallingConfig(mode=mode)  # type: ignore[arg-type]
            )
        notes = self._add_thinking(config, request)
        kwargs = {
            "model": self._model,
            "contents": contents,
            "config": types.GenerateContentConfig(**config),
        }
        return kwargs, notes

    def _add_thinking(self, config: dict[str, Any], request: ModelRequest) -> tuple[str, ...]:
        effort = request.reasoning_effort or self._reasoning_effort
        if not effort:
            return ()
        name = self._model.lower()
        if name.startswith("gemini-3"):
            level = "low" if effort in ("none", "minimal", "low") else "high"
            config["thinking_config"] = types.ThinkingConfig(thinking_level=level)  # type: ignore[arg-type]
            return ()
        if not name.startswith("gemini-2.5"):
            return (f"reasoning_effort={effort!r} ignored: {self._model} has no thinking",)
        budget = THINKING_BUDGETS.get(effort)
        if budget is None:
            known = ", ".join(THINKING_BUDGETS)
            return (f"reasoning_effort={effort!r} ignored: expected one of {known}",)
        if budget == 0 and "pro" in name:
            budget = PRO_MIN_BUDGET  # Pro models cannot switch thinking off
        config["thinking_config"] = types.ThinkingConfig(thinking_budget=budget)
        return ()

    async def _send(self, kwargs: dict[str, Any]) -> ModelResponse:
        where = {"provider": PROVIDER, "model": self._model}
        try:
            response = await self._client.aio.models.generate_content(**kwargs)
        except genai_errors.APIError as error:
            headers = dict(error.response.headers) if error.response is not None else {}
            delay = retry_delay(error.details)
            if delay is not None:
                headers.setdefault("retry-after", delay)
            raise status_error(error.code, error.details, headers, **where) from error
        except _TRANSPORT as error:
            timed_out = isinstance(error, _TIMEOUT)
            raise connection_error(error, timed_out=timed_out, **where) from error
        except ValueError as error:  # the body was not JSON at all
            raise self._not_an_answer(200, None) from error
        if not response.candidates and response.prompt_feedback is None:
            http = response.sdk_http_response
            content_type = (http.headers or {}).get("content-type") if http else None
            raise self._not_an_answer(200, content_type)
        return self._translate(response)

    def _translate(self, response: types.GenerateContentResponse) -> ModelResponse:
        content = response.candidates[0].content if response.candidates else None
        calls = []
        for part in (content.parts or []) if content is not None else []:
            call = part.function_call
            if call is not None:
                calls.append(self._tool_call(call))
        if calls and content is not None:
            self._turns[calls[0].id] = content
            while len(self._turns) > _TURN_CACHE_LIMIT:
                del self._turns[next(iter(self._turns))]
        return response_to_answer(response, tuple(calls), self._model)

    def _tool_call(self, call: types.FunctionCall) -> ToolCall:
        self._calls += 1
        call_id = call.id or f"{SYNTHETIC_ID}{self._calls}"
        name = call.name or ""
        if call.args is None or isinstance(call.args, dict):
            return ToolCall(id=call_id, name=name, arguments=dict(call.args or {}))
        error = f"arguments must be a JSON object, got {type(call.args).__name__}"
        return ToolCall(id=call_id, name=name, arguments_error=error)


def retry_delay(details: Any) -> str | None:
    """Seconds from the ``RetryInfo`` detail of a Google API error (``"24s"`` -> ``"24"``).

    The Gemini API says when to come back in the error body rather than in a
    ``Retry-After`` header.
    """
    error = details.get("error") if isinstance(details, dict) else None
    for item in error.get("details", []) if isinstance(error, dict) else []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("RetryInfo"):
            delay = str(item.get("retryDelay", ""))
            return delay.removesuffix("s") or None
    return None


def _declare(tool: ToolDefinition) -> types.FunctionDeclaration:
    return types.FunctionDeclaration(
        name=tool.name, description=tool.description, parameters_json_schema=tool.parameters
    )


def messages_to_gemini(
    messages: tuple[Message, ...], turns: dict[str, types.Content] | None = None
) -> tuple[str, list[types.Content]]:
    """The system instruction, and alternating user/model contents."""
    system: list[str] = []
    contents: list[types.Content] = []
    for message in messages:
        if message.role == "system":
            system.append(message.content)
            continue
        kept = turns.get(message.tool_calls[0].id) if turns and message.tool_calls else None
        if kept is not None:
            content = kept.model_copy(deep=True)
            content.role = "model"
        else:
            role = "model" if message.role == "assistant" else "user"
            content = types.Content(role=role, parts=_parts(message))
        if contents and contents[-1].role == content.role:
            contents[-1].parts = [*(contents[-1].parts or []), *(content.parts or [])]
        else:
            contents.append(content)
    for content in contents:
        if not content.parts:
            content.parts = [types.Part(text="(empty)")]  # the API rejects empty turns
    return "\n\n".join(part for part in system if part), contents


def _parts(message: Message) -> list[types.Part]:
    if message.role == "tool":
        key = "error" if message.is_error else "output"
        response = types.FunctionResponse(
            id=_sent_id(message.tool_call_id), name=message.name, response={key: message.content}
        )
        return [types.Part(function_response=response)]
    parts = [types.Part(text=message.content)] if message.content else []
    parts.extend(
        types.Part(
            function_call=types.FunctionCall(
                id=_sent_id(call.id), name=call.name, args=call.arguments
            )
        )
        for call in message.tool_calls
    )
    return parts


def _sent_id(call_id: str | None) -> str | None:
    """The id to send: the API's own, never one made up here."""
    return None if call_id is None or call_id.startswith(SYNTHETIC_ID) else call_id


def response_to_answer(
    response: types.GenerateContentResponse, calls: tuple[ToolCall, ...], model: str
) -> ModelResponse:
    """Translate a reply whose tool calls were already taken out."""
    candidate = response.candidates[0] if response.candidates else None
    text = ""
    if candidate is not None and candidate.content is not None:
        # Thought summaries are the model's notes to itself, not its answer.
        text = "".join(p.text for p in candidate.content.parts or [] if p.text and not p.thought)
    return ModelResponse(
        text=text,
        tool_calls=calls,
        usage=usage_of(response.usage_metadata),
        finish_reason=_finish(candidate, bool(calls)),
        model=response.model_version or model,
        provider=PROVIDER,
    )


def _finish(candidate: types.Candidate | None, has_calls: bool) -> FinishReason:
    if candidate is None:
        return "content_filter"  # the prompt itself was blocked
    raw = candidate.finish_reason.value if candidate.finish_reason is not None else "STOP"
    mapped = _FINISH.get(raw, "other")
    return "tool_calls" if has_calls and mapped == "stop" else mapped


def usage_of(metadata: types.GenerateContentResponseUsageMetadata | None) -> Usage | None:
    """Token counts; thinking tokens are billed as output and counted there."""
    if metadata is None:
        return None
    thoughts = metadata.thoughts_token_count or 0
    return Usage(
        metadata.prompt_token_count or 0,
        (metadata.candidates_token_count or 0) + thoughts,
        cache_read_tokens=metadata.cached_content_token_count or 0,
        reasoning_tokens=thoughts,
    )
