"""Watching and steering a run in the web page (Debian's chromium driven by Playwright).

Each test drives one thing a person watching a run relies on: what it spent,
why it failed, the runs list (and pruning it), the timeline, a gate's material
(its diff too), a step's live log, a webhook told of a gate and of the answer
given on the page. Screenshots go to the test's tmp folder, and, when
``ATTRACTOR_SCREENSHOTS`` names a folder (docs/screenshots/ holds the ones
kept for review), there too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Locator, Page, expect

from tests.cli.runkit import wait_for
from tests.notify.hookserver import Hook
from tests.server.browserkit import NEEDS_CHROMIUM, launched_chromium
from tests.server.serverkit import Server, scripted_answer, write_spending_run
from tests.workspace.gitkit import age_run, git, make_repo

pytestmark = NEEDS_CHROMIUM


@pytest.fixture
def browser() -> Iterator[Browser]:
    with launched_chromium() as launched:
        yield launched


def _open(browser: Browser, server: Server, where: str = "") -> Page:
    page = browser.new_page(viewport={"width": 1280, "height": 820})
    page.goto(f"{server.url}/?token={server.token}{where}")
    return page


def _shot(target: Page | Locator, tmp_path: Path, name: str) -> Path:
    """A screenshot in the test's tmp folder (and in $ATTRACTOR_SCREENSHOTS when set)."""
    shot = tmp_path / "screenshots" / f"{name}.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(target, Page):
        target.screenshot(path=str(shot), full_page=False)
    else:
        target.screenshot(path=str(shot))
    assert shot.stat().st_size > 1_000
    keep = os.environ.get("ATTRACTOR_SCREENSHOTS")
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, Path(keep) / shot.name)
    return shot


def _start(server: Server, path: str, **settings: str) -> str:
    with server.client() as client:
        started = client.post("/pipelines", json={"path": path, "settings": settings})
    assert started.status_code == 201, started.text
    return str(started.json()["id"])


def _manifest(root: Path, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (root / ".attractor" / "runs" / run_id / "manifest.json").read_text()
    )
    return data


def _number(text: str) -> float:
    return float(text.replace(",", "").removeprefix("$") or 0)


