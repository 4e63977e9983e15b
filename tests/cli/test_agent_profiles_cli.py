"""Tool profiles end to end: a node picks the OpenAI tool set and patches a real file."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.runkit import invoke, only_run_dir, read_json, write

PIPELINE = """\
digraph patch {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    fix   [prompt="Make main return 1", max_turns=4, tool_profile=openai]
    start -> fix -> exit
}
"""
PATCH = (
    "*** Begin Patch\n*** Update File: app/main.py\n@@ def main():\n"
    "-    return 0\n+    return 1\n*** End Patch\n"
)


def test_a_node_with_the_openai_profile_applies_a_patch(workspace: Path) -> None:
    write(workspace / "p.dot", PIPELINE)
    write(workspace / "app" / "main.py", "def main():\n    return 0\n")
    write(workspace / "AGENTS.md", "Keep functions small.\n")
    responses = [
        {"text": "", "tool_calls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]},
        {"text": "main now returns 1"},
    ]
    write(workspace / "model.json", json.dumps({"responses": responses, "then": "stop"}))
    logs = "runs/{timestamp}-{graph}"
    result = invoke(["run", "p.dot", "--logs-dir", logs, "--backend", "scripted:model.json"])
    assert result.exit_code == 0, result.output
    assert (workspace / "app" / "main.py").read_text() == "def main():\n    return 1\n"
    run_dir = only_run_dir(workspace / "runs")
    lines = [json.loads(x) for x in (run_dir / "fix" / "transcript.jsonl").read_text().splitlines()]
    assert "apply_patch" in lines[0]["tools_offered"]
    assert "edit_file" not in lines[0]["tools_offered"]
    [agents] = lines[0]["project_context"]["instruction_files"]
    assert Path(agents["path"]).name == "AGENTS.md"
    assert read_json(run_dir / "fix" / "status.json")["turns_used"] == 2
    assert "patch applied:\nM app/main.py" in (run_dir / "fix" / "tools.log").read_text()
