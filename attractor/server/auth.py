"""The access token: checked on every request unless the server runs with ``--no-token``.

``attractor serve`` makes a token when it starts (unless ``--token`` or
``ATTRACTOR_SERVE_TOKEN`` gives one), prints it once in the address to open
(``http://127.0.0.1:8700/?token=TOKEN``) and keeps a made one in
``ROOT/.attractor/serve.token`` (mode 0600) for scripts. A client sends it as
``Authorization: Bearer TOKEN``; a browser opens the page once with
``?token=TOKEN`` and is then given a cookie (HttpOnly, SameSite Strict, named
after the port so that two servers on one machine keep theirs apart) that its
scripts, styles and event stream carry too.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import os
import secrets
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qs

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from attractor.errors import UsageError

#: The cookie's name; the server's port follows it (``attractor_token_8700``).
COOKIE = "attractor_token"
#: Where a token the server made is kept, under the root.
TOKEN_FILE = Path(".attractor") / "serve.token"


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server to this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    """A fresh random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def write_token_file(root: Path, token: str) -> Path:
    """Keep ``token`` in ``ROOT/.attractor/serve.token``, readable by its owner only.

    Raises:
        UsageError: the file cannot be written (the reason is named).
    """
    path = root / TOKEN_FILE
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)  # whatever the umask says
            os.write(fd, f"{token}\n".encode("ascii"))
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise UsageError(
            f"cannot write the access token to {path}: {exc.strerror or exc}; "
            "make the root writable, or pass --token"
        ) from None
    return path


def remove_token_file(root: Path, token: str) -> None:
    """Delete the token file when it still holds ``token`` (another server may own it now)."""
    path = root / TOKEN_FILE
    with contextlib.suppress(OSError):
        if path.read_text(encoding="ascii").strip() == token:
            path.unlink()


class TokenMiddleware:
    """Refuses (401) any HTTP request that does not carry the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        name = cookie_name(scope)
        given, from_query = _presented(scope, name)
        if given is None or not hmac.compare_digest(given.encode(), self.token.encode()):
            response = JSONResponse(
                {
                    "error": "missing or wrong token; open the address attractor serve printed "
                    f"(it ends in ?token=...), or send Authorization: Bearer TOKEN (a token the "
                    f"server made is in ROOT/{TOKEN_FILE})"
                },
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
                cookie = f"{name}={self.token}; HttpOnly; SameSite=Strict; Path=/"
                message["headers"] = [*message.get("headers", []), (b"set-cookie", cookie.encode())]
            await send(message)

        await self.app(scope, receive, send_with_cookie)


def cookie_name(scope: Scope) -> str:
    """The token cookie's name for the port the request came in on."""
    server = scope.get("server")
    return f"{COOKIE}_{server[1]}" if server and server[1] else COOKIE


def _presented(scope: Scope, name: str) -> tuple[str | None, bool]:
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
    morsel = cookies.get(name)
    return (morsel.value, False) if morsel is not None else (None, False)
