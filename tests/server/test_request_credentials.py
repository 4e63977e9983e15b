"""A run requested through ``attractor serve`` never carries the server's keys elsewhere.

The request's settings go through the server's own checks (``RunManager.flags``)
and the same settings resolution as a run; the model then talks to a real HTTP
server on 127.0.0.1 that records the headers it receives.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.api import settings_for
from attractor.dot.parser import parse_dot
from attractor.errors import UsageError
from attractor.handlers.agent_backend import FactoryModels
from attractor.server.runs import RunManager
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.wire import openai_completion, simple_request

PIPELINE = (
    'digraph p { start [shape=Mdiamond]; done [shape=Msquare]; w [prompt="go"]\n'
    "start -> w -> done }"
)


@pytest.fixture
def server_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The server's environment: its own OpenAI key, and a key named for its own proxy."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-server-SECRET")
    monkeypatch.setenv("PROXY_KEY", "px-server-SECRET")
    monkeypatch.setenv("ATTRACTOR_BASE_URL", "https://proxy.invalid/v1")
    monkeypatch.setenv("ATTRACTOR_API_KEY_ENV", "PROXY_KEY")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return tmp_path


@pytest.mark.anyio
async def test_a_posted_base_url_gets_none_of_the_servers_keys(server_env: Path) -> None:
    graph = parse_dot(PIPELINE)
    with FakeServer([Reply(body=openai_completion("hi"))]).running() as elsewhere:
        requested = {"base_url": f"{elsewhere.url}/v1", "provider": "openai", "model": "gpt-5"}
        settings = settings_for(graph, RunManager(server_env).flags(requested))
        models = FactoryModels(settings)
        model = models.model_for(graph.node("w"))
        try:
            await model.request(simple_request())
        finally:
            await models.aclose()
    [received] = elsewhere.received
    assert "authorization" not in received.headers
    assert not any("SECRET" in value for value in received.headers.values())


def test_a_request_cannot_name_a_key_variable(server_env: Path) -> None:
    # Naming a variable would let a request send any of the server's variables
    # to a host of its choosing: the setting is the server's own, not a request's.
    with pytest.raises(UsageError, match="unknown run setting"):
        RunManager(server_env).flags({"api_key_env": "OPENAI_API_KEY"})


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
