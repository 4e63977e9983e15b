"""A server that clients cannot starve: large bodies, large pipelines, slow streams.

Real HTTP on 127.0.0.1; the server's memory is read from /proc (its peak
resident size), and every wait is bounded.
"""

from __future__ import annotations

import json
import os
import re
import select
import socket
import time
from pathlib import Path

import pytest

from tests.server.serverkit import Server, sse_events, start_server

MiB = 1024 * 1024


def _memory(server: Server, field: str) -> int:
    """``VmRSS`` (now) or ``VmHWM`` (peak) of the server process, in bytes."""
    status = Path(f"/proc/{server.process.pid}/status").read_text()
    match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
    assert match, status
    return int(match.group(1)) * 1024


def _connect(server: Server, receive_buffer: int | None = None) -> socket.socket:
    host, port = server.url.removeprefix("http://").split(":")
    sock = socket.socket()
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(30)
    sock.connect((host, int(port)))
    return sock


def _cpu_ticks(server: Server) -> int:
    fields = Path(f"/proc/{server.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _wait_until_idle(server: Server) -> None:
    """Until the server has used no CPU for a second (bounded: two minutes)."""
    deadline = time.monotonic() + 120
    ticks, since = _cpu_ticks(server), time.monotonic()
    while time.monotonic() - since < 1.0:
        assert time.monotonic() < deadline, "the server never went idle"
        time.sleep(0.1)  # polling the server's CPU time
        now = _cpu_ticks(server)
        if now != ticks:
            ticks, since = now, time.monotonic()


def _answer(sock: socket.socket) -> bytes:
    """What the server sent until it closed the connection (it may reset it)."""
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except ConnectionResetError:
        pass  # the server closed with our unread body in its buffer
    return answer


def _head(server: Server, method: str, path: str, extra: str = "") -> bytes:
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {server.token}\r\n{extra}\r\n"
    ).encode()


def test_a_huge_body_is_refused_while_it_is_read(server: Server) -> None:
    baseline = _memory(server, "VmRSS")
    # Said in advance: refused before a byte of it is read.
    with _connect(server) as sock:
        extra = f"Content-Type: application/json\r\nContent-Length: {512 * MiB}\r\n"
        sock.sendall(_head(server, "POST", "/pipelines", extra))
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert b"over 4 MiB" in answer and b"connection: close" in answer
    # Not said (chunked): refused once 4 MiB have arrived, the rest is never read.
    sent = 0
    piece = b"%x\r\n%s\r\n" % (MiB, b" " * MiB)
    answer = b""
    with _connect(server) as sock:
        extra = "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
        sock.sendall(_head(server, "POST", "/pipelines", extra))
        try:
            while sent < 512 * MiB:
                readable, _, _ = select.select([sock], [], [], 0)
                if readable:
                    break
                sock.sendall(piece)
                sent += MiB
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed the connection after its answer
        answer = _answer(sock)
    assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    assert sent < 64 * MiB, f"the client could send {sent // MiB} MiB"
    assert _memory(server, "VmHWM") - baseline < 64 * MiB
    with server.client() as client:
        assert client.get("/pipelines").status_code == 200


def test_a_pipeline_too_large_to_parse_quickly_is_refused(server: Server, root: Path) -> None:
    nodes = "\n".join(f'  n{i} [prompt="step {i} of a very long pipeline"]' for i in range(40_000))
    source = f"digraph big {{\n start [shape=Mdiamond]\n done [shape=Msquare]\n{nodes}\n}}\n"
    assert MiB < len(source) < 4 * MiB
    (root / "big.dot").write_text(source)
    with server.client() as client:
        posted = client.post("/pipelines", json={"dot_source": source})
        assert posted.status_code == 413 and "at most 1024 KiB" in posted.json()["error"]
        named = client.post("/pipelines", json={"path": "big.dot"})
        assert named.status_code == 413 and "at most 1024 KiB" in named.json()["error"]
    assert not (root / ".attractor" / "runs").exists()


def _a_long_running_run(root: Path, events: int) -> tuple[str, int]:
    """A run directory whose driver lives (this test process) and whose events.jsonl is large."""
    run = root / ".attractor" / "runs" / "20260101T000000Z-long"
    run.mkdir(parents=True)
    manifest = {"name": "long", "status": "running", "started_at": time.time()}
    (run / "manifest.json").write_text(json.dumps(manifest))
    (run / ".lock").write_text(str(os.getpid()))
    note = "x" * 400
    lines = (
        json.dumps({"type": "agent_warning", "node": "work", "message": f"{i} {note}"})
        for i in range(events)
    )
    (run / "events.jsonl").write_text("\n".join(lines) + "\n")
    return run.name, (run / "events.jsonl").stat().st_size


DROP_FAST = (
    "-c",
    "import sys; import attractor.server.sse as sse; sse.SEND_TIMEOUT = 1.0; "
    "from attractor.cli.main import main; sys.argv[0] = 'attractor'; main()",
)


@pytest.mark.slow
def test_event_stream_clients_that_do_not_read_are_bounded_and_dropped(root: Path) -> None:
    run_id, size = _a_long_running_run(root, events=40_000)
    assert size > 16 * MiB
    server = start_server(root, python=DROP_FAST)
    try:
        baseline = _memory(server, "VmRSS")
        clients = []
        for _ in range(12):
            sock = _connect(server, receive_buffer=4096)
            sock.sendall(_head(server, "GET", f"/pipelines/{run_id}/events"))
            clients.append(sock)
        with server.client() as client:  # the others are served meanwhile
            assert client.get("/pipelines").status_code == 200
        # The clients take nothing: once the server has filled what they may have
        # waiting, it sits idle, and a second later it drops them.
        _wait_until_idle(server)
        time.sleep(3 * 1.0)  # the clients keep not reading, three times SEND_TIMEOUT
        last_ids = []
        for sock in clients:  # each is dropped: what it gets ends, long before the file does
            received = bytearray()
            while chunk := sock.recv(1 << 20):
                received += chunk
            sock.close()
            assert len(received) < size // 2
            last_ids.append(int(re.findall(rb"\nid: (\d+)\n", received)[-1]))
        assert _memory(server, "VmHWM") - baseline < 96 * MiB
        with (
            server.client() as client,
            client.stream(
                "GET", f"/pipelines/{run_id}/events", headers={"Last-Event-ID": str(last_ids[0])}
            ) as response,
        ):
            first = next(sse_events(response))
        assert first.id == last_ids[0] + 1  # a reconnect goes on where the drop cut it
    finally:
        server.stop()


def test_a_stream_that_keeps_up_gets_every_event(root: Path) -> None:
    run_id, _ = _a_long_running_run(root, events=3_000)
    (root / ".attractor" / "runs" / run_id / ".lock").write_text("0")  # nobody drives it now
    server = start_server(root)
    try:
        with (
            server.client() as client,
            client.stream("GET", f"/pipelines/{run_id}/events") as response,
        ):
            ids = [event.id for event in sse_events(response)]
        assert ids == list(range(1, 3_001))
    finally:
        server.stop()