def test_costs_show_per_node_branch_and_run_and_add_up_to_the_manifest(
    server: Server, root: Path, browser: Browser, tmp_path: Path
) -> None:
    write_spending_run(root)
    run_id = _start(
        server,
        "spends.dot",
        backend="scripted:model.json",
        max_cost="5",
        max_total_turns="40",
        max_total_tokens="20000",
        timeout="10m",
    )
    page = _open(browser, server, f"#/run/{run_id}")
    expect(page.locator("#run-status")).to_have_text("success")
    manifest = _manifest(root, run_id)["usage"]
    total = page.locator('#costs-body tr[data-kind="run"]')
    expect(total).to_be_visible()
    cells = total.locator("td")
    expect(cells.nth(0)).to_have_text(f"{manifest['input_tokens']:,}")
    assert _number(cells.nth(1).inner_text()) == manifest["output_tokens"]
    assert _number(cells.nth(2).inner_text()) == manifest["cache_read_tokens"]
    assert _number(cells.nth(3).inner_text()) == pytest.approx(manifest["cost"], abs=1e-4)
    # The nodes' rows add up to the run's: nothing is counted twice or left out.
    nodes = page.locator('#costs-body tr[data-kind="node"]')
    expect(nodes).to_have_count(3)  # plan, left, right
    expect(page.locator('#costs-body tr[data-kind="other"]')).to_have_count(0)
    for column, key in ((0, "input_tokens"), (1, "output_tokens")):
        cells_of = nodes.locator(f"td:nth-child({column + 2})")
        values = [_number(t) for t in cells_of.all_inner_texts()]
        assert sum(values) == manifest[key]
    branches = page.locator('#costs-body tr[data-kind="branch"]')
    expect(branches).to_have_count(2)
    expect(branches.first).to_contain_text("fan → left")
    expect(page.locator("#run-usage")).to_contain_text(f"${manifest['cost']:.4f}")
    # The budgets the run was given fill as it spends them.
    cost_bar = page.locator('#budgets li[data-budget="cost"] [role="meter"]')
    assert float(cost_bar.get_attribute("aria-valuenow") or "0") == pytest.approx(manifest["cost"])
    expect(page.locator('#budgets li[data-budget="turns"]')).to_contain_text("4 of 40")
    # The tokens budget (--max-total-tokens): input plus output, as the manifest has them.
    tokens = manifest["input_tokens"] + manifest["output_tokens"]
    token_bar = page.locator('#budgets li[data-budget="tokens"] [role="meter"]')
    expect(token_bar).to_have_attribute("aria-valuenow", str(tokens))
    expect(token_bar).to_have_attribute("aria-valuemax", "20000")
    expect(page.locator('#budgets li[data-budget="tokens"]')).to_contain_text(
        f"{tokens:,} of 20,000"
    )
    fill = token_bar.locator(".fill")
    expect(fill).to_have_attribute("style", f"width: {tokens / 20000 * 100:.1f}%")
    expect(page.locator('#budgets li[data-budget="time"]')).to_be_visible()
    # Each request of a node, in its panel.
    page.locator('#node-list button[data-node="plan"]').click()
    expect(page.locator("#node-facts")).to_contain_text("2,500 in (600 cached) / 300 out")
    page.locator("#node-requests summary").click()
    expect(page.locator("#node-requests tbody tr")).to_have_count(2)
    # Each request's cached tokens and cost: 400 new in, 600 cached, 100 out.
    first = page.locator("#node-requests tbody tr").first.locator("td")
    expect(first.nth(4)).to_have_text("600")
    expect(first.nth(5)).to_have_text(f"${(400 * 100 + 600 * 10 + 100 * 1000) / 1e6:.4f}")
    _shot(page.locator("#costs"), tmp_path, "costs-table")
    _shot(page.locator("#node-requests"), tmp_path, "costs-requests")
    _shot(page.locator(".run-head"), tmp_path, "costs-head")
    _shot(page.locator("#budgets"), tmp_path, "budgets")
    # The runs list shows the run's cost too.
    page.goto(f"{server.url}/#/")
    expect(page.locator("#runs-body tr").first.locator("td.cost")).to_contain_text(
        f"${manifest['cost']:.4f}"
    )


_FAILS = "echo compiling; echo 'error: the file fixed is missing' >&2; test -f fixed"
BREAKS = f"""digraph breaks {{
    start [shape=Mdiamond]
    done  [shape=Msquare]
    prep  [shape=parallelogram, tool_command="echo prepared"]
    build [shape=parallelogram, tool_command="{_FAILS}"]
    start -> prep -> build -> done
}}
"""


def test_a_failed_run_opens_with_a_banner_that_says_what_and_why_and_offers_the_ways_on(
    server: Server, root: Path, browser: Browser, tmp_path: Path
) -> None:
    (root / "breaks.dot").write_text(BREAKS)
    run_id = _start(server, "breaks.dot")
    page = _open(browser, server, f"#/run/{run_id}")
    banner = page.locator("#failure")
    expect(banner).to_be_visible()
    expect(page.locator("#failure-title")).to_have_text("Run failed at build")
    reason = _manifest(root, run_id)["failure_reason"]
    assert reason
    expect(page.locator("#failure-reason")).to_have_text(reason)
    expect(page.locator("#failure-output")).to_have_text("error: the file fixed is missing")
    _shot(page.locator("#failure"), tmp_path, "failure-banner")
    # Run from here: the failed node runs again (and fails again: nothing changed).
    page.get_by_role("button", name="Run from here", exact=True).click()
    started = page.locator("#event-log li", has_text="stage_started build")
    expect(started).to_have_count(2)
    expect(banner).to_be_visible()
    (root / "fixed").touch()
    page.get_by_role("button", name="Retry failed", exact=True).click()
    expect(page.locator("#run-status")).to_have_text("success")
    expect(banner).to_be_hidden()


