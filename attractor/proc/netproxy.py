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

import re
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio
from anyio.abc import ByteStream, SocketStream

#: The port the bridge listens on inside the sandbox.
INSIDE_PORT = 3128
#: Where the proxy's socket folder appears inside the sandbox.
INSIDE_DIR = "/run/attractor-net"
_HEAD_LIMIT = 64 * 1024
_HEAD_TIMEOUT = 30.0
_CONNECT_TIMEOUT = 30.0
_DEFAULT_PORTS = (80, 443)
_HOST = re.compile(r"(\*\.)?[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?(:\d{1,5})?")
HOSTS_FORM = "on, off, or host names like api.github.com,pypi.org (host:port for another port)"


def parse_hosts(text: str) -> tuple[str, ...]:
    """The allow-list in ``network="a.com,b.org:8443"`` (lower case, in order).

    Raises:
        ValueError: an entry that is not a host name (with an optional port).
    """
    hosts: list[str] = []
    for item in re.split(r"[,\s]+", text.strip()):
        if not item:
            continue
        name, port = _split(item.lower(), None)
        # One word alone is more likely a typo of on/off than a host: it needs a port.
        dotted = "." in name.rstrip(".") or port is not None or name == "localhost"
        if not _HOST.fullmatch(item) or ".." in item or not dotted:
            raise ValueError(f"expected {HOSTS_FORM}; {item!r} is not a host name")
        if port is not None and not 0 < port < 65536:
            raise ValueError(f"expected {HOSTS_FORM}; {item!r} has no valid port")
        hosts.append(item.lower())
    if not hosts:
        raise ValueError(f"expected {HOSTS_FORM}")
    return tuple(dict.fromkeys(hosts))


def _split(target: str, default: int | None) -> tuple[str, int | None]:
    """``host:port`` (or ``[v6]:port``) into its parts; ``default`` when no port."""
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") and rest[1:].isdigit() else default
    host, colon, port = target.rpartition(":")
    if colon and port.isdigit():
        return host, int(port)
    return target, default


@dataclass(frozen=True)
class AllowList:
    """Which ``host:port`` a sandboxed command may reach through the proxy."""

    hosts: tuple[str, ...]

    def allows(self, host: str, port: int) -> bool:
        host = host.lower().rstrip(".")
        for entry in self.hosts:
            name, only = _split(entry, None)
            name = name.rstrip(".")
            ports = (only,) if only is not None else _DEFAULT_PORTS
            if port not in ports:
                continue
            if name.startswith("*."):
                if host.endswith(name[1:]):
                    return True
            elif host == name:
                return True
        return False

    def describe(self) -> str:
        return "network only to " + ", ".join(self.hosts) + " (through a proxy)"


def proxy_env() -> dict[str, str]:
    """The variables that send a command's HTTP(S) through the bridge."""
    url = f"http://127.0.0.1:{INSIDE_PORT}"
    local = "localhost,127.0.0.1,::1"
    return {
        "HTTP_PROXY": url,
        "HTTPS_PROXY": url,
        "http_proxy": url,
        "https_proxy": url,
        "NO_PROXY": local,
        "no_proxy": local,
    }


def bridge_argv(socat: str) -> list[str]:
    """The program run first inside the sandbox: it starts the bridge, then the command.

    Followed by the socket's path inside the sandbox, then the command's argv.
    It waits (at most about a second) until the bridge listens, so the command's
    first connection finds it.
    """
    listening = f":{INSIDE_PORT:04X} 00000000:0000 0A"
    script = (
        "s=$1; shift; "
        f'{socat} TCP-LISTEN:{INSIDE_PORT},bind=127.0.0.1,reuseaddr,fork "UNIX-CONNECT:$s" '
        "2>/dev/null & i=0; "
        f"while [ $i -lt 500 ] && ! grep -q '{listening}' /proc/net/tcp 2>/dev/null; "
        'do i=$((i+1)); done; exec "$@"'
    )
    return ["/bin/sh", "-c", script, "attractor-net"]


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
        host, port = _split(target, None)
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


def describe_network(network: bool, hosts: Sequence[str]) -> str:
    """``network on``, ``network off`` or ``network only to a, b (through a proxy)``."""
    if hosts and not network:
        return AllowList(tuple(hosts)).describe()
    return "network on" if network else "network off"
