"""The OpenAI adapters' transport: a connection per request in flight, reused, and bounded
as the SDK's own pool is, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator

import anyio
import httpx2
import pytest

from attractor.llm.connections import ConnectionShelf, shelf_client, tls_context
from attractor.llm.retry import RetryPolicy
from attractor.llm.types import Message, Model, ModelRequest
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.test_anthropic_model import make_model as make_claude
from tests.llm.test_openai_model import make_model
from tests.llm.wire import anthropic_message, openai_completion

pytestmark = pytest.mark.anyio


@pytest.fixture
def server() -> Iterator[FakeServer]:
    with FakeServer(keep_alive=True).running() as running:
        yield running


@pytest.fixture
def no_proxy_set(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The environment without any proxy variable, in either case."""
    for name in list(os.environ):
        if name.lower().endswith("_proxy"):
            monkeypatch.delenv(name)
    return monkeypatch


async def _post_all(client: httpx2.AsyncClient, url: str, count: int) -> list[int]:
    statuses: list[int] = []

    async def post() -> None:
        response = await client.post(url, content=b"{}")
        statuses.append(response.status_code)

    with anyio.fail_after(30):
        async with anyio.create_task_group() as group:
            for _ in range(count):
                group.start_soon(post)
    return statuses


async def test_requests_at_once_each_get_a_connection_and_the_next_ones_reuse_them(
    server: FakeServer,
) -> None:
    together = threading.Barrier(6)
    server.add(*(Reply(body={}, barrier=together) for _ in range(6)))
    shelf = ConnectionShelf()
    async with httpx2.AsyncClient(transport=shelf) as client:
        assert await _post_all(client, server.url, 6) == [200] * 6
        first = {r.peer for r in server.received}
        assert len(first) == 6  # six requests in flight at once: six connections
        assert shelf.idle_connections == 6
        again = threading.Barrier(6)
        server.add(*(Reply(body={}, barrier=again) for _ in range(6)))
        assert await _post_all(client, server.url, 6) == [200] * 6
        # The same six connections served the second round: none opened.
        assert {r.peer for r in server.received[6:]} == first
        assert shelf.open_pools == 6
    assert shelf.open_pools == 0  # the client's close closed them all


async def test_one_request_after_another_keeps_to_one_connection(server: FakeServer) -> None:
    server.add(*(Reply(body={}) for _ in range(5)))
    shelf = ConnectionShelf()
    async with httpx2.AsyncClient(transport=shelf) as client:
        for _ in range(5):
            assert (await client.post(server.url, content=b"{}")).status_code == 200
    assert len({r.peer for r in server.received}) == 1


async def test_idle_connections_beyond_the_keep_alive_limit_are_closed(
    server: FakeServer,
) -> None:
    together = threading.Barrier(5)
    server.add(*(Reply(body={}, barrier=together) for _ in range(5)))
    limits = httpx2.Limits(max_connections=100, max_keepalive_connections=2)
    shelf = ConnectionShelf(limits=limits)
    async with httpx2.AsyncClient(transport=shelf) as client:
        assert await _post_all(client, server.url, 5) == [200] * 5
        assert shelf.idle_connections == 2
        assert shelf.open_pools == 2


async def test_an_idle_connection_past_its_keep_alive_is_closed(server: FakeServer) -> None:
    together = threading.Barrier(3)
    server.add(*(Reply(body={}, barrier=together) for _ in range(3)))
    # No idle time allowed: each pool put back closes those put back before it.
    limits = httpx2.Limits(max_connections=10, max_keepalive_connections=10, keepalive_expiry=0)
    shelf = ConnectionShelf(limits=limits)
    async with httpx2.AsyncClient(transport=shelf) as client:
        assert await _post_all(client, server.url, 3) == [200] * 3
        assert (shelf.idle_connections, shelf.open_pools) == (1, 1)


async def test_no_more_requests_at_once_than_max_connections(server: FakeServer) -> None:
    pairs = threading.Barrier(2)  # each answer waits for a second request to be in
    server.add(*(Reply(body={}, barrier=pairs) for _ in range(8)))
    limits = httpx2.Limits(max_connections=2, max_keepalive_connections=2)
    shelf = ConnectionShelf(limits=limits)
    async with httpx2.AsyncClient(transport=shelf) as client:
        assert await _post_all(client, server.url, 8) == [200] * 8
    # Two connections carried all eight: the other requests waited for a free one.
    assert len({r.peer for r in server.received}) == 2


async def test_a_cancelled_request_gives_its_connection_slot_back(server: FakeServer) -> None:
    server.add(Reply(hold=True), Reply(body={"after": True}))
    limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
    shelf = ConnectionShelf(limits=limits)
    async with httpx2.AsyncClient(transport=shelf) as client:
        with anyio.move_on_after(30) as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(client.post, server.url)
                await anyio.to_thread.run_sync(server.arrived.wait, 30)
                group.cancel_scope.cancel()
        assert not scope.cancelled_caught
        # With room for one request only, the next one still goes through.
        with anyio.fail_after(30):
            response = await client.post(server.url, content=b"{}")
        assert response.json() == {"after": True}
        assert shelf.open_pools == 1