def test_the_runs_list_follows_runs_live_filters_them_and_prunes_the_ones_picked(
    server: Server, root: Path, browser: Browser, tmp_path: Path
) -> None:
    (root / "breaks.dot").write_text(BREAKS)
    failed = _start(server, "breaks.dot")
    page = _open(browser, server)
    row = page.locator(f'#runs-body tr[data-run="{failed}"]')
    expect(row).to_have_attribute("data-status", "fail")
    expect(row.locator("td.reason")).to_contain_text("error: the file fixed is missing")
    # A run started elsewhere appears, and its gate's waiting shows, without a reload.
    gated = _start(server, "gate.dot")
    live = page.locator(f'#runs-body tr[data-run="{gated}"]')
    expect(live).to_have_attribute("data-status", "running")
    expect(live.locator("input[type=checkbox]")).to_be_disabled()
    (root / "go").touch()
    expect(live).to_contain_text("waiting for you")
    # A run that spent: the scripted model's tokens at the configured prices.
    write_spending_run(root)
    spent = _start(server, "spends.dot", backend="scripted:model.json")
    spent_row = page.locator(f'#runs-body tr[data-run="{spent}"]')
    expect(spent_row).to_have_attribute("data-status", "success")
    cost = _manifest(root, spent)["usage"]["cost"]
    assert cost > 0
    expect(spent_row.locator("td.cost")).to_contain_text(f"${cost:.4f}")
    _shot(page.locator("#runs-view"), tmp_path, "runs-list")
    page.get_by_label("Status").select_option("waiting for you")
    expect(page.locator("#runs-body tr")).to_have_count(1)
    page.get_by_label("Status").select_option("")
    page.get_by_label("Pipeline", exact=True).select_option("breaks")
    expect(page.locator("#runs-body tr")).to_have_count(1)
    expect(row).to_be_visible()
    page.get_by_label("Pipeline", exact=True).select_option("")
    # Pruning asks first, then deletes the picked run's directory only.
    row.get_by_role("checkbox").check()
    asked: list[str] = []

    def answer(dialog: Any) -> None:
        asked.append(dialog.message)
        dialog.accept()

    page.once("dialog", answer)
    page.get_by_role("button", name="Delete 1 selected run").click()
    expect(row).to_have_count(0)
    assert asked == [
        f"Delete run {failed} and every file of it, with its git worktree and its branch "
        "attractor/RUN_ID (merge what you want to keep first)? This cannot be undone."
    ]
    assert not (root / ".attractor" / "runs" / failed).exists()
    assert (root / ".attractor" / "runs" / gated).is_dir()
    expect(live).to_be_visible()
    # Old runs go by age: one that ended ten days ago, not the one still waiting.
    old = _start(server, "breaks.dot")
    old_row = page.locator(f'#runs-body tr[data-run="{old}"]')
    expect(old_row).to_have_attribute("data-status", "fail")
    age_run(root / ".attractor" / "runs" / old, 10)
    age_run(root / ".attractor" / "runs" / gated, 10)
    page.get_by_label("Ended more than").select_option("7d")
    page.once("dialog", answer)
    page.get_by_role("button", name="Delete old runs").click()
    expect(page.locator("#runs-note")).to_have_text("Deleted 1 run.")
    expect(old_row).to_have_count(0)
    expect(page.locator("#runs-error")).to_have_text(
        f"{gated}: the run is still going; cancel it first"
    )
    assert asked[-1] == (
        "Delete every run that ended more than 7 days ago, with its files, its git worktree "
        "and its branch attractor/RUN_ID (merge what you want to keep first)? "
        "This cannot be undone."
    )
    assert not (root / ".attractor" / "runs" / old).exists()
    expect(live).to_be_visible()


