"""Anthropic adapter on the official SDK's Messages API.

Differences from the neutral types that this module absorbs: the system prompt is
a top-level parameter, tool results travel as ``tool_result`` blocks inside a user
turn, turns must alternate (consecutive same-role messages are merged) and
``max_tokens`` is mandatory.
"""

from __future__ import annotations

import json
import os
import re
from types import ModuleType
from typing import Any

from attractor.errors import ProviderNotInstalledError
from attractor.llm.connections import shelf_client
from attractor.llm.credentials import resolve_key
from attractor.llm.retry import (
    DEFAULT_POLICY,
    RetryPolicy,
)
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
    import anthropic
    from anthropic import AsyncAnthropic, Omit
    from anthropic.types import Message as AnthropicMessage
except ImportError as exc:
    raise ProviderNotInstalledError("anthropic", "anthropic") from exc

PROVIDER = "anthropic"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
# The SDK insists on a credential; this one is never sent (see client_options).
PLACEHOLDER_KEY = "not-sent"
DEFAULT_MAX_TOKENS = 4096
DEFAULT_TIMEOUT = 600.0

# Extended-thinking budget per effort level; the API's minimum budget is 1024.
THINKING_BUDGETS = {
    "minimal": 1024,
    "low": 2048,
    "medium": 8192,
    "high": 16384,
    "xhigh": 24576,
    "max": 32000,
}
_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content_filter",
}
_EPHEMERAL = {"type": "ephemeral"}
_TOOL_CHOICES: dict[ToolChoice, str] = {"auto": "auto", "required": "any", "none": "none"}
_THINKING_MODEL = re.compile(r"^claude-(?:3-7-|(?:opus|sonnet|haiku)-(\d+))")
# Thinking blocks kept for round-tripping; only the latest turns ever need them.
_THINKING_CACHE_LIMIT = 64


def client_options(
    api_key: str | None, api_key_env: str | None, base_url: str | None
) -> dict[str, Any]:
    """The ``AsyncAnthropic`` keywords for ``base_url`` (``ANTHROPIC_BASE_URL`` if None).

    The key follows :func:`attractor.llm.credentials.resolve_key`. Without one,
    neither ``X-Api-Key`` nor ``Authorization`` is sent (the SDK's own fallback
    to ``ANTHROPIC_API_KEY``, ``ANTHROPIC_AUTH_TOKEN`` and profiles is shut off).

    Raises:
        MissingCredentialsError: the key's variable is not set.
    """
    base_url = base_url or os.environ.get(BASE_URL_ENV) or None
    key = resolve_key(PROVIDER, base_url, api_key=api_key, api_key_env=api_key_env)
    options: dict[str, Any] = {
        "api_key": key or PLACEHOLDER_KEY,
        "base_url": base_url,
        # The SDK's client with its defaults and TCP keep-alive, on the process's one TLS
        # context and a transport whose cost per request stays flat in a wide fan-out.
        "http_client": shelf_client(anthropic.DefaultAsyncHttpxClient, tcp_keepalive=True),
    }
    if not key:
        options["default_headers"] = {"X-Api-Key": Omit(), "Authorization": Omit()}
    return options


def supports_thinking(model: str) -> bool:
    """True for models with extended thinking (Claude 3.7 and Claude 4 onwards)."""
    match = _THINKING_MODEL.match(model.lower())
    if match is None:
        return False
    major = match.group(1)
    return major is None or int(major) >= 4


