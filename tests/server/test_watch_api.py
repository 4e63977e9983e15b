"""What the page reads to watch a run, through the API: failure, timeline, logs, pruning."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from tests.server.serverkit import Server
from tests.server.test_web_watch import BREAKS, LOOPS
from tests.workspace.gitkit import age_run, git, make_repo


def finished(server: Server, run_id: str) -> dict[str, Any]:
    """The run's status once it is over (polled, for at most a minute)."""
    deadline = time.monotonic() + 60
    with server.client() as client:
        while True:
            data: dict[str, Any] = client.get(f"/pipelines/{run_id}").json()
            if not data["active"] and data["status"] != "running":
                return data
            assert time.monotonic() < deadline, f"run {run_id} is still {data['status']}"
            time.sleep(0.05)


def start(server: Server, path: str, **settings: str) -> str:
    with server.client() as client:
        started = client.post("/pipelines", json={"path": path, "settings": settings})
    assert started.status_code == 201, started.text
    return str(started.json()["id"])


def test_a_failed_run_says_which_node_failed_why_and_its_last_output(
    server: Server, root: Path
) -> None:
    (root / "breaks.dot").write_text(BREAKS)
    run_id = start(server, "breaks.dot")
    status = finished(server, run_id)
    manifest = json.loads((root / ".attractor" / "runs" / run_id / "manifest.json").read_text())
    assert status["failure"] == {
        "node": "build",
        "reason": manifest["failure_reason"],
        "output": "error: the file fixed is missing",
    }
    (root / "fixed").touch()
    with server.client() as client:
        client.post(f"/pipelines/{run_id}/resume", json={"retry_failed": True})
    again = finished(server, run_id)
    assert (again["status"], again["failure"]) == ("success", None)


def test_prune_deletes_ended_runs_only_and_says_why_it_kept_the_others(
    server: Server, root: Path
) -> None:
    (root / "breaks.dot").write_text(BREAKS)
    ended = start(server, "breaks.dot")
    finished(server, ended)
    going = start(server, "gate.dot")  # waits for the file "go"
    runs = root / ".attractor" / "runs"
    with server.client() as client:
        answer = client.post("/pipelines/prune", json={"ids": [ended, going, "nope", "../x"]})
        assert answer.status_code == 200
        assert answer.json()["deleted"] == [ended]
        kept = answer.json()["kept"]
        assert kept[going] == "the run is still going; cancel it first"
        assert "no run 'nope'" in kept["nope"] and "no run '../x'" in kept["../x"]
        assert client.post("/pipelines/prune", json={"ids": "all"}).status_code == 400
    assert not (runs / ended).exists() and (runs / going).is_dir()
    (root / "go").touch()


def test_the_timeline_and_every_attempts_files_are_served_and_no_other_folder(
    server: Server, root: Path
) -> None:
    (root / "loops.dot").write_text(LOOPS.replace("review -> flaky", "review -> done"))
    (root / "secret.txt").write_text("not a run file")
    run_id = start(server, "loops.dot")
    with server.client() as client:
        deadline = time.monotonic() + 60
        while not (questions := client.get(f"/pipelines/{run_id}/questions").json()["questions"]):
            assert time.monotonic() < deadline, "the gate never asked"
            time.sleep(0.05)
        client.post(
            f"/pipelines/{run_id}/questions/{questions[0]['id']}/answer", json={"answer": "D"}
        )
        finished(server, run_id)
        data = client.get(f"/pipelines/{run_id}/timeline").json()
        flaky = [
            (a["visit"], a["attempt"], a["status"], a["files"])
            for a in data["attempts"]
            if a["node"] == "flaky"
        ]
        assert flaky == [(1, 1, "retry", "flaky/v1-a1"), (1, 2, "success", "flaky")]
        assert [(b["branch"], b["status"]) for b in data["branches"]] == [
            ("left", "success"),
            ("right", "success"),
        ]
        assert [(w["node"], w["answer"]) for w in data["waits"]] == [("review", "D")]
        first = client.get(f"/pipelines/{run_id}/nodes/flaky", params={"attempt": "flaky/v1-a1"})
        assert "first try fails" in first.json()["files"]["stderr.txt"]
        for outside in ("..", "flaky/../..", "left", "/etc"):
            refused = client.get(f"/pipelines/{run_id}/nodes/flaky", params={"attempt": outside})
            assert refused.status_code == 404, outside