_FIRST_TRY_FAILS = (
    "if [ -f once ]; then echo second try works; "
    "else touch once; echo first try fails >&2; exit 1; fi"
)
LOOPS = f"""digraph loops {{
    start  [shape=Mdiamond]
    done   [shape=Msquare]
    flaky  [shape=parallelogram, max_retries=2, tool_command="{_FIRST_TRY_FAILS}"]
    fan    [shape=component]
    left   [shape=parallelogram, tool_command="echo left"]
    right  [shape=parallelogram, tool_command="echo right"]
    join   [shape=tripleoctagon]
    review [shape=hexagon, label="Again?"]
    start -> flaky -> fan
    fan -> left
    fan -> right
    left -> join
    right -> join
    join -> review
    review -> done  [label="[D] Done"]
    review -> flaky [label="[A] Again"]
}}
"""


def _started_attempts(root: Path, run_id: str) -> list[tuple[str, int, int]]:
    events = root / ".attractor" / "runs" / run_id / "events.jsonl"
    return [
        (e["name"], e["visit"], e["attempt"])
        for e in map(json.loads, events.read_text().splitlines())
        if e["type"] == "stage_started"
    ]


def test_the_timeline_shows_every_visit_attempt_branch_and_wait_as_the_journal_has_them(
    server: Server, root: Path, browser: Browser, tmp_path: Path
) -> None:
    (root / "loops.dot").write_text(LOOPS)
    run_id = _start(server, "loops.dot")
    page = _open(browser, server, f"#/run/{run_id}")
    page.get_by_role("tab", name="Timeline").click()
    expect(page.locator("#question")).to_be_visible()
    expect(page.locator("#timeline .wait")).to_have_count(1)  # the gate waits now
    waiting = page.locator("#timeline .wait")
    drawn = waiting.get_attribute("style")
    expect(waiting).not_to_have_attribute("style", drawn or "")  # the wait grows as it goes on
    page.get_by_label("[A] Again").check()
    page.get_by_role("button", name="Send answer").click()
    expect(page.locator("#question-text")).to_have_text("review: Again?")
    expect(page.locator("#timeline .wait")).to_have_count(2)
    page.get_by_label("[D] Done").check()
    page.get_by_role("button", name="Send answer").click()
    expect(page.locator("#run-status")).to_have_text("success")
    # One bar per attempt the events journal started, with its numbers.
    journal = _started_attempts(root, run_id)
    bars = page.locator("#timeline button.bar")
    expect(bars).to_have_count(len(journal))
    shown = [
        (
            b.get_attribute("data-node"),
            int(b.get_attribute("data-visit") or 0),
            int(b.get_attribute("data-attempt") or 0),
        )
        for b in bars.all()
    ]
    assert sorted(shown) == sorted(journal)  # type: ignore[arg-type]
    assert ("flaky", 1, 2) in journal and ("flaky", 2, 1) in journal  # a retry, a second visit
    retry = page.locator(
        '#timeline button.bar[data-node="flaky"][data-visit="1"][data-attempt="1"]'
    )
    expect(retry).to_have_class("bar s-retry")
    expect(page.locator("#timeline .bar.branch")).to_have_count(4)  # two branches, two visits
    expect(page.locator("#timeline .wait")).to_have_count(2)
    _shot(page.locator(".graph-panel"), tmp_path, "timeline")
    # Each visit's and attempt's files are reachable: the first, failed attempt's too.
    retry.click()
    expect(page.locator("#node-files")).to_have_attribute("data-folder", "flaky/v1-a1")
    page.locator("#node-files summary", has_text="stderr.txt").click()
    expect(page.locator("#node-files")).to_contain_text("first try fails")
    attempts = page.locator("#node-attempts button")
    expect(attempts).to_have_count(3)
    attempts.nth(2).click()
    expect(page.locator("#node-files")).to_have_attribute("data-folder", "flaky")
    page.locator("#node-files summary", has_text="stdout.txt").click()
    expect(page.locator("#node-files")).to_contain_text("second try works")


