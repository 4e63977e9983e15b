"""Chat Completions posted with httpx alone, for the answers that are not streamed.

Importing the OpenAI SDK costs about 0.4 s of CPU (it builds every type of its API):
most of a short run's start-up with a model. A plain request needs none of it, since
the adapter encodes the body and reads the answer itself. This sends what the SDK
sends that matters to a server: the URL under the base URL, a gateway's query kept;
the key as a bearer token, and no ``Authorization`` at all without one; OpenAI's
organisation and project headers (``OPENAI_ORG_ID``, ``OPENAI_PROJECT_ID``) only to
OpenAI's own service; JSON both ways. The answer's status and the transport's failures
become the errors the SDK's path gives (:mod:`attractor.llm.retry`). Streamed answers
still go through the SDK (:mod:`attractor.llm.openai_model`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import ssl
from typing import Any
from urllib.parse import parse_qsl

import anyio
import httpx2

from attractor.errors import ProviderError
from attractor.llm.connections import DEFAULT_LIMITS, shelf_client
from attractor.llm.credentials import is_official
from attractor.llm.retry import connection_error, status_error
from attractor.valueclass import frozen
from attractor.version import __version__

#: OpenAI's own service, where no base URL is given (as the SDK has it).
OPENAI_URL = "https://api.openai.com/v1"
#: Where Chat Completions are posted, under the base URL.
CHAT_PATH = "/chat/completions"
#: Headers to add to every request, one ``Name: value`` a line (the SDK's variable).
CUSTOM_HEADERS_ENV = "OPENAI_CUSTOM_HEADERS"
#: The headers that carry the organisation and project to OpenAI's own service.
_ACCOUNT_HEADERS = (
    ("OpenAI-Organization", "OPENAI_ORG_ID"),
    ("OpenAI-Project", "OPENAI_PROJECT_ID"),
)


#: A request that got no answer: what httpx raises, and the TLS failures it lets through
#: unmapped (as the SDK counts them).
_NO_ANSWER = (httpx2.HTTPError, ssl.SSLError, anyio.EndOfStream)


@frozen
class Endpoint:
    """Where a model's requests go and the headers they carry."""

    url: str
    #: The base URL's own query (a gateway's ``?api-version=...``), kept after the path.
    params: tuple[tuple[str, str], ...]
    headers: tuple[tuple[str, str], ...]


def endpoint(provider: str, base_url: str | None, key: str | None) -> Endpoint:
    """The Chat Completions endpoint under ``base_url`` (None: OpenAI's own service).

    ``key`` is sent as a bearer token; without one no ``Authorization`` header is sent.
    """
    address, query = split_base_url(base_url or OPENAI_URL)
    headers = {
        "Accept": "application/json",
        "Content-Type": "application/json",
        "User-Agent": f"attractor/{__version__}",
    }
    if is_official(provider, base_url):
        for header, variable in _ACCOUNT_HEADERS:
            value = os.environ.get(variable)
            if value is not None:
                headers[header] = value
    for name, value in custom_headers().items():
        for known in [h for h in headers if h.lower() == name.lower()]:
            del headers[known]
        headers[name] = value
    if key:
        headers["Authorization"] = f"Bearer {key}"
    return Endpoint(
        url=address.rstrip("/") + CHAT_PATH,
        params=tuple(query.items()),
        headers=tuple(headers.items()),
    )


def split_base_url(base_url: str) -> tuple[str, dict[str, str]]:
    """A base URL without its fragment, and its query (a gateway's ``?api-version=...``),
    which must come after the path a request adds, not before it."""
    address, _, query = base_url.partition("#")[0].partition("?")
    return address, dict(parse_qsl(query, keep_blank_values=True))


def custom_headers() -> dict[str, str]:
    """The headers ``OPENAI_CUSTOM_HEADERS`` adds to every request (``Name: value``
    lines), as the SDK reads it, but never an ``Authorization``: which server gets a
    key is :func:`attractor.llm.credentials.resolve_key`'s to decide."""
    found: dict[str, str] = {}
    for line in os.environ.get(CUSTOM_HEADERS_ENV, "").split("\n"):
        name, colon, value = line.partition(":")
        if colon and name.strip() and name.strip().lower() != "authorization":
            found[name.strip()] = value.strip()
    return found


def http_client(timeout: float) -> httpx2.AsyncClient:
    """The client a model's plain requests go through: ``timeout`` seconds for each
    step of an attempt, redirects followed and the limits the SDK sets."""
    return shelf_client(
        httpx2.AsyncClient,
        timeout=httpx2.Timeout(timeout),
        follow_redirects=True,
        limits=DEFAULT_LIMITS,
    )


async def post(
    client: httpx2.AsyncClient, where: Endpoint, content: bytes, *, provider: str, model: str
) -> httpx2.Response:
    """The answer to one request: a success, whatever its body.

    Raises:
        RetryableProviderError: no answer (a timeout, a connection that failed), or a
            status worth retrying (429, 5xx...).
        ProviderError: any other error status.
    """
    try:
        # The URL parsed once (httpx parses a text on every request), and no empty
        # query handed over (httpx parses the URL again to merge even an empty one).
        response = await client.post(
            _parsed(where.url), content=content, params=where.params or None, headers=where.headers
        )
    except httpx2.TimeoutException as error:
        raise connection_error(
            error, timed_out=True, provider=provider, model=model, url=where.url
        ) from error
    except _NO_ANSWER as error:
        raise connection_error(
            error, timed_out=False, provider=provider, model=model, url=where.url
        ) from error
    if response.status_code >= 400:
        raise _status_error(response, provider=provider, model=model)
    return response


@functools.lru_cache(maxsize=64)
def _parsed(url: str) -> httpx2.URL:
    return httpx2.URL(url)


def _status_error(response: httpx2.Response, *, provider: str, model: str) -> ProviderError:
    """The error of an answer with an error status: its JSON body's ``error`` object
    (or the whole body, or its text), as the SDK hands it on."""
    text = response.text.strip()
    body: Any = text
    with contextlib.suppress(ValueError, RecursionError):
        body = json.loads(text)
    if isinstance(body, dict):
        body = body.get("error", body)
    return status_error(
        response.status_code, body, response.headers, provider=provider, model=model
    )