class AnthropicModel(SdkModel):
    """A :class:`~attractor.llm.types.Model` backed by the Messages API.

    Args:
        model: Model id, e.g. ``claude-sonnet-4-5``.
        api_key: The key to send, given in code (else see ``api_key_env``).
        base_url: Another Messages endpoint (a proxy or a test server).
        api_key_env: The variable holding the key; None: ``ANTHROPIC_API_KEY``
            for Anthropic's own service, no key for any other endpoint.
        max_tokens: Output cap when a request sets none (the API requires one).
        stream: Receive the answer as a stream and assemble it.
        parallel_tool_calls: ``False`` asks for at most one tool call per turn.
        reasoning_effort: Default effort when a request names none.
        retry: Retry policy for transient failures.
        timeout: Seconds before one HTTP attempt times out.
        prompt_cache: Mark the stable prefix (tools, system prompt, conversation
            so far) with cache breakpoints, so later turns read it from the cache.
    """

    PROVIDER = PROVIDER
    ANSWER = "a Messages API reply"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        api_key_env: str | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        stream: bool = False,
        parallel_tool_calls: bool | None = None,
        reasoning_effort: str | None = None,
        retry: RetryPolicy = DEFAULT_POLICY,
        timeout: float = DEFAULT_TIMEOUT,
        prompt_cache: bool = True,
    ) -> None:
        self._model = model
        self._prompt_cache = prompt_cache
        self._max_tokens = max_tokens
        self._stream = stream
        self._parallel_tool_calls = parallel_tool_calls
        self._reasoning_effort = reasoning_effort
        self._retry = retry
        # tool_use id -> thinking blocks of the turn that made the call; the API
        # wants them back unchanged when that turn is replayed.
        self._thinking: dict[str, list[dict[str, Any]]] = {}
        self._client = AsyncAnthropic(
            **client_options(api_key, api_key_env, base_url),
            max_retries=0,  # our retry policy is the only one
            timeout=timeout,
        )

    def _sdk(self) -> ModuleType:
        return anthropic

    def _build_kwargs(self, request: ModelRequest) -> tuple[dict[str, Any], tuple[str, ...]]:
        # Without tools on this request (final and reflection turns), history is
        # sent as text: some deployments reject tool blocks without a tools list.
        system, turns = messages_to_anthropic(
            request.messages, self._thinking, tool_blocks=bool(request.tools)
        )
        kwargs: dict[str, Any] = {
            "model": self._model,
            "max_tokens": request.max_tokens or self._max_tokens,
            "messages": turns,
        }
        if system:
            kwargs["system"] = [{"type": "text", "text": system}]
        if request.tools:
            kwargs["tools"] = [tool_to_anthropic(t) for t in request.tools]
            kwargs["tool_choice"] = self._tool_choice(request.tool_choice)
        if self._prompt_cache:
            add_cache_breakpoints(kwargs)
        notes = self._add_thinking(kwargs, request)
        return kwargs, notes

    def _tool_choice(self, choice: ToolChoice) -> dict[str, Any]:
        param: dict[str, Any] = {"type": _TOOL_CHOICES[choice]}
        if self._parallel_tool_calls is False and choice != "none":
            param["disable_parallel_tool_use"] = True
        return param

    def _add_thinking(self, kwargs: dict[str, Any], request: ModelRequest) -> tuple[str, ...]:
        """Map reasoning effort to a thinking budget; return notes when it cannot be."""
        effort = request.reasoning_effort or self._reasoning_effort
        if not effort or effort == "none":
            return ()
        ignored = f"reasoning_effort={effort!r} ignored"
        if not supports_thinking(self._model):
            return (f"{ignored}: {self._model} has no extended thinking",)
        budget = THINKING_BUDGETS.get(effort)
        if budget is None:
            return (f"{ignored}: expected one of {', '.join(THINKING_BUDGETS)}",)
        if request.tools and request.tool_choice == "required":
            return (f"{ignored}: thinking cannot be combined with a required tool call",)
        kwargs["thinking"] = {"type": "enabled", "budget_tokens": budget}
        # The budget counts against max_tokens, which must stay larger than it.
        kwargs["max_tokens"] += budget
        return ()

    async def _send_plain(self, kwargs: dict[str, Any]) -> ModelResponse:
        # The raw response keeps the status and content type for a clear error
        # when a 200 answer is not a message (the SDK would hand back a str, or
        # raise a bare JSONDecodeError).
        raw = await self._client.messages.with_raw_response.create(**kwargs)
        status, content_type = raw.status_code, raw.headers.get("content-type")
        try:
            message = await raw.parse()
            if isinstance(message, AnthropicMessage):
                return self._translate(message)
        except (ValueError, AttributeError, TypeError) as error:
            # Undecodable JSON, or JSON of another shape (fields missing or None).
            raise self._not_an_answer(status, content_type) from error
        raise self._not_an_answer(status, content_type)

    async def _send_streaming(self, kwargs: dict[str, Any]) -> ModelResponse:
        async with self._client.messages.stream(**kwargs) as stream:
            status = stream.response.status_code
            content_type = stream.response.headers.get("content-type")
            try:
                return self._translate(await stream.get_final_message())
            except (AssertionError, AttributeError, TypeError) as error:
                # The SDK asserts when no message_start event ever came: the body
                # was not a Messages stream at all.
                raise self._not_an_answer(status, content_type) from error

    def _translate(self, message: AnthropicMessage) -> ModelResponse:
        response, thinking = message_to_response(message, self._model)
        if thinking:
            for call in response.tool_calls:
                self._thinking[call.id] = thinking
            while len(self._thinking) > _THINKING_CACHE_LIMIT:
                del self._thinking[next(iter(self._thinking))]
        return response


