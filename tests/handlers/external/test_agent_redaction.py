"""An agent CLI that prints a key: its stream, stderr, answer and events are redacted."""

from __future__ import annotations

from pathlib import Path

from tests.cli.runkit import invoke, write
from tests.handlers.external.agentkit import agent_env, one_node_graph

KEY = "AKIAQWERTYUIOPASDFGH"  # in streams/codex/leak.jsonl


def test_an_agent_clis_output_files_hold_no_key(workspace: Path, fakes: Path) -> None:
    write(workspace / "p.dot", one_node_graph("codex", "SCENARIO=leak look around"))
    env = agent_env(fakes, workspace / "starts.jsonl")

    result = invoke(["run", "p.dot", "--logs-dir", "logs"], env)

    assert result.exit_code == 0, result.output + result.stderr
    stage = workspace / "logs" / "work"
    assert (stage / "response.md").read_text() == "The key is [redacted:aws-access-key]."
    assert (
        "aws_access_key_id = [redacted:aws-access-key]"
        in (stage / "agent_stream.jsonl").read_text()
    )
    assert (stage / "agent_stderr.txt").read_text().strip() == "used key [redacted:aws-access-key]"
    # workspace.git holds the workdir's own files as they are (compressed, not redacted):
    # a checkpoint is a copy of the user's files, like the workdir itself (docs/engine.md).
    files = [p for p in (workspace / "logs").rglob("*") if "workspace.git" not in p.parts]
    leaks = [p for p in files if p.is_file() and KEY in p.read_text()]
    assert leaks == []
    assert KEY not in result.output + result.stderr
