"""The retry loop and its helpers, without any network."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import anyio
import pytest

from attractor.errors import ProviderError, RetryableProviderError
from attractor.llm.retry import (
    DEFAULT_POLICY,
    RetryPolicy,
    call_with_retries,
    error_detail,
    is_retryable_status,
    retry_after_seconds,
    status_error,
)

pytestmark = pytest.mark.anyio


def transient(status: int = 503, retry_after: float | None = None) -> RetryableProviderError:
    return RetryableProviderError(
        "server error", provider="p", model="m", status=status, retry_after=retry_after
    )


class Flaky:
    """Fails with the given errors in turn, then answers."""

    def __init__(self, *errors: Exception) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "answer"


async def test_transient_errors_are_retried_until_success() -> None:
    flaky = Flaky(transient(), transient(429))
    policy = RetryPolicy(base_delay=0.001)
    assert await call_with_retries(flaky, policy) == "answer"
    assert flaky.calls == 3


async def test_permanent_errors_are_raised_at_once() -> None:
    flaky = Flaky(ProviderError("bad", provider="p", model="m", status=400))
    with pytest.raises(ProviderError):
        await call_with_retries(flaky, RetryPolicy(base_delay=0.001))
    assert flaky.calls == 1


async def test_zero_retries_disables_retrying() -> None:
    flaky = Flaky(transient())
    with pytest.raises(RetryableProviderError, match="gave up after 1 attempt\\)"):
        await call_with_retries(flaky, RetryPolicy(max_retries=0))
    assert flaky.calls == 1


async def test_cancellation_during_backoff_is_not_swallowed() -> None:
    flaky = Flaky(*(transient() for _ in range(5)))
    policy = RetryPolicy(base_delay=30.0, jitter=0.0)
    with anyio.CancelScope() as scope:
        scope.cancel()
        await call_with_retries(flaky, policy)
    assert scope.cancelled_caught
    assert flaky.calls <= 1


async def test_a_retry_after_of_minutes_is_honoured_and_cancellation_interrupts_it() -> None:
    flaky = Flaky(transient(429, retry_after=300.0))
    waits: list[float] = []
    with anyio.CancelScope() as scope:

        def on_retry(error: RetryableProviderError, retry: int, wait: float) -> None:
            waits.append(wait)
            scope.cancel()  # the run's --timeout or Ctrl-C during the wait

        policy = replace(DEFAULT_POLICY, on_retry=on_retry)
        await call_with_retries(flaky, policy)
    assert waits == [300.0]
    assert scope.cancelled_caught and flaky.calls == 1


async def test_a_retry_after_beyond_ten_minutes_fails_at_once_saying_why() -> None:
    assert DEFAULT_POLICY.max_retry_after == 600
    flaky = Flaky(transient(429, retry_after=601.0))
    with pytest.raises(RetryableProviderError) as caught:
        await call_with_retries(flaky, DEFAULT_POLICY)
    assert flaky.calls == 1
    assert caught.value.reason == (
        "server error (gave up after 1 attempt; server asked to wait 601s, "
        "longer than the 600s attractor waits)"
    )


def test_backoff_grows_is_capped_and_jittered() -> None:
    policy = RetryPolicy(base_delay=1.0, multiplier=2.0, max_delay=5.0, jitter=0.5)
    for retry, base in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (8, 5.0)]:
        delays = {policy.delay(retry, None) for _ in range(50)}
        assert all(base * 0.5 <= d <= base * 1.5 for d in delays)
        assert len(delays) > 1  # jitter spreads the waits
    assert policy.delay(3, 2.5) == 2.5  # a server-given wait is used as is


def test_retry_after_parsing() -> None:
    assert retry_after_seconds({"Retry-After": "7"}) == 7
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_seconds({}) is None
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert retry_after_seconds({"Retry-After": "-3"}) is None
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    parsed = retry_after_seconds({"Retry-After": later})
    assert parsed is not None and 100 < parsed <= 120


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (401, False), (403, False), (404, False), (422, False), (408, True),
     (429, True), (500, True), (502, True), (503, True), (529, True)],
)  # fmt: skip
def test_status_classification(status: int, retryable: bool) -> None:
    assert is_retryable_status(status) is retryable
    error = status_error(status, None, {}, provider="p", model="m")
    assert isinstance(error, RetryableProviderError) is retryable
    assert error.status == status


def test_error_detail_reads_both_provider_shapes() -> None:
    assert error_detail({"message": "Bad key", "type": "invalid_request_error"}) == (
        "invalid_request_error: Bad key"
    )
    anthropic_body = {"type": "error", "error": {"type": "overloaded_error", "message": "Busy"}}
    assert error_detail(anthropic_body) == "overloaded_error: Busy"
    assert error_detail({"error": "plain"}) == "plain"
    assert error_detail(None) == ""


def test_long_multiline_reasons_are_shortened_to_one_line() -> None:
    error = status_error(500, "line one\n" + "x" * 1000, {}, provider="p", model="m")
    assert "\n" not in str(error)
    assert len(error.reason) <= 300
