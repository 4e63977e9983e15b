"""The access token: checked on every request when the server has one.

A client sends it as ``Authorization: Bearer TOKEN``; a browser opens the page
once with ``?token=TOKEN`` and is then given a cookie (HttpOnly, SameSite
Strict) so that its scripts, styles and event stream carry it too.
"""

from __future__ import annotations

import hmac
import ipaddress
from http.cookies import SimpleCookie
from urllib.parse import parse_qs

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

COOKIE = "attractor_token"


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server to this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class TokenMiddleware:
    """Refuses (401) any HTTP request that does not carry the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given, from_query = _presented(scope)
        if given is None or not hmac.compare_digest(given.encode(), self.token.encode()):
            response = JSONResponse(
                {"error": "missing or wrong token; send Authorization: Bearer TOKEN"},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
            await response(scope, receive, send)
            return
        if not from_query:
            await self.app(scope, receive, send)
            return

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
                message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie.encode())]
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def _presented(scope: Scope) -> tuple[str | None, bool]:
    """The token the request carries, and whether it came in the query string."""
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip(), False
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if "token" in query:
        return query["token"][0], True
    cookies: SimpleCookie = SimpleCookie()
    try:
        cookies.load(headers.get("cookie", ""))
    except Exception:  # a malformed cookie header is just no token
        return None, False
    morsel = cookies.get(COOKIE)
    return (morsel.value, False) if morsel is not None else (None, False)