DECIDE = """digraph decide {
    start  [shape=Mdiamond]
    done   [shape=Msquare]
    write  [prompt="Write the release notes"]
    review [shape=hexagon, label="Publish the notes?",
            human.default_choice="Hold", human.timeout="10m"]
    check  [shape=hexagon, label="Is the changelog right?", human.show="CHANGELOG.md"]
    start -> write -> review
    review -> check [label="[P] Publish"]
    review -> done  [label="[H] Hold"]
    check -> done   [label="[Y] Yes"]
}
"""
NOTES = {"responses": [{"text": "Release notes: the page draws timelines now."}]}


def test_a_gate_shows_what_it_asks_about_its_default_and_deadline_and_the_answer_is_logged(
    server: Server, root: Path, browser: Browser, tmp_path: Path
) -> None:
    (root / "decide.dot").write_text(DECIDE)
    (root / "notes.json").write_text(json.dumps(NOTES))
    (root / "CHANGELOG.md").write_text("## 1.2\n- timelines in the page\n")
    run_id = _start(server, "decide.dot", backend="scripted:notes.json")
    page = _open(browser, server, f"#/run/{run_id}")
    expect(page.locator("#question-text")).to_have_text("review: Publish the notes?")
    expect(page.locator("#question-material-title")).to_have_text("To review: response of write")
    expect(page.locator("#question-review")).to_have_text(
        "Release notes: the page draws timelines now."
    )
    hold = page.get_by_label("[H] Hold")
    expect(hold).to_be_checked()  # the default is picked to begin with
    expect(page.locator("#question-options")).to_contain_text("[H] Hold (default)")
    expect(page.locator("#question-deadline")).to_contain_text("after that the gate takes [H] Hold")
    expect(page.locator("#question-diff")).to_be_hidden()  # the LLM stage changed no file
    _shot(page.locator("#question"), tmp_path, "gate")
    page.get_by_label("[P] Publish").check()
    page.get_by_label("Comment (optional)").fill("ship it")
    page.get_by_role("button", name="Send answer").click()
    # The next gate shows the file it names.
    expect(page.locator("#question-text")).to_have_text("check: Is the changelog right?")
    expect(page.locator("#question-material-title")).to_have_text("To review: CHANGELOG.md")
    expect(page.locator("#question-review")).to_contain_text("- timelines in the page")
    expect(page.locator("#question-deadline")).to_be_hidden()  # this gate waits for ever
    page.get_by_role("button", name="Send answer").click()
    expect(page.locator("#run-status")).to_have_text("success")
    answered = page.locator("#event-log li", has_text="interview_completed")
    expect(answered.first).to_contain_text("Publish the notes? → P")


_EDIT = "printf 'first line\\nsecond line\\n' > notes.txt; echo edited"
EDITS = f"""digraph edits {{
    start  [shape=Mdiamond]
    done   [shape=Msquare]
    edit   [shape=parallelogram, tool_command="{_EDIT}"]
    review [shape=hexagon, label="Keep the notes?"]
    look   [shape=parallelogram, tool_command="cat notes.txt"]
    start -> edit -> review
    review -> look [label="[K] Keep"]
    look -> done
}}
"""


