"""Provider failures seen through ``attractor run``: the node fails with a clear reason.

The model is the real openai adapter talking to a scripted HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from attractor.cli.main import cli
from attractor.llm.types import Usage
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.wire import openai_error

PIPELINE = """\
digraph failing {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    work  [prompt="Do the work"]
    start -> work -> done
}
"""


def run(workspace: Path, server: FakeServer, *extra: str) -> Result:
    (workspace / "p.dot").write_text(PIPELINE, encoding="utf-8")
    env: dict[str, str | None] = {
        k: None for k in os.environ if k.startswith(("ATTRACTOR_", "OPENAI_", "ANTHROPIC_"))
    }
    args = ["run", "p.dot", "--provider", "openai", "--model", "local-model"]
    args += [
        "--base-url",
        f"{server.url}/v1",
        "--logs-dir",
        str(workspace / "runs" / "{timestamp}-{graph}"),
        *extra,
    ]
    return CliRunner().invoke(cli, args, env=env, catch_exceptions=False)


def node_status(workspace: Path) -> dict[str, object]:
    [run_dir] = list((workspace / "runs").iterdir())
    status = json.loads((run_dir / "work" / "status.json").read_text(encoding="utf-8"))
    assert isinstance(status, dict)
    return status


def test_authentication_failure_fails_the_node_naming_provider_model_status(
    tmp_path: Path, server: FakeServer
) -> None:
    server.add(Reply(401, openai_error("Incorrect API key provided")))
    result = run(tmp_path, server)
    assert result.exit_code == 1, result.output
    assert len(server.received) == 1  # never retried
    status = node_status(tmp_path)
    assert status["outcome"] == "fail"
    reason = str(status["failure_reason"])
    assert "openai model local-model (HTTP 401)" in reason
    assert "Incorrect API key provided" in reason


def test_persistent_rate_limit_fails_the_node_saying_what_happened(
    tmp_path: Path, server: FakeServer
) -> None:
    # A Retry-After far beyond the policy's patience ends retrying at once.
    server.add(Reply(429, openai_error("quota exceeded"), headers={"Retry-After": "7200"}))
    result = run(tmp_path, server)
    assert result.exit_code == 1, result.output
    reason = str(node_status(tmp_path)["failure_reason"])
    assert "HTTP 429" in reason and "rate limited" in reason
    assert "server asked to wait 7200s" in reason


def test_pipeline_timeout_aborts_an_in_flight_request(tmp_path: Path, server: FakeServer) -> None:
    server.add(Reply(hold=True))
    started = time.monotonic()
    result = run(tmp_path, server, "--timeout", "2s")
    elapsed = time.monotonic() - started
    assert server.arrived.is_set()
    assert result.exit_code == 124, result.output
    assert elapsed < 15  # the held request did not keep the run alive


def test_a_web_page_instead_of_a_completion_fails_the_node_with_a_clear_reason(
    tmp_path: Path, server: FakeServer
) -> None:
    # What a wrong --base-url typically reaches: some web server's HTML page.
    page = b"<!doctype html><html><body><h1>It works!</h1></body></html>"
    server.add(Reply(raw=page, content_type="text/html; charset=utf-8"))
    result = run(tmp_path, server)
    assert result.exit_code == 1, result.output
    status = node_status(tmp_path)
    assert status["outcome"] == "fail"
    assert status["failure_reason"] == (
        "openai model local-model (HTTP 200): the server did not answer with a chat "
        "completion (got text/html); check --base-url"
    )
    for leak in ("Expecting value", "has no attribute", "Traceback"):
        assert leak not in result.output
    # The same budget details as any other ending of the node.
    assert isinstance(status["turn_budget"], dict)
    assert status["turn_budget"]["effective"] == 15
    assert status["turns_used"] == 1
    assert status["turn_limit_reached"] is False
    assert status["usage"] == Usage().to_json()
    context = status["context_updates"]
    assert isinstance(context, dict)
    assert context["agent.turns_used"] == 1 and context["agent.turn_limit_reached"] is False


def test_hosted_openai_base_url_without_a_key_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "p.dot").write_text(PIPELINE, encoding="utf-8")
    env: dict[str, str | None] = {
        k: None for k in os.environ if k.startswith(("ATTRACTOR_", "OPENAI_", "ANTHROPIC_"))
    }
    env["OPENAI_BASE_URL"] = "https://api.openai.com/v1"
    args = [
        "run",
        "p.dot",
        "--model",
        "gpt-4o",
        "--logs-dir",
        str(tmp_path / "runs" / "{timestamp}-{graph}"),
    ]
    result = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    assert result.exit_code == 2, result.output
    assert "OPENAI_API_KEY" in result.output
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.fixture(autouse=True)
def _in_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The agent's working directory defaults to the current one: keep it in tmp_path.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NO_COLOR", "1")
