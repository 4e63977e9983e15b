"""``POST /pipelines/{id}/cancel`` stops a run whose steps finish at once.

Before the engine yielded once per step, such a run held the server's event
loop: the cancel (and every other request) waited until the run ended by
itself. Each pipeline here loops forever on instant steps.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.runkit import wait_for
from tests.server.serverkit import Server

#: How long a request or a cancelled run may take on a loaded two-core machine.
WITHIN = 10.0

HEAD = "start [shape=Mdiamond]; exit [shape=Msquare]\n"
LOOPS = {
    "simulate": HEAD + 'a [prompt="again"]\nstart -> a\n'
    'a -> a [condition="outcome=success"]\na -> exit [condition="outcome=fail"]',
    "conditional": HEAD + "c [shape=diamond]\nstart -> c\n"
    'c -> c [condition="outcome=success"]\nc -> exit [condition="outcome=fail"]',
    # Each turn runs 300 instant diamonds in a new run directory.
    "loop_restart": HEAD
    + 'a [prompt="again"]\nstart -> a -> '
    + " -> ".join(f"c{i}" for i in range(300))
    + "\n"
    + "".join(f"c{i} [shape=diamond]\n" for i in range(300))
    + 'c299 -> a [condition="outcome=success", loop_restart=true]\n'
    'c299 -> exit [condition="outcome=fail"]',
}


def _manifest(run_dir: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((run_dir / "manifest.json").read_text("utf-8"))
    return data


def _run_dirs(root: Path, run_id: str) -> list[Path]:
    """The run's directories, oldest first (``ID``, ``ID-restart1``, ``ID-restart2``, ...)."""
    runs = root / ".attractor" / "runs"
    found = [p for p in runs.iterdir() if p.name == run_id or p.name.startswith(run_id + "-")]
    return sorted(found, key=lambda p: (len(p.name), p.name))


def _size(root: Path, run_id: str) -> int:
    return sum(
        (d / "events.jsonl").stat().st_size
        for d in _run_dirs(root, run_id)
        if (d / "events.jsonl").is_file()
    )


@pytest.mark.parametrize("kind", list(LOOPS))
def test_cancel_stops_an_instant_loop_and_the_server_answers_meanwhile(
    server: Server, root: Path, kind: str
) -> None:
    dot = "digraph loop {\n" + LOOPS[kind] + "\n}\n"
    with server.client() as client:
        created = client.post("/pipelines", json={"dot_source": dot})
        assert created.status_code == 201, created.text
        run_id = created.json()["id"]
        wait_for(
            lambda: len(_run_dirs(root, run_id)) >= 5 or _size(root, run_id) > 40_000,
            "the loop to get going",
            timeout=WITHIN,
        )
        # The server answers while the run goes.
        assert client.get("/pipelines").status_code == 200
        # The id the start returned cancels the run, even after a loop_restart
        # took it on into a new directory.
        response = client.post(f"/pipelines/{run_id}/cancel", json={})
        assert response.status_code == 202, response.text

        def ended() -> bool:
            newest = _run_dirs(root, run_id)[-1].name
            return client.get(f"/pipelines/{newest}").json()["active"] is False

        wait_for(ended, "the cancelled run to end", timeout=WITHIN)
    last = [d for d in _run_dirs(root, run_id) if _manifest(d)["status"] != "restarted"]
    assert len(last) == 1, last
    assert _manifest(last[0])["status"] == "interrupted"
    checkpoint = json.loads((last[0] / "checkpoint.json").read_text("utf-8"))
    assert checkpoint["status"] == "interrupted" and checkpoint["next_node"], checkpoint


def test_a_request_may_bound_the_run_with_max_steps(server: Server, root: Path) -> None:
    dot = "digraph loop {\n" + LOOPS["simulate"] + "\n}\n"
    with server.client() as client:
        created = client.post("/pipelines", json={"dot_source": dot, "settings": {"max_steps": 7}})
        assert created.status_code == 201, created.text
        run_id = created.json()["id"]
        wait_for(
            lambda: client.get(f"/pipelines/{run_id}").json()["active"] is False,
            "the end",
            timeout=WITHIN,
        )
        data = client.get(f"/pipelines/{run_id}").json()
    assert data["status"] == "fail", data
    assert "step budget" in data["failure_reason"] and "7 of 7" in data["failure_reason"], data
