"""Each step's boundary through ``attractor serve``: the node API and the node panel.

A node that ran reports the boundary its step recorded in ``status.json``; a
node that has not run yet reports the one the run's settings plan for it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.browserkit import SKIP_WITHOUT_CHROMIUM, launched_chromium
from tests.server.serverkit import Server

BOUNDED = """digraph bounded {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    first [shape=parallelogram, sandbox=none, env=none,
           tool_command="while [ ! -f go ]; do sleep 0.05; done"]
    later [shape=parallelogram, sandbox=none, env_allow="DEPLOY_*", tool_command="true"]
    start -> first -> later -> done
}
"""


def _state(server: Server, run_id: str, node: str) -> str:
    with server.client() as client:
        return str(client.get(f"/pipelines/{run_id}").json()["nodes"][node]["state"])


def _wait(condition: object, what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return
        time.sleep(0.05)  # the run has not got there yet
    raise AssertionError(f"timed out waiting for {what}")


def _start(server: Server, root: Path) -> str:
    (root / "bounded.dot").write_text(BOUNDED)
    with server.client() as client:
        response = client.post("/pipelines", json={"path": "bounded.dot"})
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_the_node_api_says_where_each_step_runs(server: Server, root: Path) -> None:
    run_id = _start(server, root)
    _wait(lambda: _state(server, run_id, "first") == "running", "the first step to start")
    with server.client() as client:
        later = client.get(f"/pipelines/{run_id}/nodes/later").json()
        assert later["boundary"] == "local, no sandbox, env=core allow=DEPLOY_*"  # planned
        (root / "go").touch()
        _wait(lambda: _state(server, run_id, "done") == "success", "the run to finish")
        first = client.get(f"/pipelines/{run_id}/nodes/first").json()
        assert first["boundary"] == "local, no sandbox, env=none"  # as status.json recorded
        assert "boundary" not in client.get(f"/pipelines/{run_id}/nodes/start").json()


def test_the_run_api_says_where_every_step_runs(server: Server, root: Path) -> None:
    run_id = _start(server, root)
    _wait(lambda: _state(server, run_id, "first") == "running", "the first step to start")
    with server.client() as client:
        nodes = client.get(f"/pipelines/{run_id}").json()["nodes"]
        assert nodes["later"]["boundary"] == "local, no sandbox, env=core allow=DEPLOY_*"
        assert nodes["first"]["boundary"] == "local, no sandbox, env=none"
        assert nodes["start"]["boundary"] is None  # runs no command
        (root / "go").touch()
        _wait(lambda: _state(server, run_id, "done") == "success", "the run to finish")
        nodes = client.get(f"/pipelines/{run_id}").json()["nodes"]
        each = {
            node_id: client.get(f"/pipelines/{run_id}/nodes/{node_id}").json()
            for node_id in ("first", "later")
        }
    for node_id, detail in each.items():  # the same line as the node endpoint's
        assert nodes[node_id]["boundary"] == detail["boundary"]


@pytest.fixture
def page_of(server: Server) -> Iterator[object]:
    with launched_chromium() as browser:
        yield browser.new_page(viewport={"width": 1366, "height": 800})


@pytest.mark.slow
@SKIP_WITHOUT_CHROMIUM
def test_the_node_panel_shows_the_boundary_in_one_line(
    server: Server, root: Path, page_of: object
) -> None:
    from playwright.sync_api import Page, expect

    page = page_of
    assert isinstance(page, Page)
    run_id = _start(server, root)
    (root / "go").touch()
    _wait(lambda: _state(server, run_id, "done") == "success", "the run to finish")
    page.goto(f"{server.url}/?token={server.token}#/run/{run_id}")
    page.locator('#node-list button[data-node="first"]').press("Enter")
    facts = page.locator("#node-facts")
    expect(facts.locator("dt", has_text="boundary")).to_have_count(1)
    expect(facts.locator("dd").last).to_have_text("local, no sandbox, env=none")
    # The nodes list says it too, as each step's tooltip.
    later = page.locator('#node-list button[data-node="later"]')
    expect(later).to_have_attribute("title", "boundary: local, no sandbox, env=core allow=DEPLOY_*")
