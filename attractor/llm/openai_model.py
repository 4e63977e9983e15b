"""OpenAI adapter on the official SDK's Chat Completions API.

The same adapter drives any OpenAI-compatible server (llama.cpp, Ollama, vLLM,
LM Studio) through ``base_url``; such a server gets no API key unless one is
named for it (:mod:`attractor.llm.credentials`).
"""

from __future__ import annotations

import importlib.util
import json
import operator
import os
import re
from collections.abc import Sequence
from dataclasses import field
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from attractor.errors import ProviderError, ProviderNotInstalledError
from attractor.llm.connections import shelf_client
from attractor.llm.credentials import is_official, resolve_key
from attractor.llm.openai_http import CHAT_PATH, endpoint, http_client, post, split_base_url
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
    ToolDefinition,
    Usage,
)
from attractor.valueclass import mutable

# The SDK is imported when first needed (_openai), but a module without it installed
# says so at once, as every adapter does.
if importlib.util.find_spec("openai") is None:
    raise ProviderNotInstalledError("openai", "openai")

if TYPE_CHECKING:
    from openai import AsyncOpenAI, RequestOptions
    from openai.types.chat import ChatCompletionChunk


def _openai() -> ModuleType:
    """The OpenAI SDK, imported when first needed: a streamed answer, the Responses
    API (its import costs about 0.4 s; plain answers go without it, see openai_http)."""
    try:
        import openai
    except ImportError as exc:
        raise ProviderNotInstalledError("openai", "openai") from exc
    return openai


PROVIDER = "openai"
BASE_URL_ENV = "OPENAI_BASE_URL"
# The SDK insists on a key; this one is never sent (see client_options).
PLACEHOLDER_KEY = "not-sent"
DEFAULT_TIMEOUT = 600.0

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "content_filter": "content_filter",
}
_REASONING_MODEL = re.compile(r"^(o[1-9]|gpt-5)")
_NO_REASONING_PARAM = ("o1-mini", "o1-preview")


