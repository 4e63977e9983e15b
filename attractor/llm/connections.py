"""The HTTP client of the OpenAI and Anthropic adapters: a request's cost does not grow
with the number of connections open.

The SDKs' own transport keeps every connection in one pool, and that pool walks all
of them, probing each idle socket, whenever a request starts or a response is closed.
A fan-out of n model stages so pays n² probes: with 64 branches, 16 of the run's
120 ms of CPU, most of it on the critical path after the answers arrive.

Here each connection lives in a pool of its own (httpx's transport with room for one),
and idle pools wait on a shelf per origin. A request takes the pool put back last (its
connection the likeliest to be still open) or opens a new one; closing the response
puts the pool back. The SDK's limits hold: at most ``max_connections`` requests at
once (the rest wait), ``max_keepalive_connections`` idle connections kept, and an
idle one closed once it has waited ``keepalive_expiry`` seconds (seen when a pool is
put back, as httpx sees it when a request comes). With a proxy in the environment the
SDK's own transport is kept (:func:`shelf_client`), and the certificate authorities are
read only for the first ``https://`` connection (:func:`tls_context`).
"""

from __future__ import annotations

import functools
import socket
import ssl
import time
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, cast

import anyio
import httpx2

#: The limits the OpenAI and Anthropic SDKs give their own clients.
DEFAULT_LIMITS = httpx2.Limits(max_connections=1000, max_keepalive_connections=100)

#: TCP keep-alive probes on an idle connection after a minute, every minute, five at
#: most: a long answer's silent connection is not dropped by a router meanwhile.
TCP_KEEPALIVE: tuple[tuple[int, int, int], ...] = tuple(
    (level, option, value)
    for level, name, value in (
        (socket.SOL_SOCKET, "SO_KEEPALIVE", 1),
        (socket.IPPROTO_TCP, "TCP_KEEPIDLE", 60),
        (socket.IPPROTO_TCP, "TCP_KEEPINTVL", 60),
        (socket.IPPROTO_TCP, "TCP_KEEPCNT", 5),
    )
    if (option := getattr(socket, name, None)) is not None
)


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The SDKs' own default TLS context, made once a process, the first time an
    ``https://`` connection is opened, and shared by every client: reading the
    certificate authorities takes 15-35 ms, which a run talking to a local
    ``http://`` server has no reason to pay."""
    return httpx2.create_ssl_context()