def test_a_stage_file_is_served_whole_redacted_and_never_from_outside_the_run(
    server: Server, root: Path
) -> None:
    (root / "breaks.dot").write_text(BREAKS)
    run_id = start(server, "breaks.dot")
    finished(server, run_id)
    run_dir = root / ".attractor" / "runs" / run_id
    big = "".join(f"line {i}\n" for i in range(20_000))
    (run_dir / "prep" / "stdout.txt").write_text(big)  # over the panel's 4000-byte tail
    (root / "outside.txt").write_text("not the run's")
    (run_dir / "build" / "stdout.txt").unlink()
    (run_dir / "build" / "stdout.txt").symlink_to(root / "outside.txt")
    base = f"/pipelines/{run_id}/nodes"
    with server.client() as client:
        panel = client.get(f"{base}/prep").json()["files"]["stdout.txt"]
        assert panel.startswith("…") and len(panel) < 4100
        whole = client.get(f"{base}/prep/files/stdout.txt")
        assert (whole.status_code, whole.text) == (200, big)
        assert whole.headers["content-type"] == "text/plain; charset=utf-8"
        assert client.get(f"{base}/build/files/stderr.txt").text.startswith("error: the file")
        assert client.get(f"{base}/build/files/stdout.txt").status_code == 403
        assert client.get(f"{base}/build/files/manifest.json").status_code == 404
        assert client.get(f"{base}/build/files/..%2Fmanifest.json").status_code == 404
        assert client.get(f"{base}/nobody/files/stdout.txt").status_code == 404
        # An agent's logs, an MCP server's stderr, an ACP terminal's output are stage files too.
        (run_dir / "prep" / "tools.log").write_text("--- turn 1: shell\n")
        (run_dir / "prep" / "mcp-docs.stderr.log").write_text("docs server up\n")
        (run_dir / "prep" / "acp_terminals").mkdir()
        (run_dir / "prep" / "acp_terminals" / "term-1.log").write_text("make: done\n")
        assert client.get(f"{base}/prep/files/tools.log").text == "--- turn 1: shell\n"
        assert client.get(f"{base}/prep/files/mcp-docs.stderr.log").text == "docs server up\n"
        terminal = client.get(f"{base}/prep/files/acp_terminals/term-1.log")
        assert (terminal.status_code, terminal.text) == (200, "make: done\n")
        assert client.get(f"{base}/prep/files/acp_terminals/x.txt").status_code == 404
        listing = client.get(f"{base}/prep").json()["listing"]
        names = [entry["name"] for entry in listing]
        assert {"acp_terminals/term-1.log", "mcp-docs.stderr.log", "tools.log"} <= set(names)
        assert {"name": "stdout.txt", "size": len(big)} in listing


WRITES = """digraph writes {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    edit  [shape=parallelogram, tool_command="echo edited > notes.txt"]
    start -> edit -> done
}
"""


def _refs(repo: Path) -> set[str]:
    return set(git(repo, "for-each-ref", "--format=%(refname)").splitlines())


def test_pruning_a_run_removes_its_worktree_and_branches_from_the_repository(
    server: Server, root: Path
) -> None:
    make_repo(root, {"README.md": "hello\n", ".gitignore": ".attractor/\n"})
    (root / "writes.dot").write_text(WRITES)
    pruned, other, gone = (start(server, "writes.dot") for _ in range(3))
    for run_id in (pruned, other, gone):
        finished(server, run_id)
    runs = root / ".attractor" / "runs"
    tree = Path(json.loads((runs / pruned / "manifest.json").read_text())["workspace"]["work_tree"])
    assert tree.is_dir() and f"refs/heads/attractor/{pruned}" in _refs(root)
    # A run directory deleted by hand: its branch is the user's to prune (runs --prune).
    shutil.rmtree(runs / gone)
    with server.client() as client:
        answer = client.post("/pipelines/prune", json={"ids": [pruned]}).json()
    assert answer == {"deleted": [pruned], "kept": {}, "workspaces": [pruned]}
    refs = _refs(root)
    assert f"refs/heads/attractor/{pruned}" not in refs
    assert not any(r.startswith(f"refs/attractor/{pruned}/") for r in refs)
    assert f"refs/heads/attractor/{other}" in refs
    assert f"refs/heads/attractor/{gone}" in refs  # only the runs named go
    trees = [line.split()[0] for line in git(root, "worktree", "list").splitlines()]
    assert not tree.exists() and str(tree) not in trees and len(trees) == 3  # checkout, other, gone
    assert (root / "notes.txt").exists() is False  # the checkout itself is untouched


def test_pruning_by_age_deletes_old_ended_runs_and_their_workspaces_and_keeps_running_ones(
    server: Server, root: Path
) -> None:
    make_repo(root, {"README.md": "hello\n", ".gitignore": ".attractor/\n"})
    (root / "writes.dot").write_text(WRITES)
    old, recent = start(server, "writes.dot"), start(server, "writes.dot")
    for run_id in (old, recent):
        finished(server, run_id)
    going = start(server, "gate.dot")  # waits for the file "go"
    with server.client() as client:
        deadline = time.monotonic() + 60
        while client.get(f"/pipelines/{going}").json()["current_node"] != "work":
            assert time.monotonic() < deadline, "the run never reached its tool step"
            time.sleep(0.05)
        age_run(root / ".attractor" / "runs" / old, 10)
        age_run(root / ".attractor" / "runs" / going, 10)
        answer = client.post("/pipelines/prune", json={"older_than": "7d"}).json()
        refused = client.post("/pipelines/prune", json={"older_than": "soon"})
        both = client.post("/pipelines/prune", json={"older_than": "7d", "ids": [recent]})
    assert answer == {
        "deleted": [old],
        "kept": {going: "the run is still going; cancel it first"},
        "workspaces": [old],
    }
    runs = root / ".attractor" / "runs"
    assert not (runs / old).exists() and (runs / recent).is_dir() and (runs / going).is_dir()
    refs = _refs(root)
    assert f"refs/heads/attractor/{old}" not in refs and f"refs/heads/attractor/{recent}" in refs
    assert refused.status_code == 400 and "is not a duration" in refused.json()["error"]
    assert both.status_code == 400
    with server.client() as client:
        client.post(f"/pipelines/{going}/cancel", json={})