def client_options(
    api_key: str | None, api_key_env: str | None, base_url: str | None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``AsyncOpenAI`` keywords and the per-request ``create`` ones (``OPENAI_BASE_URL``
    if None).

    The key follows :func:`attractor.llm.credentials.resolve_key`. Without one,
    no ``Authorization`` header is sent at all (the SDK's own fallback to
    ``OPENAI_API_KEY`` is shut off), and a server other than OpenAI's gets none
    of the ``OPENAI_ORG_ID``/``OPENAI_PROJECT_ID`` headers either.

    Raises:
        MissingCredentialsError: the key's variable is not set.
    """
    openai = _openai()
    base_url = base_url or os.environ.get(BASE_URL_ENV) or None
    key = resolve_key(PROVIDER, base_url, api_key=api_key, api_key_env=api_key_env)
    client: dict[str, Any] = {
        "api_key": key or PLACEHOLDER_KEY,
        "base_url": base_url,
        # The SDK's client with its own defaults, but the process's one TLS context
        # and a transport whose cost per request stays flat in a wide fan-out.
        "http_client": shelf_client(openai.DefaultAsyncHttpxClient),
    }
    if base_url:
        # The SDK appends its paths to the URL as written: a query would end up
        # before ``/chat/completions``.
        client["base_url"], query = split_base_url(base_url)
        if query:
            client["default_query"] = query
    # An explicit Authorization (the key, or none) also keeps the SDK from taking one
    # from OPENAI_CUSTOM_HEADERS: which server gets a key is resolve_key's to decide.
    omit = openai.Omit()
    headers: dict[str, Any] = {"Authorization": f"Bearer {key}" if key else omit}
    if not is_official(PROVIDER, base_url):
        headers |= {"OpenAI-Organization": omit, "OpenAI-Project": omit}
    client["default_headers"] = headers
    # The SDK accepts an omitted Authorization header only per request.
    per_request = {} if key else {"extra_headers": {"Authorization": openai.Omit()}}
    return client, per_request


def is_hosted_openai(base_url: str) -> bool:
    """True when ``base_url`` is OpenAI's hosted API (api.openai.com or a regional host)."""
    # A URL written without a scheme ("api.openai.com/v1") has no netloc otherwise.
    split = urlsplit(base_url if "//" in base_url else f"//{base_url}")
    host = (split.hostname or "").rstrip(".")
    return host == "openai.com" or host.endswith(".openai.com")


def supports_reasoning_effort(model: str) -> bool:
    """True for models that take ``reasoning_effort`` (o-series, gpt-5 family)."""
    name = model.lower()
    if name.startswith(_NO_REASONING_PARAM) or "-chat" in name:
        return False
    return _REASONING_MODEL.match(name) is not None


class OpenAIModel(SdkModel):
    """A :class:`~attractor.llm.types.Model` backed by Chat Completions.

    Args:
        model: Model id sent to the server.
        api_key: The key to send, given in code (else see ``api_key_env``).
        base_url: An OpenAI-compatible server, e.g. ``http://127.0.0.1:8080/v1``.
        api_key_env: The variable holding the key; None: ``OPENAI_API_KEY`` for
            OpenAI's own service, no key for any other server.
        stream: Ask for a streamed answer and assemble it (text and tool calls).
        parallel_tool_calls: ``False`` asks for at most one tool call per turn;
            ``None`` leaves the server default.
        reasoning_effort: Default effort when a request names none.
        retry: Retry policy for transient failures.
        timeout: Seconds before one HTTP attempt times out.
    """

    PROVIDER = PROVIDER
    ANSWER = "a chat completion"

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
        self._base_url = base_url
        self._stream = stream
        self._parallel_tool_calls = parallel_tool_calls
        self._reasoning_effort = reasoning_effort
        self._retry = retry
        #: Each message's wire form by ``id``, encoded, with the message (so the
        #: id stays its own): a request resends the conversation, each message is
        #: converted and encoded once. Cleared when it grows past :data:`_WIRE_CACHE`.
        self._wire: dict[int, tuple[Message, bytes]] = {}
        #: The messages of the last request and their encoded forms (see ``_messages``).
        self._last: tuple[tuple[Message, ...], list[bytes]] = ((), [])
        #: The tools of the last request that offered any, and their encoded list.
        self._tools: tuple[tuple[ToolDefinition, ...], bytes] = ((), b"[]")
        # Plain answers go over httpx alone; the SDK's client is made for the first
        # streamed one (see openai_http). The key is resolved now: a missing one stops
        # the run before anything is sent.
        chosen = base_url or os.environ.get(BASE_URL_ENV) or None
        key = resolve_key(PROVIDER, chosen, api_key=api_key, api_key_env=api_key_env)
        self._endpoint = endpoint(PROVIDER, chosen, key)
        self._http = http_client(timeout)
        self._sdk_args = (api_key, api_key_env, base_url, timeout)
        self._client: AsyncOpenAI | None = None
        self._options: RequestOptions = {}

    def _sdk(self) -> ModuleType:
        return _openai()

    def _sdk_client(self) -> AsyncOpenAI:
        """The SDK's client, for streamed answers (made on first use)."""
        if self._client is None:
            api_key, api_key_env, base_url, timeout = self._sdk_args
            client, per_request = client_options(api_key, api_key_env, base_url)
            # max_retries=0: our retry policy is the only one.
            self._client = self._sdk().AsyncOpenAI(**client, max_retries=0, timeout=timeout)
            # What ``create`` would send besides the body: its auth, and the headers
            # given per request (an omitted Authorization).
            self._options = {"security": {"bearer_auth": True}}
            if "extra_headers" in per_request:
                self._options["headers"] = per_request["extra_headers"]
        return self._client

    async def aclose(self) -> None:
        try:
            await self._http.aclose()
        finally:
            if self._client is not None:
                await self._client.close()

    def _messages(self, messages: Sequence[Message]) -> list[bytes]:
        # A session's request is its previous one plus a few messages: when the
        # previous request's messages open this one (the very objects, compared
        # at C speed), its encoded list is reused and only the rest is looked up,
        # so a turn's cost does not grow with the conversation in Python code.
        last, last_wire = self._last
        if last and len(messages) >= len(last) and all(map(operator.is_, last, messages)):
            out, rest = last_wire.copy(), messages[len(last) :]
        else:
            out, rest = [], messages
        wire = self._wire
        if len(wire) > _WIRE_CACHE:
            wire.clear()
        for message in rest:
            known = wire.get(id(message))
            if known is None or known[0] is not message:
                known = wire[id(message)] = (message, _dumps(message_to_openai(message)))
            out.append(known[1])
        self._last = (tuple(messages), out)  # copied before it is added to (callers only read it)
        return out

    def _encoded_tools(self, tools: tuple[ToolDefinition, ...]) -> bytes:
        # A session offers the same tools every turn: encoded once, not per request.
        if tools != self._tools[0]:
            self._tools = (tools, _dumps([tool_to_openai(t) for t in tools]))
        return self._tools[1]

    def _build_kwargs(self, request: ModelRequest) -> tuple[dict[str, Any], tuple[str, ...]]:
        # The body's fields in the order ``create`` sends them.
        head: dict[str, Any] = {"model": self._model}
        fields: dict[str, Any] = {}
        if self._stream:
            head["stream"] = True
            fields["stream_options"] = {"include_usage": True}
        if request.max_tokens is not None:
            # Hosted OpenAI wants the newer name (o-series refuse max_tokens);
            # compatible servers reliably know only the older one.
            key = "max_tokens" if self._base_url else "max_completion_tokens"
            fields[key] = request.max_tokens
        tail: dict[str, Any] = {}
        if request.tools:
            tail["tool_choice"] = request.tool_choice
            if self._parallel_tool_calls is not None:
                tail["parallel_tool_calls"] = self._parallel_tool_calls
        notes: tuple[str, ...] = ()
        effort = request.reasoning_effort or self._reasoning_effort
        if effort and supports_reasoning_effort(self._model):
            tail["reasoning_effort"] = effort
        elif effort:
            notes = (f"reasoning_effort={effort!r} ignored: {self._model} does not support it",)
        messages = b",".join(self._messages(request.messages))
        parts = [_dumps(head)[:-1], b',"messages":[', messages, b"]", *_members(fields)]
        if request.tools:
            parts += [b',"tools":', self._encoded_tools(request.tools)]
        parts += [*_members(tail), b"}"]
        return {"content": b"".join(parts)}, notes

    async def _send(self, kwargs: dict[str, Any]) -> ModelResponse:
        if self._stream:
            return await super()._send(kwargs)  # through the SDK: its errors translated
        return await self._send_plain(kwargs)

    async def _send_plain(self, kwargs: dict[str, Any]) -> ModelResponse:
        # The HTTP response itself: its status and content type make a clear error
        # when a 200 answer is not a completion, and its JSON is read here.
        raw = await post(
            self._http, self._endpoint, kwargs["content"], provider=PROVIDER, model=self._model
        )
        status, content_type = raw.status_code, raw.headers.get("content-type")
        try:
            return completion_from_json(json.loads(raw.content), self._model)
        except (ValueError, LookupError, AttributeError, TypeError) as error:
            # Undecodable JSON, or JSON of another shape (fields missing or None).
            raise self._not_an_answer(status, content_type) from error

    async def _send_streaming(self, kwargs: dict[str, Any]) -> ModelResponse:
        from openai import AsyncStream
        from openai.types.chat import ChatCompletion, ChatCompletionChunk

        client = self._sdk_client()
        assembler = StreamAssembler()
        stream = await client.post(
            CHAT_PATH,
            cast_to=ChatCompletion,
            content=kwargs["content"],
            options=self._options,
            stream=True,
            stream_cls=AsyncStream[ChatCompletionChunk],
        )
        status = stream.response.status_code
        content_type = stream.response.headers.get("content-type")
        async with stream:
            try:
                async for chunk in stream:
                    assembler.add(chunk)
            except (AttributeError, TypeError) as error:  # events that are not chunks
                raise self._not_an_answer(status, content_type) from error
        if assembler.chunks == 0:
            # A page or a JSON body holds no server-sent events at all.
            raise self._not_an_answer(status, content_type)
        return assembler.response(self._model)


#: How many messages' wire forms a model keeps (see ``OpenAIModel._wire``).
_WIRE_CACHE = 20_000


def _dumps(value: object) -> bytes:
    """``value`` as the SDK encodes a request body (``openai._utils._json``): UTF-8
    JSON, no ASCII escapes, no spaces, no NaN.

    The body is encoded here, a message at a time, and handed to the SDK as
    content: the SDK would encode the whole conversation again on every request
    (a cost that grows with each turn), after walking every field against its
    typed dicts (about 3 ms of CPU a request with the agent's tool schemas).
    """
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def _members(fields: dict[str, Any]) -> list[bytes]:
    """``fields`` as members of a JSON object, each after a comma."""
    return [b"," + _dumps(key) + b":" + _dumps(value) for key, value in fields.items()]


def message_to_openai(message: Message) -> dict[str, Any]:
    """One neutral message in the Chat Completions shape."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id, "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [_call_to_openai(call) for call in message.tool_calls],
        }
    return {"role": message.role, "content": message.content}


def _call_to_openai(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_json},
    }


def tool_to_openai(tool: ToolDefinition) -> dict[str, Any]:
    """One tool definition in the Chat Completions shape."""
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    }


def parse_arguments(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """Parse tool-call arguments; a bad payload yields an error text, never an exception."""
    if raw is None or not raw.strip():
        return {}, None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        return {}, f"arguments are not valid JSON ({error.msg}): {raw[:200]}"
    if not isinstance(value, dict):
        return {}, f"arguments must be a JSON object, got {type(value).__name__}: {raw[:200]}"
    return value, None


def make_tool_call(
    call_id: str | None, name: str, raw_arguments: str | None, index: int
) -> ToolCall:
    """A neutral tool call; servers that omit the id get a stable synthetic one."""
    arguments, error = parse_arguments(raw_arguments)
    return ToolCall(
        id=call_id or f"call_{index}",
        name=name,
        arguments=arguments,
        arguments_error=error,
    )


def finish_reason(raw: str | None, has_tool_calls: bool) -> FinishReason:
    """Map the server's finish reason; tool calls win over a plain ``stop``."""
    mapped: FinishReason = _FINISH_REASONS.get(raw or "stop", "other")
    if has_tool_calls and mapped == "stop":
        # Some compatible servers report "stop" even when they return tool calls.
        return "tool_calls"
    return mapped


def completion_from_json(data: Any, model: str) -> ModelResponse:
    """Translate a non-streamed completion as the server sent it (parsed JSON).

    Reads what the SDK's typed completion would say, and the same way: a missing
    field is None, as in the SDK's unvalidated models, and anything of another
    shape raises ``TypeError`` or ``AttributeError``.
    """
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise TypeError("choices is not a list")
    if not choices:
        raise ProviderError("response has no choices", provider=PROVIDER, model=model)
    choice = choices[0]
    message = choice.get("message")
    calls = _calls_from_json(message.get("tool_calls") or ())
    return ModelResponse(
        text=message.get("content") or "",
        tool_calls=calls,
        usage=usage_from_json(data.get("usage")),
        finish_reason=finish_reason(choice.get("finish_reason"), bool(calls)),
        model=data.get("model") or model,
        provider=PROVIDER,
    )


def _calls_from_json(items: Any) -> tuple[ToolCall, ...]:
    calls = []
    for index, item in enumerate(items):
        if item.get("type") == "function":
            function = item.get("function")
            name, arguments = function.get("name"), function.get("arguments")
            calls.append(make_tool_call(item.get("id"), name, arguments, index))
    return tuple(calls)


def usage_from_json(usage: Any) -> Usage | None:
    """Token counts of a completion's ``usage`` as the server sent it (a plain answer's,
    or a stream's last chunk's); OpenAI caches long prompts by itself and says so."""
    if usage is None:
        return None
    prompt = usage.get("prompt_tokens_details")
    completion = usage.get("completion_tokens_details")
    if prompt is None:
        prompt = {}
    if completion is None:
        completion = {}
    return Usage(
        _count(usage.get("prompt_tokens")),
        _count(usage.get("completion_tokens")),
        cache_read_tokens=_count(prompt.get("cached_tokens") or 0),
        cache_write_tokens=_count(prompt.get("cache_write_tokens") or 0),
        reasoning_tokens=_count(completion.get("reasoning_tokens") or 0),
    )


def _count(value: Any) -> Any:
    # The SDK's integer fields make a JSON true 1 (and false 0).
    return int(value) if isinstance(value, bool) else value


@mutable
class _PartialCall:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@mutable
class StreamAssembler:
    """Builds one :class:`ModelResponse` from streamed chunks, tool-call deltas included."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish: str | None = None
    usage: Usage | None = None
    model: str = ""
    chunks: int = 0

    def add(self, chunk: ChatCompletionChunk) -> None:
        """Fold one chunk into the answer so far."""
        self.chunks += 1
        self.model = self.model or chunk.model
        if chunk.usage is not None:
            # Read from the chunk's JSON, as a plain answer's usage is.
            self.usage = usage_from_json(chunk.usage.model_dump(warnings=False))
        for choice in chunk.choices[:1]:
            if choice.delta.content:
                self.text.append(choice.delta.content)
            for delta in choice.delta.tool_calls or ():
                partial = self.calls.setdefault(delta.index, _PartialCall())
                partial.id = partial.id or (delta.id or "")
                if delta.function is not None:
                    partial.name = partial.name or (delta.function.name or "")
                    partial.arguments.append(delta.function.arguments or "")
            self.finish = choice.finish_reason or self.finish

    def response(self, model: str) -> ModelResponse:
        """The assembled answer."""
        calls = tuple(
            make_tool_call(p.id, p.name, "".join(p.arguments), index)
            for index, p in sorted(self.calls.items())
        )
        return ModelResponse(
            text="".join(self.text),
            tool_calls=calls,
            usage=self.usage,
            finish_reason=finish_reason(self.finish, bool(calls)),
            model=self.model or model,
            provider=PROVIDER,
        )
