"""The access token: checked on every request unless the server runs with ``--no-token``.

``attractor serve`` makes a token when it starts (unless ``--token`` or
``ATTRACTOR_SERVE_TOKEN`` gives one), prints it once in the address to open
(``http://127.0.0.1:8700/?token=TOKEN``) and keeps a made one in
``ROOT/.attractor/serve.token`` (mode 0600) for scripts. A client sends it as
``Authorization: Bearer TOKEN``, or ``?token=TOKEN`` in the query string (the
page's event stream, which cannot set headers). The page itself and its scripts
and styles (:data:`PUBLIC`: the product's own files, nothing of a run's) are
served to anyone; the page takes the token from the address it was opened with
and keeps it in the tab (``sessionStorage``, which belongs to this port alone).

No cookie carries it: a browser sends a cookie of ``127.0.0.1`` to every port of
that host, so any local process that could get the browser to load one of its
pages would have read the token.
"""

from __future__ import annotations

import contextlib
import hmac
import ipaddress
import os
import secrets
from pathlib import Path
from urllib.parse import parse_qs

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from attractor.errors import UsageError

#: What is served without the token: the page and its static files.
PUBLIC = ("/", "/static/")
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
        path = str(scope.get("path", ""))
        if path == PUBLIC[0] or path.startswith(PUBLIC[1]):
            await self.app(scope, receive, send)
            return
        given = _presented(scope)
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
        await self.app(scope, receive, send)


def _presented(scope: Scope) -> str | None:
    """The token the request carries: its Bearer header, else its query's ``token``."""
    for key, value in scope["headers"]:
        if key.lower() == b"authorization":
            auth = bytes(value).decode("latin-1")
            if auth.lower().startswith("bearer "):
                return auth[7:].strip()
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return str(query["token"][0]) if "token" in query else None