def test_a_gate_shows_the_diff_of_the_stage_before_it_and_the_node_panel_each_stages_diff(
    server: Server, root: Path, browser: Browser, tmp_path: Path
) -> None:
    make_repo(root, {"README.md": "hello\n", ".gitignore": ".attractor/\n"})
    (root / "edits.dot").write_text(EDITS)
    run_id = _start(server, "edits.dot")
    page = _open(browser, server, f"#/run/{run_id}")
    expect(page.locator("#question-text")).to_have_text("review: Keep the notes?")
    # What the tool stage changed in the run's worktree, as git has it.
    changes = page.locator("#question-diff")
    expect(changes).to_be_visible()
    expect(changes.locator("summary")).to_have_text(
        "Changes of edit (1 file changed, 2 insertions(+))"
    )
    expect(changes.locator("pre.diff")).to_contain_text("+++ b/notes.txt")
    expect(changes.locator("pre.diff .d-add", has_text="+second line")).to_have_count(1)
    _shot(page.locator("#question"), tmp_path, "gate-diff")
    page.get_by_role("button", name="Send answer").click()
    expect(page.locator("#run-status")).to_have_text("success")
    # The node panel shows the diff of a stage that changed files, and none for one that did not.
    page.locator('#node-list button[data-node="edit"]').click()
    shown = page.locator("#node-diff")
    expect(shown).to_be_visible()
    expect(shown.locator("pre.diff")).to_contain_text("+first line\n+second line")
    _shot(shown, tmp_path, "node-diff")
    page.locator('#node-list button[data-node="look"]').click()
    expect(page.locator("#node-files")).to_contain_text("second line")  # its stdout
    expect(page.locator("#node-diff")).to_be_hidden()
    assert "notes.txt" not in git(root, "status", "--porcelain")  # the checkout is untouched


HOOKED = """digraph hooked {{
    graph [notify="{url}", notify_on="gate_waiting,gate_answered"]
    start  [shape=Mdiamond]
    done   [shape=Msquare]
    work   [shape=parallelogram, tool_command="echo built"]
    review [shape=hexagon, label="Ship it?"]
    start -> work -> review
    review -> done [label="[A] Approve"]
    review -> work [label="[R] Redo"]
}}
"""


def test_a_waiting_gate_and_its_answer_on_the_page_reach_the_webhook(
    server: Server, root: Path, browser: Browser, tmp_path: Path
) -> None:
    with Hook().running() as hook:
        (root / "hooked.dot").write_text(HOOKED.format(url=hook.url))
        run_id = _start(server, "hooked.dot")
        page = _open(browser, server, f"#/run/{run_id}")
        expect(page.locator("#question-text")).to_have_text("review: Ship it?")
        wait_for(lambda: hook.events() == ["gate_waiting"], "the gate_waiting notification")
        page.get_by_label("[A] Approve").check()
        page.get_by_label("Comment (optional)").fill("the build log is clean")
        page.get_by_role("button", name="Send answer").click()
        expect(page.locator("#run-status")).to_have_text("success")
        wait_for(lambda: len(hook.requests) == 2, "the gate_answered notification")
    waiting, answered = (r.json() for r in hook.requests)
    link = f"{server.url}/#/run/{run_id}"
    assert (waiting["event"], waiting["run_id"], waiting["url"]) == ("gate_waiting", run_id, link)
    assert waiting["node"] == "review" and waiting["details"]["question"] == "Ship it?"
    assert (answered["event"], answered["url"]) == ("gate_answered", link)
    assert answered["details"] == {
        "question": "Ship it?",
        "answer": "A",
        "label": "[A] Approve",
        "answered_by": "page",
        "comment": "the build log is clean",
    }
    # The page's event log says the same: who answered, and the comment.
    logged = page.locator("#event-log li", has_text="interview_completed")
    expect(logged).to_contain_text('Ship it? → A ([A] Approve) by page: "the build log is clean"')
    _shot(page.locator("#event-log"), tmp_path, "event-log-answer")


