"""What the SDK-backed adapters share: retries around one send, and error mapping.

The openai and anthropic SDKs are built from the same generator and name their
exceptions alike, so one translation serves both. Subclasses build the request
keywords and perform a plain or a streaming send; this base does the rest. The
Gemini adapter keeps the retries and replaces :meth:`SdkModel._send`, since
google-genai raises errors of its own.
"""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType
from typing import Any, ClassVar

from attractor.errors import ProviderError
from attractor.llm.retry import (
    RetryPolicy,
    call_with_retries,
    connection_error,
    not_an_answer,
    status_error,
)
from attractor.llm.types import ModelRequest, ModelResponse


class SdkModel:
    """Base of the OpenAI (Chat Completions and Responses), Anthropic and Gemini adapters."""

    #: Provider key, e.g. ``openai``.
    PROVIDER: ClassVar[str]
    #: What a good answer is called in errors, e.g. ``a chat completion``.
    ANSWER: ClassVar[str]

    _model: str
    _stream: bool
    _retry: RetryPolicy
    _client: Any

    def _sdk(self) -> ModuleType:
        """The SDK module whose exception classes :meth:`_send` translates."""
        raise NotImplementedError

    @property
    def provider(self) -> str:
        return self.PROVIDER

    @property
    def name(self) -> str:
        return self._model

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send one request, retrying transient failures."""
        kwargs, notes = self._build_kwargs(request)

        async def attempt() -> ModelResponse:
            return await self._send(kwargs)

        response = await call_with_retries(attempt, self._retry)
        if notes:
            response = replace(response, notes=response.notes + notes)
        return response

    async def aclose(self) -> None:
        await self._client.close()

    def _build_kwargs(self, request: ModelRequest) -> tuple[dict[str, Any], tuple[str, ...]]:
        """The SDK call's keywords, and notes on what was ignored."""
        raise NotImplementedError

    async def _send_plain(self, kwargs: dict[str, Any]) -> ModelResponse:
        raise NotImplementedError

    async def _send_streaming(self, kwargs: dict[str, Any]) -> ModelResponse:
        raise NotImplementedError

    async def _send(self, kwargs: dict[str, Any]) -> ModelResponse:
        sdk = self._sdk()
        where = {"provider": self.PROVIDER, "model": self._model}
        try:
            if self._stream:
                return await self._send_streaming(kwargs)
            return await self._send_plain(kwargs)
        except sdk.APIStatusError as error:
            headers = error.response.headers
            raise status_error(error.status_code, error.body, headers, **where) from error
        except sdk.APIConnectionError as error:
            timed_out = isinstance(error, sdk.APITimeoutError)
            url = str(error.request.url) if getattr(error, "request", None) else None
            raise connection_error(error, timed_out=timed_out, url=url, **where) from error
        except sdk.APIResponseValidationError as error:
            raise ProviderError(
                f"unexpected response: {error.message}",
                provider=self.PROVIDER,
                model=self._model,
            ) from error
        except sdk.APIError as error:
            # An error event inside a stream: the server hit trouble mid-answer.
            raise connection_error(error, timed_out=False, **where) from error

    def _not_an_answer(self, status: int, content_type: str | None) -> ProviderError:
        """A 200 reply that is not :attr:`ANSWER` (a web page, plain text...)."""
        return not_an_answer(
            self.ANSWER,
            status=status,
            content_type=content_type,
            provider=self.PROVIDER,
            model=self._model,
        )
