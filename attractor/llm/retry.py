"""Retry policy shared by the provider adapters.

The adapters turn every SDK failure into a :class:`~attractor.errors.ProviderError`
(see :func:`status_error`, :func:`connection_error`); :func:`call_with_retries` then
retries the transient ones (:class:`~attractor.errors.RetryableProviderError`) with
exponential backoff and jitter. The SDKs' own retries are switched off
(``max_retries=0``) so this is the only policy in force.

Cancellation is never caught here: ``anyio.sleep`` and the SDK calls are
cancellation points, so a cancelled scope aborts a wait or an in-flight request.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

import anyio

from attractor.errors import ProviderError, RetryableProviderError
from attractor.valueclass import frozen

T = TypeVar("T")

OnRetry = Callable[[RetryableProviderError, int, float], None]

_STATUS_LABELS = {
    400: "bad request",
    401: "authentication failed",
    403: "permission denied",
    404: "not found",
    408: "request timed out",
    409: "conflict",
    413: "request too large",
    422: "invalid request",
    429: "rate limited",
}
_REASON_LIMIT = 300


@frozen(kw_only=True)
class RetryPolicy:
    """How often and how patiently to retry transient provider failures.

    Attributes:
        max_retries: Retries after the first attempt (0 disables retrying).
        base_delay: Delay before the first retry, in seconds.
        multiplier: Growth factor of the delay per retry.
        max_delay: Cap on a computed backoff delay.
        jitter: Fraction of random spread around each computed delay (0.5 = +/-50%).
        max_retry_after: Longest server-requested wait (Retry-After) honoured;
            a longer request fails at once rather than stalling the run. Ten
            minutes: rate limits often reset within that, the run's --timeout
            still bounds the whole run, and cancellation interrupts the wait.
        on_retry: Called with (error, retry number, delay) before each wait.
    """

    max_retries: int = 4
    base_delay: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 30.0
    jitter: float = 0.5
    max_retry_after: float = 600.0
    on_retry: OnRetry | None = None

    def delay(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``retry`` (0-based)."""
        if retry_after is not None:
            # The server knows best when it will have capacity again.
            return max(0.0, retry_after)
        computed = min(self.base_delay * self.multiplier**retry, self.max_delay)
        spread = random.uniform(1 - self.jitter, 1 + self.jitter)  # jitter, not crypto
        return computed * spread


DEFAULT_POLICY = RetryPolicy()


async def call_with_retries(
    call: Callable[[], Awaitable[T]], policy: RetryPolicy = DEFAULT_POLICY
) -> T:
    """Run ``call`` and retry it on :class:`RetryableProviderError`.

    Raises:
        RetryableProviderError: the failure persisted after all retries; its
            reason says how many attempts were made.
        ProviderError: a failure that retrying cannot fix, raised at once.
    """
    retry = 0
    while True:
        try:
            return await call()
        except RetryableProviderError as error:
            if retry >= policy.max_retries:
                raise _gave_up(error, retry + 1) from error
            if error.retry_after is not None and error.retry_after > policy.max_retry_after:
                raise _gave_up(error, retry + 1, policy.max_retry_after) from error
            wait = policy.delay(retry, error.retry_after)
            if policy.on_retry is not None:
                policy.on_retry(error, retry + 1, wait)
            await anyio.sleep(wait)
            retry += 1


def _gave_up(
    error: RetryableProviderError, attempts: int, wait_limit: float | None = None
) -> RetryableProviderError:
    """The final error: the last failure, how many attempts were made, and why no more."""
    waited = ""
    if error.retry_after is not None:
        waited = f"; server asked to wait {error.retry_after:g}s"
        if wait_limit is not None:
            waited += f", longer than the {wait_limit:g}s attractor waits"
    return RetryableProviderError(
        f"{error.reason} (gave up after {attempts} attempt{'s' if attempts > 1 else ''}{waited})",
        provider=error.provider,
        model=error.model,
        status=error.status,
        retry_after=error.retry_after,
    )


def is_retryable_status(status: int) -> bool:
    """True for statuses worth retrying: 408, 409, 429 and every 5xx."""
    return status in (408, 409, 429) or status >= 500


def status_error(
    status: int,
    body: object,
    headers: Mapping[str, str],
    *,
    provider: str,
    model: str,
) -> ProviderError:
    """Translate an HTTP error answer into the right :class:`ProviderError`."""
    label = _STATUS_LABELS.get(status, "server error" if status >= 500 else "request failed")
    detail = error_detail(body)
    reason = _shorten(f"{label}: {detail}" if detail else label)
    if is_retryable_status(status):
        return RetryableProviderError(
            reason,
            provider=provider,
            model=model,
            status=status,
            retry_after=retry_after_seconds(headers),
        )
    return ProviderError(reason, provider=provider, model=model, status=status)


def connection_error(
    cause: BaseException, *, timed_out: bool, provider: str, model: str, url: str | None = None
) -> RetryableProviderError:
    """A transient failure with no HTTP answer: a timeout or a connection problem
    (``url``: where the request went, said when known: a wrong --base-url shows)."""
    at = f" ({url})" if url else ""
    if timed_out:
        reason = f"request timed out{at}"
    else:
        root = cause.__cause__ or cause
        said = f": {root}" if str(root) else ""
        reason = _shorten(f"connection failed{said}{at}")
    return RetryableProviderError(reason, provider=provider, model=model)


def not_an_answer(
    expected: str,
    *,
    status: int | None,
    content_type: str | None,
    provider: str,
    model: str,
) -> ProviderError:
    """A successful HTTP answer whose body is not what the API returns.

    Usually the base URL points at something else (a web page, a proxy's login
    page, another API); retrying will not help, so the error is permanent.
    """
    kind = (content_type or "").split(";")[0].strip()
    got = f" (got {kind})" if kind else ""
    return ProviderError(
        f"the server did not answer with {expected}{got}; check --base-url",
        provider=provider,
        model=model,
        status=status,
    )


def error_detail(body: object) -> str:
    """The human message inside an error body, in either OpenAI's or Anthropic's shape.

    OpenAI sends ``{"error": {"message", "type", ...}}`` (the SDKs pass the inner
    object); Anthropic sends ``{"type": "error", "error": {"type", "message"}}``.
    """
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            return error_detail(inner)
        message = body.get("message")
        kind = body.get("type")
        if isinstance(message, str) and message:
            if isinstance(kind, str) and kind and kind != "error":
                return f"{kind}: {message}"
            return message
        if isinstance(inner, str):
            return inner
    if isinstance(body, str):
        return body.strip()
    return ""


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait, from ``retry-after-ms`` or ``Retry-After``.

    ``Retry-After`` may be a number of seconds or an HTTP date.
    """
    lowered = {key.lower(): value for key, value in headers.items()}
    millis = _number(lowered.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    seconds = _number(raw)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _number(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw.strip())
    except ValueError:
        return None
    return value if value >= 0 else None


def _shorten(text: str) -> str:
    """Keep reasons to one short line: error bodies can be long or multi-line."""
    flat = " ".join(text.split())
    return flat if len(flat) <= _REASON_LIMIT else flat[: _REASON_LIMIT - 3] + "..."
