"""A host allow-list for sandboxed commands: a filtering HTTP proxy outside the sandbox.

With ``network="api.github.com,pypi.org"`` a step's sandbox keeps its own
network namespace (no interface but loopback, so no route anywhere). The engine
serves this proxy on a unix socket for the time of each command; the socket's
folder is bound into the sandbox, and a ``socat`` started inside bridges
``127.0.0.1:3128`` of the sandbox's loopback to it. The command gets
``HTTP_PROXY``/``HTTPS_PROXY`` pointing there, so any tool that honours them
(curl, pip, npm, git over https, Python's urllib and requests, Go, ...) reaches
the listed hosts and nothing else:

- ``CONNECT host:port`` (HTTPS, or any protocol a client tunnels) and plain
  HTTP requests in absolute form (``GET http://host/path``) are the only
  requests served;
- the host *name* the client asks for is checked against the list (case-
  insensitive, ``*.example.com`` for any subdomain); a name without a port
  allows 80 and 443, ``host:8443`` that port only; refused requests get
  ``403`` with a line naming the host and the setting;
- the proxy resolves the name itself (the sandbox has no DNS).

Limits: a tool that ignores the proxy variables, and any protocol that is not
HTTP(S) through a proxy (ssh, raw TCP, UDP, DNS), gets no network at all. The
check is by name: the proxy does not look inside TLS, so every path on an
allowed host is reachable, and a name that resolves to a private or loopback
address is reached there.
"""

from __future__ import annotations

from contextlib import suppress
from urllib.parse import urlsplit

import anyio
from anyio.abc import ByteStream, SocketStream

from attractor.proc.allowlist import AllowList, split_host_port

_HEAD_LIMIT = 64 * 1024
_HEAD_TIMEOUT = 30.0
_CONNECT_TIMEOUT = 30.0


#: What a client or a server going away mid-request raises: it ends that connection only.
_GONE = (
    OSError,
    ValueError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
)


async def serve_client(client: SocketStream, allow: AllowList, setting: str) -> None:
    """Serve one connection from the sandbox; a broken one never ends the command."""
    with suppress(*_GONE):
        await _serve(client, allow, setting)


async def _serve(client: SocketStream, allow: AllowList, setting: str) -> None:
    """Check the host the client asks for, then relay bytes both ways."""
    async with client:
        try:
            with anyio.fail_after(_HEAD_TIMEOUT):
                head, rest = await _read_head(client)
        except (TimeoutError, ValueError, anyio.EndOfStream, anyio.BrokenResourceError):
            return
        request = _parse(head)
        if request is None:
            await _answer(client, 400, "Bad Request", "attractor proxy: not a proxy request\n")
            return
        connect, host, port, forward = request
        if not allow.allows(host, port):
            why = f"{host}:{port} is not in this step's network allow-list (network={setting})"
            await _answer(client, 403, "Forbidden: " + why, f"attractor sandbox: {why}\n")
            return
        try:
            with anyio.fail_after(_CONNECT_TIMEOUT):
                upstream = await anyio.connect_tcp(host, port)
        except (OSError, TimeoutError) as error:
            text = f"attractor proxy: cannot reach {host}:{port}: {error}\n"
            await _answer(client, 502, "Bad Gateway", text)
            return
        async with upstream:
            if connect:
                await client.send(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                await upstream.send(forward)
            if rest:
                await upstream.send(rest)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_pipe, client, upstream)
                tg.start_soon(_pipe, upstream, client)


async def _read_head(stream: ByteStream) -> tuple[bytes, bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > _HEAD_LIMIT:
            raise ValueError("request head too long")
        data += await stream.receive()
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def _parse(head: bytes) -> tuple[bool, str, int, bytes] | None:
    """(is CONNECT, host, port, the head to forward) or None for a request we do not serve."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        return None
    method, target, version = parts
    if method.upper() == "CONNECT":
        host, port = split_host_port(target, None)
        return (True, host, port, b"") if host and port is not None else None
    url = urlsplit(target)
    if url.scheme.lower() != "http" or not url.hostname:
        return None
    try:
        port = url.port or 80
    except ValueError:
        return None
    path = url.path or "/"
    if url.query:
        path += "?" + url.query
    headers = [
        line
        for line in lines[1:]
        if line.split(":", 1)[0].strip().lower() not in ("proxy-connection", "connection")
    ]
    forward = "\r\n".join([f"{method} {path} {version}", *headers, "Connection: close", "", ""])
    return False, url.hostname, port, forward.encode("latin-1")


async def _answer(stream: ByteStream, code: int, reason: str, body: str) -> None:
    data = body.encode()
    head = (
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(head.encode() + data)


async def _pipe(source: ByteStream, target: ByteStream) -> None:
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        async for chunk in source:
            await target.send(chunk)
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await target.send_eof()
