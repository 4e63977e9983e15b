"""POST one notification: signed, each attempt bounded, retried with back-off.

The request is a plain HTTP/1.1 POST made by the standard library in a worker
thread (no HTTP client dependency), with ``Content-Type: application/json``,
``User-Agent: attractor/VERSION``, ``X-Attractor-Event`` (the event's name),
``X-Attractor-Delivery`` (the payload's delivery id, the same on every
attempt) and, when a secret is named, ``X-Attractor-Signature-256:
sha256=HEX``: the HMAC-SHA256 of the exact body with the secret as key.

A 2xx answer is delivered. A connection error, a timeout, a 408, a 429 or a
5xx answer is tried again after :data:`BACKOFF` seconds (0.5, 1, 2: four
attempts in all); any other answer (a 4xx: the URL or the payload is wrong)
is not. A redirect is not followed (it is an answer like a 4xx).
"""

from __future__ import annotations

import hashlib
import hmac
import urllib.error
import urllib.request

import anyio

from attractor.valueclass import frozen
from attractor.version import __version__

#: Seconds to wait before each retry; one more attempt than there are pauses.
BACKOFF = (0.5, 1.0, 2.0)
SIGNATURE_HEADER = "X-Attractor-Signature-256"
_RETRIED = frozenset({408, 429})


@frozen
class Delivery:
    """How sending one notification ended."""

    delivered: bool
    attempts: int
    #: The last HTTP status received, None when none came.
    status: int | None
    #: Why it was not delivered ("" when it was).
    error: str = ""


def signature(secret: bytes, body: bytes) -> str:
    """The ``X-Attractor-Signature-256`` value of ``body``: ``sha256=`` and the hex HMAC."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def headers_for(event: str, delivery: str, body: bytes, secret: bytes | None) -> dict[str, str]:
    headers = {
        "Content-Type": "application/json",
        "User-Agent": f"attractor/{__version__}",
        "X-Attractor-Event": event,
        "X-Attractor-Delivery": delivery,
    }
    if secret is not None:
        headers[SIGNATURE_HEADER] = signature(secret, body)
    return headers


async def deliver(url: str, body: bytes, headers: dict[str, str], timeout: float) -> Delivery:
    """POST ``body`` to ``url`` until it is accepted or the attempts run out."""
    status: int | None = None
    error = ""
    for attempt in range(1, len(BACKOFF) + 2):
        status, error = await anyio.to_thread.run_sync(
            _post, url, body, headers, timeout, abandon_on_cancel=True
        )
        if status is not None and 200 <= status < 300:
            return Delivery(True, attempt, status)
        if status is not None and status < 500 and status not in _RETRIED:
            return Delivery(False, attempt, status, error)
        if attempt <= len(BACKOFF):
            await anyio.sleep(BACKOFF[attempt - 1])
    return Delivery(False, len(BACKOFF) + 1, status, error)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is an answer, not a new address: a POST is never re-sent elsewhere
    (urllib would turn it into a GET without its body)."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> tuple[int | None, str]:
    """One attempt: the HTTP status and, when it is no success, why."""
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with _OPENER.open(request, timeout=timeout) as response:
            response.read(64 * 1024)
            return int(response.status), ""
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code, f"HTTP {exc.code}"
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return None, str(reason) or type(exc).__name__
