"""The web page in a real headless browser: Debian's chromium driven by Playwright.

The browser is the system one (``executable_path``); Playwright never downloads
its own. The screenshot of the run page is kept in ``test-artifacts/`` (or
``$ATTRACTOR_TEST_ARTIFACTS``) for a person to look at.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.server.browserkit import NEEDS_CHROMIUM, launched_chromium
from tests.server.serverkit import BREAKS_ITS_RUN, FLAKY, Server

ARTIFACTS = Path(
    os.environ.get("ATTRACTOR_TEST_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts")
)


# CI installs chromium (.ci/run), so there the page is always tested.
pytestmark = NEEDS_CHROMIUM


@pytest.fixture
def browser() -> Iterator[Browser]:
    with launched_chromium() as launched:
        yield launched


def _node(page: Page, node_id: str) -> object:
    return page.locator(f'[id="node-{node_id}"]')


def test_a_gate_is_answered_in_the_page_and_the_run_finishes(
    server: Server, root: Path, browser: Browser
) -> None:
    page = browser.new_page(viewport={"width": 1366, "height": 800})
    page.goto(f"{server.url}/?token={server.token}")  # the address attractor serve prints
    assert "token" not in page.url  # the page takes it out of the address bar
    expect(page.get_by_role("heading", name="Runs")).to_be_visible()
    page.get_by_label("Pipeline file under the server root").fill("gate.dot")
    page.keyboard.press("Enter")  # the form submits from the keyboard

    work = page.locator('#graph [id="node-work"]')
    expect(work).to_have_class(re.compile(r"\bstate-running\b"))
    (root / "go").touch()  # the tool step may finish now
    expect(work).to_have_class(re.compile(r"\bstate-success\b"))
    assert work.locator("polygon").first.get_attribute("fill") == "#86efac"

    question = page.locator("#question")
    expect(question).to_be_visible()
    expect(page.locator("#question-text")).to_have_text("review: Ship it?")
    page.get_by_label("[A] Approve").check()
    page.get_by_label("Comment (optional)").fill("looks right to me")
    page.get_by_role("button", name="Send answer").click()

    expect(page.locator("#run-status")).to_have_text("success")
    done = page.locator('#graph [id="node-done"]')
    expect(done).to_have_class(re.compile(r"^(?=.*\bstate-success\b)(?=.*\bcurrent\b)"))
    expect(page.locator("#run-progress")).to_have_text("node 4 of 4 on the main path")
    page.locator('#node-list button[data-node="review"]').click()
    expect(page.locator("#node-files")).to_contain_text("looks right to me")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "run-page.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000


AGENT = """digraph agent {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    fix   [prompt="Fix the build", max_turns=10]
    start -> fix -> done
}
"""
SCRIPT = {
    "responses": [
        {
            "text": "",
            "tool_calls": [
                {
                    "name": "shell",
                    "arguments": {"command": "while [ ! -f go ]; do sleep 0.05; done; echo built"},
                }
            ],
        },
        {"text": "The build is fixed."},
    ],
    "then": "stop",
}


def test_an_agent_node_shows_its_turn_and_tool_call_live(
    server: Server, root: Path, browser: Browser
) -> None:
    (root / "agent.dot").write_text(AGENT)
    (root / "model.json").write_text(json.dumps(SCRIPT))
    with server.client() as client:
        started = client.post(
            "/pipelines",
            json={"path": "agent.dot", "settings": {"backend": "scripted:model.json"}},
        )
    run_id = started.json()["id"]
    page = browser.new_page(viewport={"width": 1366, "height": 800})
    page.goto(f"{server.url}/?token={server.token}#/run/{run_id}")
    note = page.locator('#graph [id="node-fix"] text.live-note')
    expect(note).to_have_text("turn 1/10 · shell: while [ ! -f go ]; do sleep 0.05; done; …")
    expect(page.locator('#node-list button[data-node="fix"]')).to_contain_text("turn 1/10")
    # A keyboard user on the node's button stays there while the run's events redraw the list.
    page.locator('#node-list button[data-node="fix"]').focus()
    (root / "go").touch()
    expect(page.locator("#run-status")).to_have_text("success")
    expect(note).to_have_count(0)
    expect(page.locator('#node-list button[data-node="fix"]')).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.locator("#node-files")).to_contain_text("response.md")
    expect(page.locator("#node-facts")).to_contain_text("success")


def test_a_run_that_died_of_an_error_shows_failed_with_the_reason(
    server: Server, root: Path, browser: Browser
) -> None:
    (root / "breaks.dot").write_text(BREAKS_ITS_RUN)
    page = browser.new_page(viewport={"width": 1366, "height": 800})
    page.goto(f"{server.url}/?token={server.token}")
    page.get_by_label("Pipeline file under the server root").fill("breaks.dot")
    page.keyboard.press("Enter")
    expect(page.locator("#run-status")).to_have_text("fail")
    expect(page.locator("#run-error")).to_contain_text("checkpoint.json")
    expect(page.locator("#cancel-btn")).to_be_hidden()


def test_a_failed_run_offers_retry_and_going_back_not_resume(
    server: Server, root: Path, browser: Browser
) -> None:
    (root / "flaky.dot").write_text(FLAKY)
    page = browser.new_page(viewport={"width": 1366, "height": 800})
    page.goto(f"{server.url}/?token={server.token}")
    page.get_by_label("Pipeline file under the server root").fill("flaky.dot")
    page.keyboard.press("Enter")
    expect(page.locator("#run-status")).to_have_text("fail")
    expect(page.get_by_role("button", name="Resume run")).to_be_hidden()
    retry = page.get_by_role("button", name="Retry failed node")
    expect(retry).to_be_visible()
    (root / "fixed").touch()
    retry.click()
    expect(page.locator("#run-status")).to_have_text("success")
    expect(page.locator("#run-error")).to_have_text("")
    expect(retry).to_be_hidden()
    page.get_by_label("Run again from").select_option("check")
    events_before = _count_started(root, "check")
    page.get_by_role("button", name="Go back").click()
    expect(page.locator("#run-status")).to_have_text("success")
    deadline = time.monotonic() + 30
    while _count_started(root, "check") == events_before:  # the node ran once more
        assert time.monotonic() < deadline, "going back did not run check again"
        time.sleep(0.1)
    run_id = page.evaluate("() => decodeURIComponent(location.hash.match(/^#\\/run\\/(.+)$/)[1])")
    with server.client() as client:
        visits = client.get(f"/pipelines/{run_id}/nodes/check").json()["node"]["visits"]
    # The page shows the visits the server counts.
    expect(page.locator('#node-list button[data-node="check"]')).to_contain_text(f"x{visits}")


def _count_started(root: Path, node: str) -> int:
    """How many times ``node`` started, over every run under ``root``."""
    count = 0
    for events in (root / ".attractor" / "runs").glob("*/events.jsonl"):
        for line in events.read_text("utf-8").splitlines():
            event = json.loads(line)
            count += event.get("type") == "stage_started" and event.get("name") == node
    return count