async def test_a_server_that_closes_each_connection_is_served_by_new_ones() -> None:
    with FakeServer([Reply(body={}) for _ in range(4)]).running() as closing:
        shelf = ConnectionShelf()
        async with httpx2.AsyncClient(transport=shelf) as client:
            for _ in range(4):
                assert (await client.post(closing.url, content=b"{}")).status_code == 200
            assert shelf.open_pools == 1
    assert len({r.peer for r in closing.received}) == 4


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_an_adapter_keeps_one_connection_across_a_sessions_turns(
    server: FakeServer, fast_retry: RetryPolicy, provider: str
) -> None:
    model: Model
    if provider == "openai":
        answer, model = openai_completion("Done."), make_model(server.url, fast_retry)
    else:
        answer = anthropic_message([{"type": "text", "text": "Done."}])
        model = make_claude(server.url, fast_retry)
    server.add(*(Reply(body=answer) for _ in range(3)))
    request = ModelRequest(messages=(Message.user("hi"),))
    try:
        for _ in range(3):
            assert (await model.request(request)).text == "Done."
    finally:
        await model.aclose()
    assert len({r.peer for r in server.received}) == 1


@pytest.mark.parametrize("keepalive", [True, False])
async def test_tcp_keep_alive_is_set_on_the_connections_when_asked(
    server: FakeServer, keepalive: bool, no_proxy_set: pytest.MonkeyPatch
) -> None:
    server.add(Reply(body={}))
    client = shelf_client(httpx2.AsyncClient, tcp_keepalive=keepalive)
    async with client, client.stream("POST", server.url, content=b"{}") as response:
        sock = response.extensions["network_stream"].get_extra_info("socket")
        assert bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)) is keepalive
        if keepalive:
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 60


async def test_a_proxy_in_the_environment_is_used(
    server: FakeServer, fast_retry: RetryPolicy, no_proxy_set: pytest.MonkeyPatch
) -> None:
    """The proxy (here the scripted server) gets the request for the real server."""
    no_proxy_set.setenv("HTTP_PROXY", server.url)
    server.add(Reply(body=openai_completion("via the proxy")))
    model = make_model("http://upstream.invalid", fast_retry)
    request = ModelRequest(messages=(Message.user("hi"),))
    try:
        assert (await model.request(request)).text == "via the proxy"
    finally:
        await model.aclose()
    [received] = server.received
    assert received.path == "http://upstream.invalid/v1/chat/completions"


async def test_a_plain_http_server_costs_no_certificate_authorities(
    server: FakeServer, fast_retry: RetryPolicy, no_proxy_set: pytest.MonkeyPatch
) -> None:
    tls_context.cache_clear()
    server.add(Reply(body=openai_completion("Done.")))
    model = make_model(server.url, fast_retry)
    try:
        await model.request(ModelRequest(messages=(Message.user("hi"),)))
    finally:
        await model.aclose()
    assert tls_context.cache_info().currsize == 0  # the 15-35 ms read never happened


async def test_a_request_waits_for_a_free_connection_no_longer_than_its_pool_timeout(
    server: FakeServer,
) -> None:
    server.add(Reply(body={"first": True}), Reply(body={}))
    limits = httpx2.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx2.AsyncClient(transport=ConnectionShelf(limits=limits)) as client:
        async with client.stream("POST", server.url, content=b"{}"):  # holds the one slot
            with pytest.raises(httpx2.PoolTimeout):
                await client.post(server.url, content=b"{}", timeout=httpx2.Timeout(30, pool=0.05))
        # The slot is back once the first response is closed.
        assert (await client.post(server.url, content=b"{}")).status_code == 200


async def test_the_idle_limit_and_expiry_hold_across_origins(server: FakeServer) -> None:
    with FakeServer(keep_alive=True).running() as other:
        pairs, other_pairs = threading.Barrier(2), threading.Barrier(2)
        server.add(*(Reply(body={}, barrier=pairs) for _ in range(2)))
        other.add(*(Reply(body={}, barrier=other_pairs) for _ in range(2)))
        other.add(Reply(body={}))
        limits = httpx2.Limits(max_connections=10, max_keepalive_connections=2)
        shelf = ConnectionShelf(limits=limits)
        async with httpx2.AsyncClient(transport=shelf) as client:
            assert await _post_all(client, server.url, 2) == [200] * 2
            assert await _post_all(client, other.url, 2) == [200] * 2
            # Two idle connections kept: the newest, the other server's; the first
            # server's were closed although no request went there again.
            assert (shelf.idle_connections, shelf.open_pools) == (2, 2)
            assert (await client.post(other.url, content=b"{}")).status_code == 200
            first, second, third = (r.peer for r in other.received)
            assert third in (first, second)  # an idle connection served it
            expiring = ConnectionShelf(limits=httpx2.Limits(keepalive_expiry=0))
            async with httpx2.AsyncClient(transport=expiring) as quick:
                server.add(Reply(body={}))
                await quick.post(server.url, content=b"{}")
                await quick.post(other.url, content=b"{}")
                # The first server's idle connection had waited past its expiry.
                assert (expiring.idle_connections, expiring.open_pools) == (1, 1)


def test_without_a_proxy_the_clients_keep_each_connection_on_the_shelf(
    no_proxy_set: pytest.MonkeyPatch,
) -> None:
    client = shelf_client(httpx2.AsyncClient)
    assert isinstance(client._transport, ConnectionShelf)
    no_proxy_set.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    assert not isinstance(shelf_client(httpx2.AsyncClient)._transport, ConnectionShelf)