def test_the_event_log_says_who_answered_a_gate_and_their_comment(
    server: Server, root: Path, browser: Browser
) -> None:
    run_id = _start(server, "gate.dot")
    (root / "go").touch()
    with server.client() as client:
        deadline = time.monotonic() + 60
        while not (asked := client.get(f"/pipelines/{run_id}/questions").json()["questions"]):
            assert time.monotonic() < deadline, "the gate never asked"
            time.sleep(0.05)
        client.post(f"/pipelines/{run_id}/cancel", json={})
    events = root / ".attractor" / "runs" / run_id / "events.jsonl"
    deadline = time.monotonic() + 60
    while '"pipeline_interrupted"' not in events.read_text():
        assert time.monotonic() < deadline, "the run did not stop"
        time.sleep(0.05)
    # An answer as the engine records it (who answered, with the comment).
    answer = {
        "type": "interview_completed",
        "ts": time.time(),
        "question": asked[0]["text"],
        "answer": "A",
        "duration": 3.5,
        "answered_by": "cli",
        "comment": "checked the build log",
    }
    with events.open("a") as log:
        log.write(json.dumps(answer) + "\n")
    page = _open(browser, server, f"#/run/{run_id}")
    expect(page.locator("#event-log li").last).to_contain_text(
        'Ship it? → A by cli: "checked the build log"'
    )


#: A build step that prints as a real one does (colours, a progress bar redrawn in
#: place, a warning on stderr), then waits for the file "more", prints 700 lines,
#: and waits for "go".
BUILD_SCRIPT = r"""printf '\033[1;32mok\033[0m compiled 3 files\n'
printf '\033[2K\rbuilding 10%%\rbuilding 100%%\n'
echo 'warning: slow disk' >&2
while [ ! -f more ]; do sleep 0.05; done
i=1; while [ $i -le 700 ]; do echo "line $i"; i=$((i+1)); done
while [ ! -f go ]; do sleep 0.05; done
echo built
"""
BUILDS = """digraph builds {
    start  [shape=Mdiamond]
    done   [shape=Msquare]
    work   [shape=parallelogram, tool_command="sh build.sh"]
    review [shape=hexagon, label="Ship it?"]
    start -> work -> review
    review -> done [label="[A] Approve"]
}
"""


def test_a_running_steps_output_lines_appear_live_with_colours_and_a_link_to_the_whole_file(
    server: Server, root: Path, browser: Browser, tmp_path: Path
) -> None:
    (root / "build.sh").write_text(BUILD_SCRIPT)
    (root / "builds.dot").write_text(BUILDS)
    run_id = _start(server, "builds.dot")
    page = _open(browser, server, f"#/run/{run_id}")
    work = page.locator('#node-list button[data-node="work"]')
    expect(work).to_have_attribute("data-state", "running")
    work.click()
    expect(page.locator("#node-facts")).to_contain_text("running")
    # The lines the step printed so far show while it still runs (it waits for "more").
    terminal = page.locator("#node-output pre.terminal")
    expect(terminal).to_contain_text("ok compiled 3 files\nbuilding 100%\nwarning: slow disk")
    expect(work).to_have_attribute("data-state", "running")
    assert "\x1b" not in terminal.inner_text() and "[32m" not in terminal.inner_text()
    green = terminal.locator("span.ansi", has_text="ok")
    expect(green).to_have_css("color", "rgb(13, 188, 121)")
    expect(green).to_have_css("font-weight", "700")
    expect(terminal.locator("span.line.stderr")).to_have_text("warning: slow disk")
    expect(page.locator("#node-facts")).to_contain_text("boundary")
    _shot(page.locator("#node-panel"), tmp_path, "live-output")
    # Many lines: the view keeps the last ones and links to the whole files.
    (root / "more").touch()
    expect(terminal).to_contain_text("line 700")
    expect(page.locator("#node-output-cut")).to_contain_text("earlier lines not shown")
    expect(terminal.locator("span.line")).to_have_count(500)
    link = page.locator("#node-output-cut a", has_text="stdout.txt")
    expect(link).to_have_attribute("href", f"/pipelines/{run_id}/nodes/work/files/stdout.txt")
    # The event log numbers every event, with its time.
    numbers = [
        int(v)
        for v in page.locator("#event-log li").evaluate_all("items => items.map((li) => li.value)")
    ]
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    expect(page.locator("#event-log li time").first).to_have_text(
        re.compile(r"^\d\d:\d\d:\d\d\.\d\d\d$")
    )
    (root / "go").touch()
    expect(page.locator("#question")).to_be_visible()
    # The link opens the whole file in a new tab (fetched with the page's token: a
    # plain link carries none).
    with page.context.expect_page() as opened:
        link.click()
    tab = opened.value
    expect(tab.locator("body")).to_contain_text("line 700")
    written = root / ".attractor" / "runs" / run_id / "work" / "stdout.txt"
    whole = tab.locator("pre").text_content() or ""  # a text document: one <pre>
    text = written.read_bytes().decode().replace("\r\n", "\n").replace("\r", "\n")
    assert whole == text and whole.endswith("line 700\nbuilt\n")  # a browser reads \r as \n
    tab.close()
    with server.client() as client:
        assert client.get(f"/pipelines/{run_id}/nodes/work/files/pipeline.dot").status_code == 404
        client.post(f"/pipelines/{run_id}/cancel", json={})


