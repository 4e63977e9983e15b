"""Request bodies: read within a bound, parsed as JSON, checked before any use.

A body is read as it arrives and refused (413) the moment it passes
:data:`MAX_BODY`, so a client cannot make the server hold more than that; a
body that says in advance it is larger is refused before it is read.
"""

from __future__ import annotations

import json
from typing import Any

import anyio.to_thread
from starlette.requests import Request

#: The largest request body taken (DOT source included).
MAX_BODY = 4 * 1024 * 1024
#: How deeply a body's objects and arrays may nest.
MAX_DEPTH = 64
#: Bodies larger than this are parsed in a worker thread, off the event loop.
_PARSE_ON_LOOP = 64 * 1024


class Problem(Exception):
    """An HTTP error with its status and one-line message."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.headers = headers


def _too_large() -> Problem:
    # The client may still be sending: the connection closes after the answer.
    return Problem(
        413,
        f"request body over {MAX_BODY // (1024 * 1024)} MiB; send a smaller one "
        '(name a pipeline file under the root with "path" instead of its text)',
        headers={"Connection": "close"},
    )


async def read_body(request: Request) -> bytes:
    """The body, read chunk by chunk and refused as soon as it passes :data:`MAX_BODY`.

    Raises:
        Problem: 413 when it is (or says it will be) larger.
    """
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY:
        raise _too_large()
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            raise _too_large()
        chunks.append(chunk)
    return b"".join(chunks)


async def json_body(request: Request, *, required: bool = True) -> dict[str, Any]:
    """The body as a JSON object.

    Raises:
        Problem: 415 not sent as JSON, 413 too large, 400 not a JSON object.
    """
    # A JSON content type makes a browser ask first (CORS preflight) before a
    # page from another site may post here; this server never says yes.
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if kind != "application/json":
        raise Problem(415, "send the request with Content-Type: application/json")
    raw = await read_body(request)
    if not raw.strip() and not required:
        return {}
    if len(raw) > _PARSE_ON_LOOP:
        data = await anyio.to_thread.run_sync(_parse, raw)
    else:
        data = _parse(raw)
    if not isinstance(data, dict):
        raise Problem(400, "request body must be a JSON object")
    return data


def _parse(raw: bytes) -> Any:
    try:
        data = json.loads(raw)
    except RecursionError:
        raise _too_deep() from None
    except ValueError as exc:
        raise Problem(400, f"request body is not JSON: {exc}") from None
    check_values(data)
    return data


def _too_deep() -> Problem:
    return Problem(400, f"request body nests objects or arrays more than {MAX_DEPTH} deep")


def check_values(data: Any) -> None:
    """Refuse (400) a body nested too deeply, or with text no file name or DOT holds.

    A NUL character or a lone UTF-16 surrogate (``\\ud800``) cannot be
    written to a file or named in a path; each is refused with the place it is in.
    """
    stack: list[tuple[Any, str, int]] = [(data, "", 0)]
    while stack:
        value, where, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep()
        if isinstance(value, dict):
            for key, item in value.items():
                field = f"{where}.{key}" if where else str(key)
                _check_text(key, f"the key {_shown(field)}")
                stack.append((item, field, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, where, depth + 1) for item in value)
        elif isinstance(value, str):
            _check_text(value, f"{_shown(where)}" if where else "the body")


def _shown(field: str) -> str:
    """A field's name for a message: ``"settings.workdir"``, cut when long."""
    text = field if len(field) <= 60 else f"{field[:50]}..."
    return json.dumps(text)  # escapes a NUL or a surrogate in the name itself


def _check_text(text: str, where: str) -> None:
    if "\x00" in text:
        raise Problem(400, f"{where} holds a NUL character (\\u0000); remove it")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise Problem(
            400, f"{where} holds a lone UTF-16 surrogate (\\ud800-\\udfff); send valid Unicode"
        ) from None


def json_object(body: dict[str, Any], key: str) -> dict[str, Any]:
    """``body[key]`` when it is a JSON object (absent: empty).

    Raises:
        Problem: 400 when it is something else.
    """
    value = body.get(key) or {}
    if not isinstance(value, dict):
        raise Problem(400, f'"{key}" must be a JSON object')
    return value