def messages_to_anthropic(
    messages: tuple[Message, ...],
    thinking: dict[str, list[dict[str, Any]]] | None = None,
    *,
    tool_blocks: bool = True,
) -> tuple[str, list[dict[str, Any]]]:
    """Split out the system prompt and build alternating user/assistant turns.

    With ``tool_blocks=False`` earlier tool calls and results become plain text
    blocks (``[called NAME {...}]``, ``[result of NAME: ...]``), for a request that
    offers no tools: the model still sees what happened, and no deployment can
    reject ``tool_use`` blocks that lack a ``tools`` parameter.
    """
    system: list[str] = []
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            system.append(message.content)
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message, thinking or {}) if tool_blocks else _text_blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        if not turn["content"]:
            # The API rejects empty turns and empty text blocks alike.
            turn["content"] = [{"type": "text", "text": "(empty)"}]
    return "\n\n".join(part for part in system if part), turns


def _blocks(message: Message, thinking: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    if message.role == "tool":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        if message.is_error:
            result["is_error"] = True
        return [result]
    blocks: list[dict[str, Any]] = []
    if message.role == "assistant" and message.tool_calls:
        blocks.extend(thinking.get(message.tool_calls[0].id, ()))
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
        for call in message.tool_calls
    )
    return blocks


def _text_blocks(message: Message) -> list[dict[str, Any]]:
    """``message`` with its tool calls or tool result written out as text."""
    if message.role == "tool":
        what = "error from" if message.is_error else "result of"
        return [{"type": "text", "text": f"[{what} {message.name}: {message.content}]"}]
    blocks: list[dict[str, Any]] = []
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "text", "text": f"[called {call.name} {json.dumps(call.arguments)}]"}
        for call in message.tool_calls
    )
    return blocks


def add_cache_breakpoints(kwargs: dict[str, Any]) -> None:
    """Mark the stable prefix of a request for prompt caching.

    The API caches everything up to a block marked ``cache_control`` (tools come
    first, then the system prompt, then the messages) and allows four marks. They
    go on the last tool, the system prompt, the last user turn (so the next
    request reads the whole conversation so far from the cache) and the user turn
    before it (the entry the previous request wrote, read back even when a turn
    added more blocks than the API looks back over).
    """
    if kwargs.get("tools"):
        kwargs["tools"][-1] = {**kwargs["tools"][-1], "cache_control": _EPHEMERAL}
    if kwargs.get("system"):
        kwargs["system"][-1] = {**kwargs["system"][-1], "cache_control": _EPHEMERAL}
    user_turns = [turn for turn in kwargs["messages"] if turn["role"] == "user"]
    for turn in user_turns[-2:]:
        content = turn["content"]
        content[-1] = {**content[-1], "cache_control": _EPHEMERAL}


def tool_to_anthropic(tool: ToolDefinition) -> dict[str, Any]:
    """One tool definition in the Messages API shape."""
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def message_to_response(
    message: AnthropicMessage, model: str
) -> tuple[ModelResponse, list[dict[str, Any]]]:
    """Translate an answer; also return its thinking blocks for later round-tripping."""
    text: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[dict[str, Any]] = []
    for block in message.content:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            calls.append(_tool_call(block.id, block.name, block.input))
        elif block.type == "thinking":
            thinking.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        elif block.type == "redacted_thinking":
            thinking.append({"type": "redacted_thinking", "data": block.data})
    response = ModelResponse(
        text="".join(text),
        tool_calls=tuple(calls),
        usage=_usage(message),
        finish_reason=_STOP_REASONS.get(message.stop_reason or "end_turn", "other"),
        model=message.model or model,
        provider=PROVIDER,
    )
    return response, thinking


def _tool_call(call_id: str, name: str, arguments: object) -> ToolCall:
    if isinstance(arguments, dict):
        return ToolCall(id=call_id, name=name, arguments=arguments)
    error = f"arguments must be a JSON object, got {type(arguments).__name__}"
    return ToolCall(id=call_id, name=name, arguments_error=error)


def _usage(message: AnthropicMessage) -> Usage:
    usage = message.usage
    # Cached prompt tokens are reported apart from input_tokens; all were read.
    written = usage.cache_creation_input_tokens or 0
    read = usage.cache_read_input_tokens or 0
    return Usage(
        usage.input_tokens + written + read,
        usage.output_tokens,
        cache_read_tokens=read,
        cache_write_tokens=written,
    )