CLUSTERED = """digraph clustered {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    subgraph cluster_build {
        label = "Build"
        compile [shape=parallelogram, tool_command="echo compiled"]
        wait    [shape=parallelogram, tool_command="while [ ! -f go ]; do sleep 0.05; done"]
    }
    subgraph cluster_ship {
        label = "Ship"
        publish [shape=parallelogram, tool_command="echo published"]
    }
    start -> compile -> wait -> publish -> done
}
"""


def test_the_run_picture_draws_clusters_the_route_and_the_current_node(
    server: Server, root: Path, browser: Browser, tmp_path: Path
) -> None:
    (root / "clustered.dot").write_text(CLUSTERED)
    run_id = _start(server, "clustered.dot")
    page = _open(browser, server, f"#/run/{run_id}")
    wait = page.locator('#graph [id="node-wait"]')
    expect(wait).to_have_class(re.compile(r"^(?=.*\bstate-running\b)(?=.*\bcurrent\b)"))
    expect(page.locator("#graph g.cluster")).to_have_count(2)
    expect(page.locator("#graph g.cluster").first).to_contain_text("Build")
    expect(page.locator('#graph g.edge.taken[id="edge-start-compile"]')).to_have_count(1)
    _shot(page.locator(".graph-panel"), tmp_path, "run-picture")
    (root / "go").touch()
    expect(page.locator("#run-status")).to_have_text("success")
    # The current node moves with the run.
    expect(page.locator('#graph [id="node-done"]')).to_have_class(re.compile(r"\bcurrent\b"))
    expect(page.locator("#graph g.node.current")).to_have_count(1)


WAITING_AGENT = {
    "responses": [
        scripted_answer(
            "",
            {"input_tokens": 1000, "output_tokens": 100},
            "while [ ! -f go ]; do sleep 0.05; done; echo built",
        ),
        scripted_answer("The build is fixed.", {"input_tokens": 1200, "output_tokens": 50}),
    ],
    "then": "stop",
}
AGENT = """digraph agent {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    fix   [prompt="Fix the build", max_turns=10]
    start -> fix -> done
}
"""


def test_a_running_agent_nodes_tokens_show_as_it_spends_them(
    server: Server, root: Path, browser: Browser
) -> None:
    (root / "agent.dot").write_text(AGENT)
    (root / "model.json").write_text(json.dumps(WAITING_AGENT))
    run_id = _start(server, "agent.dot", backend="scripted:model.json")
    page = _open(browser, server, f"#/run/{run_id}")
    fix = page.locator('#node-list button[data-node="fix"]')
    expect(fix).to_contain_text("1,100 tok so far")  # the first request, while its tool runs
    page.locator('#node-list button[data-node="fix"]').click()
    expect(page.locator("#node-output pre.terminal")).to_contain_text("▸ shell: while")
    (root / "go").touch()
    expect(page.locator("#run-status")).to_have_text("success")
    expect(fix).to_contain_text("2,350 tok")
    expect(fix).not_to_contain_text("so far")
    expect(page.locator("#node-output pre.terminal")).to_contain_text("built")
