"""A Gemini agent node through ``attractor run``: the real adapter against a local server."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from attractor.cli.main import cli
from attractor.llm.pricing import BUILTIN_PRICES
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.wire_responses import gemini_reply

PIPELINE = """\
digraph gem {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    work  [prompt="Look around", llm_model="gemini-2.5-flash"]
    start -> work -> done
}
"""


def test_a_gemini_node_runs_tools_and_records_usage_and_cost(
    tmp_path: Path, server: FakeServer
) -> None:
    call = {"functionCall": {"name": "list_dir", "args": {"path": "."}}}
    server.add(
        Reply(body=gemini_reply([call], usage=(1000, 20), cached=600)),
        Reply(body=gemini_reply([{"text": "Seen it all."}], usage=(1200, 30), thoughts=10)),
    )
    (tmp_path / "p.dot").write_text(PIPELINE, encoding="utf-8")
    env: dict[str, str | None] = {
        k: None for k in os.environ if k.startswith(("ATTRACTOR_", "GEMINI_", "GOOGLE_API"))
    }
    env["GEMINI_API_KEY"] = "gk-test"
    logs = str(tmp_path / "runs" / "r")
    args = ["run", str(tmp_path / "p.dot"), "--base-url", server.url, "--logs-dir", logs]
    args += ["--workdir", str(tmp_path)]
    result = CliRunner().invoke(cli, args, env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    status = json.loads((tmp_path / "runs" / "r" / "work" / "status.json").read_text())
    usage = status["usage"]
    assert (usage["input_tokens"], usage["output_tokens"]) == (2200, 60)
    assert (usage["cache_read_tokens"], usage["reasoning_tokens"]) == (600, 10)
    price = BUILTIN_PRICES["gemini-2.5-flash"]
    assert price.cache_read is not None
    expected = (1600 * price.input + 600 * price.cache_read + 60 * price.output) / 1e6
    assert usage["cost"] == pytest.approx(expected)
    # The tool result went back to the model as a function response.
    second = server.received[1].body
    assert second["contents"][-1]["parts"][0]["functionResponse"]["name"] == "list_dir"
    assert "tokens: 2,200 in (600 cached) / 60 out; cost: $" in result.output
