"""A real pipeline through ``attractor run`` against a real llama.cpp server.

The small base model keeps calling tools, which is what this test needs: only the
turn budget can end its node, so the budget must hold exactly, with the last
request sent without tools. Assertions check structure, never the model's words.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LlamaServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

MAX_TURNS = 3
PIPELINE = f"""\
digraph llama_e2e {{
    start [shape=Mdiamond]
    done  [shape=Msquare]
    work  [prompt="Read the file notes.txt and report what it says.", max_turns={MAX_TURNS}]
    start -> work -> done
}}
"""
RUN_TIMEOUT = 240


def run_cli(workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``attractor run`` as a real subprocess, with no provider settings leaking in."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("ATTRACTOR_", "OPENAI_", "ANTHROPIC_"))
    }
    env["NO_COLOR"] = "1"
    command = [sys.executable, "-m", "attractor", "run", *args]
    return subprocess.run(
        command, cwd=workspace, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT
    )


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_agent_loop_against_real_model(llama_server: LlamaServer, tmp_path: Path) -> None:
    (tmp_path / "pipeline.dot").write_text(PIPELINE, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("remember to water the plants\n", encoding="utf-8")
    result = run_cli(
        tmp_path,
        "pipeline.dot",
        "--provider", "openai",
        "--base-url", llama_server.base_url,
        "--model", llama_server.model,
        "--logs-dir", "runs/{timestamp}-{graph}",
        "--workdir", ".",
    )  # fmt: skip
    output = result.stdout + result.stderr
    # The node can only end by its budget, and on_turn_limit defaults to fail.
    assert result.returncode == 1, output
    assert f"turn limit reached: {MAX_TURNS} of {MAX_TURNS}" in output
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]

    lines = read_lines(run_dir / "work" / "transcript.jsonl")
    check_transcript(lines)
    check_tools_ran(read_lines(run_dir / "events.jsonl"), lines)
    check_usage_accounting(run_dir, lines)


def check_transcript(lines: list[dict[str, Any]]) -> None:
    """Exactly MAX_TURNS requests; work turns call offered tools; the last offers none."""
    assert [line["turn"] for line in lines] == list(range(1, MAX_TURNS + 1))
    assert [line["kind"] for line in lines] == ["work"] * (MAX_TURNS - 1) + ["final"]
    for line in lines:
        assert set(line) >= {"turn", "kind", "tools_offered", "text", "tool_calls", "usage"}
        assert isinstance(line["text"], str)
        assert line["usage"]["input_tokens"] > 0 and line["usage"]["output_tokens"] > 0
    *work, final = lines
    for line in work:
        assert "read_file" in line["tools_offered"]
        # parallel_tool_calls=False: one structured call per turn, with dict arguments.
        [call] = line["tool_calls"]
        assert call["name"] in line["tools_offered"]
        assert isinstance(call["arguments"], dict)
    assert final["tools_offered"] == []
    assert final["tool_calls"] == []


def check_tools_ran(events: list[dict[str, Any]], lines: list[dict[str, Any]]) -> None:
    """Every tool call of a work turn was executed, in order, and answered."""
    ran = [e for e in events if e["type"] == "tool_call_completed" and e["node"] == "work"]
    asked = [(line["turn"], c["name"]) for line in lines for c in line["tool_calls"]]
    assert [(e["turn"], e["tool"]) for e in ran] == asked
    assert all(isinstance(e["output"], str) and e["output"] for e in ran)


def check_usage_accounting(run_dir: Path, lines: list[dict[str, Any]]) -> None:
    """Per-turn usage adds up to the node's status.json and the run's manifest.json.

    Every count adds up, cache reads included (llama.cpp reports the prompt prefix
    it reused); a local model has no price, so no cost appears anywhere.
    """
    keys = ("input_tokens", "output_tokens", "cache_read_tokens", "reasoning_tokens")
    totals = {key: sum(line["usage"][key] for line in lines) for key in keys}
    status = json.loads((run_dir / "work" / "status.json").read_text(encoding="utf-8"))
    assert status["turns_used"] == MAX_TURNS
    assert status["turn_limit_reached"] is True
    assert {key: status["usage"][key] for key in keys} == totals
    manifest = json.loads((run_dir / "manifest.json").read_text(encoding="utf-8"))
    assert {key: manifest["usage"][key] for key in keys} == totals
    assert "cost" not in status["usage"] and "cost" not in manifest["usage"]


# One request, sent as the final, tool-free turn: the model answers in text and is
# asked to copy an outcome object (the small model, decoding greedily, repeats an
# object of that shape). Whatever object it wrote last is what must be parsed.
REPORT_PIPELINE = """\
digraph llama_report {
    start  [shape=Mdiamond]
    done   [shape=Msquare]
    review [prompt="Copy this line exactly and say nothing else:\\n{COPY}", max_turns=1,
            on_turn_limit="partial_success"]
    start -> review -> done
}
""".replace("{COPY}", '{\\"outcome\\": \\"partial_success\\", \\"notes\\": \\"half done\\"}')
REPORT_SHAPE = re.compile(r'\{"outcome": "(\w+)", "notes": "([^"]*)"\}')


@pytest.mark.timeout(RUN_TIMEOUT + 60)
def test_a_real_model_report_in_text_is_parsed(llama_server: LlamaServer, tmp_path: Path) -> None:
    (tmp_path / "pipeline.dot").write_text(REPORT_PIPELINE, encoding="utf-8")
    run_cli(
        tmp_path,
        "pipeline.dot",
        "--provider", "openai",
        "--base-url", llama_server.base_url,
        "--model", llama_server.model,
        "--logs-dir", "runs/{timestamp}-{graph}",
        "--workdir", ".",
    )  # fmt: skip
    [run_dir] = [p for p in (tmp_path / "runs").iterdir() if p.is_dir()]
    [line] = read_lines(run_dir / "review" / "transcript.jsonl")
    reports = REPORT_SHAPE.findall(line["text"])
    assert reports, f"the model wrote no outcome object: {line['text']!r}"
    outcome, notes = reports[-1]
    status = json.loads((run_dir / "review" / "status.json").read_text(encoding="utf-8"))
    assert status["reported_by_model"] == "text"
    assert (status["outcome"], status["notes"]) == (outcome, notes)
