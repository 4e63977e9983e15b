"""The stage diff of the web page's node panel: GET /pipelines/{id}/nodes/{node}/diff."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests.server.serverkit import Server
from tests.server.test_web_watch import EDITS
from tests.workspace.gitkit import make_repo

WRITES = """digraph writes {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    edit  [shape=parallelogram, tool_command="echo changed-by-edit > edited.txt"]
    look  [shape=parallelogram, tool_command="cat edited.txt"]
    start -> edit -> look -> done
}
"""


def _cli_run(root: Path, *extra: str) -> str:
    (root / "writes.dot").write_text(WRITES)
    done = subprocess.run(
        [sys.executable, "-m", "attractor", "run", "writes.dot", "--quiet", *extra],
        cwd=root, capture_output=True, text=True, timeout=120, input="",
        env={k: v for k, v in os.environ.items() if not k.startswith("ATTRACTOR_")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return sorted((root / ".attractor" / "runs").iterdir())[-1].name


def test_the_node_panel_gets_the_diff_of_the_stage(server: Server, root: Path) -> None:
    run_id = _cli_run(root)
    with server.client() as client:
        edit = client.get(f"/pipelines/{run_id}/nodes/edit/diff")
        look = client.get(f"/pipelines/{run_id}/nodes/look/diff")
        never = client.get(f"/pipelines/{run_id}/nodes/nope/diff")
    assert edit.status_code == 200, edit.text
    body = edit.json()
    assert "+changed-by-edit" in body["diff"] and "edited.txt" in body["stat"]
    assert body["truncated"] is False
    assert look.status_code == 200 and look.json()["diff"] == ""  # changed nothing
    assert never.status_code == 404 and "has no checkpoint" in never.json()["error"]


def test_a_run_without_workspace_has_no_diff_and_says_why(server: Server, root: Path) -> None:
    run_id = _cli_run(root, "--workspace", "none")
    with server.client() as client:
        response = client.get(f"/pipelines/{run_id}/nodes/edit/diff")
    assert response.status_code == 404
    assert "--workspace none" in response.json()["error"]


def test_a_gate_question_carries_the_diff_of_the_stage_before_it(
    server: Server, root: Path
) -> None:
    make_repo(root, {"README.md": "hello\n", ".gitignore": ".attractor/\n"})
    (root / "edits.dot").write_text(EDITS)
    with server.client() as client:
        run_id = client.post("/pipelines", json={"path": "edits.dot"}).json()["id"]
        deadline = time.monotonic() + 60
        while not (asked := client.get(f"/pipelines/{run_id}/questions").json()["questions"]):
            assert time.monotonic() < deadline, "the gate never asked"
            time.sleep(0.05)
        status = client.get(f"/pipelines/{run_id}").json()
        client.post(f"/pipelines/{run_id}/cancel", json={})
    diff = asked[0]["diff"]
    assert (diff["node"], diff["truncated"]) == ("edit", False)
    assert "+first line\n+second line" in diff["diff"] and "notes.txt" in diff["stat"]
    assert status["questions"][0]["diff"] == diff  # the run's status carries it too