@functools.cache
def _plain_context() -> ssl.SSLContext:
    """What an ``http://`` connection's pool is given (httpx wants a context; it is
    never used, and without one httpx would read the authorities for each pool)."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def _proxied() -> bool:
    """Whether the environment names an HTTP proxy (``HTTP_PROXY``, ``HTTPS_PROXY``,
    ``ALL_PROXY``), as httpx reads it."""
    found = urllib.request.getproxies()
    return any(found.get(scheme) for scheme in ("http", "https", "all"))


def shelf_client(
    client_class: type[httpx2.AsyncClient], *, tcp_keepalive: bool = False, **options: Any
) -> httpx2.AsyncClient:
    """An async client of ``client_class`` (an SDK's own, with its defaults, or httpx's,
    given ``options``) on a :class:`ConnectionShelf`; ``tcp_keepalive`` as the Anthropic
    SDK sets up its own connections (:data:`TCP_KEEPALIVE`).

    With a proxy in the environment the client keeps its own transport, which sends
    through the proxy (and honours ``NO_PROXY``): httpx routes no request of a client
    given a transport through the environment's proxies.
    """
    if _proxied():
        return client_class(verify=tls_context(), **options)
    shelf = ConnectionShelf(socket_options=TCP_KEEPALIVE if tcp_keepalive else ())
    return client_class(transport=shelf, **options)


#: (scheme, host, port) of a request's URL.
Origin = tuple[bytes, bytes, int | None]

#: The port of a URL that names none.
_DEFAULT_PORTS = {b"http": 80, b"https": 443}


class ConnectionShelf(httpx2.AsyncBaseTransport):
    """An httpx transport that keeps each connection in a pool of its own."""

    def __init__(
        self,
        *,
        limits: httpx2.Limits = DEFAULT_LIMITS,
        socket_options: Iterable[tuple[int, int, int]] = (),
    ) -> None:
        self._socket_options = list(socket_options)
        self._one = httpx2.Limits(
            max_connections=1, max_keepalive_connections=1, keepalive_expiry=limits.keepalive_expiry
        )
        self._keep = limits.max_keepalive_connections
        self._expiry = limits.keepalive_expiry
        self._slots = anyio.Semaphore(limits.max_connections) if limits.max_connections else None
        #: Idle pools by origin, the one put back last at the end.
        self._idle: dict[Origin, list[httpx2.AsyncHTTPTransport]] = {}
        #: Every idle pool with its origin and when it was put back, oldest first.
        self._idle_since: dict[httpx2.AsyncHTTPTransport, tuple[Origin, float]] = {}
        #: Every pool not yet closed, idle or in use (closed with the shelf).
        self._open: set[httpx2.AsyncHTTPTransport] = set()

    @property
    def idle_connections(self) -> int:
        """How many pools wait on the shelf (each holds at most one connection)."""
        return len(self._idle_since)

    @property
    def open_pools(self) -> int:
        """How many pools are open, idle or in use."""
        return len(self._open)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._slots is not None:
            await self._slot(self._slots, request)
        url = request.url
        scheme = url.raw_scheme
        origin = (scheme, url.raw_host, url.port or _DEFAULT_PORTS.get(scheme))
        try:
            pool = self._take(origin)
        except BaseException:
            if self._slots is not None:
                self._slots.release()
            raise
        try:
            response = await pool.handle_async_request(request)
        except BaseException:
            # httpx has given up the connection; the pool itself serves again.
            with anyio.CancelScope(shield=True):
                await self._put_back(origin, pool)
            raise
        # An async transport's response body is async (httpx's own transport builds it).
        body = cast(httpx2.AsyncByteStream, response.stream)
        response.stream = _ReturnOnClose(body, functools.partial(self._put_back, origin, pool))
        return response

    @staticmethod
    async def _slot(slots: anyio.Semaphore, request: httpx2.Request) -> None:
        """One of the ``max_connections`` slots, waited for at most the request's pool
        timeout, as httpx's pool waits for a connection (:class:`httpx2.PoolTimeout`)."""
        try:  # no checkpoint when a slot is free: one less round of every task
            slots.acquire_nowait()
            return
        except anyio.WouldBlock:
            pass
        limit = request.extensions.get("timeout", {}).get("pool")
        try:
            with anyio.fail_after(limit):
                await slots.acquire()
        except TimeoutError:
            message = f"every connection still in use after the pool timeout ({limit} s)"
            raise httpx2.PoolTimeout(message, request=request) from None

    def _take(self, origin: Origin) -> httpx2.AsyncHTTPTransport:
        shelf = self._idle.get(origin)
        if shelf:
            pool = shelf.pop()
            del self._idle_since[pool]
            return pool
        context = tls_context() if origin[0] == b"https" else _plain_context()
        pool = httpx2.AsyncHTTPTransport(
            verify=context, limits=self._one, socket_options=self._socket_options
        )
        self._open.add(pool)
        return pool

    async def _put_back(self, origin: Origin, pool: httpx2.AsyncHTTPTransport) -> None:
        if self._slots is not None:
            self._slots.release()
        now = time.monotonic()
        self._idle.setdefault(origin, []).append(pool)
        self._idle_since[pool] = (origin, now)
        # Close, oldest first and whatever their origin, the idle pools beyond the
        # limit and those that have waited too long.
        gone: list[httpx2.AsyncHTTPTransport] = []
        surplus = len(self._idle_since) - self._keep if self._keep is not None else 0
        for idle, (where, since) in self._idle_since.items():
            expired = self._expiry is not None and now - since > self._expiry
            if len(gone) >= surplus and not expired:
                break  # the rest were put back later still
            gone.append(idle)
            self._idle[where].remove(idle)
        for idle in gone:
            del self._idle_since[idle]
        if gone:
            await self._close(gone)

    async def _close(self, pools: list[httpx2.AsyncHTTPTransport]) -> None:
        with anyio.CancelScope(shield=True):
            for pool in pools:
                self._open.discard(pool)
                await pool.aclose()

    async def aclose(self) -> None:
        self._idle.clear()
        self._idle_since.clear()
        await self._close(list(self._open))


class _ReturnOnClose(httpx2.AsyncByteStream):
    """A response body that puts its pool back on the shelf when closed."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, put_back: Callable[[], Awaitable[None]]
    ) -> None:
        self._inner = inner
        self._put_back: Callable[[], Awaitable[None]] | None = put_back

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        put_back, self._put_back = self._put_back, None
        try:
            await self._inner.aclose()
        finally:
            if put_back is not None:
                with anyio.CancelScope(shield=True):
                    await put_back()
