"""A run ``attractor serve`` drives notifies its webhook with a link to the run's page."""

from __future__ import annotations

from pathlib import Path

from tests.cli.runkit import wait_for
from tests.notify.hookserver import Hook
from tests.server.serverkit import start_server


def test_a_notification_links_to_the_run_on_the_page(root: Path) -> None:
    with Hook().running() as hook:
        (root / "hooked.dot").write_text(
            "digraph hooked {\n"
            f'  graph [notify="{hook.url}", notify_on="run_started,run_finished"]\n'
            "  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
            '  step [shape=parallelogram, tool_command="echo fine"]\n'
            "  start -> step -> done\n}\n"
        )
        server = start_server(root)
        try:
            with server.client() as client:
                response = client.post("/pipelines", json={"path": "hooked.dot"})
                assert response.status_code == 201, response.text
                run_id = response.json()["id"]
            wait_for(lambda: len(hook.requests) == 2, "both notifications")
        finally:
            server.stop()
    started, finished = (r.json() for r in hook.requests)
    assert (started["event"], finished["event"]) == ("run_started", "run_finished")
    assert started["url"] == finished["url"] == f"{server.url}/#/run/{run_id}"
    assert finished["status"] == "success" and finished["run_id"] == run_id
    assert "token" not in finished["url"]
