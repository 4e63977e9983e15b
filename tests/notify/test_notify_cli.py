"""``--notify URL``: a run POSTs its events to a real webhook on 127.0.0.1."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from pathlib import Path

import pytest

from tests.cli.runkit import invoke, only_run_dir, write
from tests.notify.hookserver import Hook, silent_hook

SHIP = """digraph ship {
  start [shape=Mdiamond]
  done [shape=Msquare]
  gate [shape=hexagon, label="Ship it?"]
  tests [shape=parallelogram, tool_command="echo broken >&2; exit 3"]
  start -> gate
  gate -> tests [label="[A] Approve"]
  gate -> done [label="[S] Skip"]
  tests -> done
}
"""

QUICK = """digraph quick {
  %s
  start [shape=Mdiamond]
  done [shape=Msquare]
  step [shape=parallelogram, tool_command="echo fine"]
  start -> step -> done
}
"""


def _run(
    workspace: Path, dot: str, *args: str, env: dict[str, str] | None = None
) -> tuple[int, str]:
    write(workspace / "p.dot", dot)
    result = invoke(["run", "p.dot", "--logs-dir", "runs/{timestamp}-{graph}", *args], env=env)
    return result.exit_code, result.stderr


def _records(run_dir: Path) -> list[dict[str, object]]:
    lines = (run_dir / "notifications.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def test_the_events_picked_are_posted_signed_in_order(workspace: Path) -> None:
    write(workspace / "answers.txt", "A: go ahead\n")
    picked = "gate_waiting,gate_answered,run_failed,run_finished"
    with Hook().running() as hook:
        code, err = _run(
            workspace,
            SHIP,
            "--answers", "answers.txt",
            "--notify", hook.url,
            "--notify-on", picked,
            "--notify-secret-env", "HOOK_SECRET",
            env={"HOOK_SECRET": "s3cret-signing-key"},
        )  # fmt: skip
    assert code == 1, err
    assert "warning" not in err
    run_dir = only_run_dir(workspace / "runs")
    assert hook.events() == picked.split(",")
    for request in hook.requests:
        expected = hmac.new(b"s3cret-signing-key", request.body, hashlib.sha256).hexdigest()
        assert request.headers["X-Attractor-Signature-256"] == f"sha256={expected}"
        assert request.headers["Content-Type"] == "application/json"
        assert request.path == "/hook/T0KEN"
    waiting, answered, failed, finished = (r.json() for r in hook.requests)
    assert waiting["run_id"] == run_dir.name and waiting["pipeline"] == "ship"
    assert (waiting["node"], waiting["status"]) == ("gate", "running")
    assert waiting["details"]["question"] == "Ship it?"
    assert answered["details"]["answered_by"] == "answers_file"
    assert answered["details"]["comment"] == "go ahead"
    assert (failed["node"], failed["status"]) == ("tests", "fail")
    assert "exited with code 3: broken" in failed["message"]
    assert finished["status"] == "fail" and finished["url"] is None
    assert finished["run_dir"] == str(run_dir.resolve())
    assert len({r.json()["delivery"] for r in hook.requests}) == 4
    assert [r["delivered"] for r in _records(run_dir)] == [True] * 4
    # The secret is never written to the run directory.
    for path in run_dir.rglob("*"):
        if path.is_file():
            assert b"s3cret-signing-key" not in path.read_bytes(), path


def test_a_webhook_that_fails_twice_gets_the_same_delivery_a_third_time(
    workspace: Path,
) -> None:
    with Hook(statuses=(500, 503)).running() as hook:
        code, err = _run(workspace, QUICK % "", "--notify", hook.url)
    assert code == 0 and "warning" not in err, err
    assert hook.events() == ["run_finished"] * 3
    assert len({r.body for r in hook.requests}) == 1  # the same delivery, byte for byte
    [record] = _records(only_run_dir(workspace / "runs"))
    assert (record["delivered"], record["attempts"], record["status"]) == (True, 3, 200)


def test_a_client_error_is_not_retried_and_is_a_warning(workspace: Path) -> None:
    with Hook(statuses=(404,)).running() as hook:
        code, err = _run(workspace, QUICK % "", "--notify", hook.url)
    assert code == 0
    assert len(hook.requests) == 1
    host = hook.url.split("/hook")[0]
    assert (
        f"warning: notification run_finished to {host} not delivered after 1 attempt: HTTP 404"
        in err
    )
    assert "T0KEN" not in err  # the URL's path may be a token: only the host is named


# Slow: it waits out a notification's four 1s attempts and their pauses.
@pytest.mark.slow
def test_a_webhook_that_never_answers_neither_blocks_nor_fails_the_run(workspace: Path) -> None:
    started = time.monotonic()
    with silent_hook() as url:
        code, err = _run(
            workspace,
            QUICK % "",
            "--notify", url,
            "--notify-on", "run_started,run_finished",
            "--notify-timeout", "1s",
        )  # fmt: skip
    elapsed = time.monotonic() - started
    assert code == 0, err
    run_dir = only_run_dir(workspace / "runs")
    # The run did not wait on the webhook: it ended while the first notification still tried.
    assert json.loads((run_dir / "manifest.json").read_text())["duration"] < 4
    # Bounded: one notification's attempts (4 x 1s) and pauses (3.5s) after the run, no more.
    assert elapsed < 40
    assert "warning: notification run_started to" in err
    assert "not delivered after 4 attempts" in err or "not sent: the run ended" in err
    assert "notification run_finished to" in err


def test_slack_format_and_the_graph_attribute(workspace: Path) -> None:
    with Hook().running() as hook:
        graph = f'graph [notify="{hook.url}", notify_on="run_succeeded", notify_format=slack]'
        code, err = _run(workspace, QUICK % graph)
    assert code == 0, err
    [request] = hook.requests
    message = request.json()
    assert list(message) == ["text"]
    run_id = only_run_dir(workspace / "runs").name
    assert message["text"].startswith(f"*quick* `{run_id}`: quick succeeded in ")


def test_the_environment_variable_and_config_file_name_the_webhook(workspace: Path) -> None:
    with Hook().running() as hook:
        code, _ = _run(workspace, QUICK % "", env={"ATTRACTOR_NOTIFY": hook.url})
        assert code == 0 and hook.events() == ["run_finished"]
        write(workspace / "attractor.toml", f'notify = "{hook.url}"\nnotify_on = ["run_started"]\n')
        code, _ = _run(workspace / "", QUICK % "")
        assert code == 0 and hook.events() == ["run_finished", "run_started"]


def test_bad_notify_settings_are_one_line_and_exit_2(workspace: Path) -> None:
    code, err = _run(workspace, QUICK % "", "--notify", "ftp://example.com/x")
    assert code == 2
    assert err == (
        'error: --notify="ftp://example.com/x": expected an http:// or https:// URL, '
        "like https://hooks.example.com/x\n"
    )
    for url in ("http://127.0.0.1:99999/x", "http://:80/x", "https://hooks.example.com:x/"):
        code, err = _run(workspace, QUICK % "", "--notify", url)
        assert code == 2
        assert err == (
            f"error: --notify=\"{url}\": expected a host and, after ':', a port from 1 to "
            "65535, like https://hooks.example.com:8443/x\n"
        )
    code, err = _run(workspace, QUICK % "", "--notify-on", "gate_waiting,coffee")
    assert code == 2 and "expected events among run_started, gate_waiting" in err
    code, err = _run(
        workspace,
        QUICK % "",
        "--notify", "http://127.0.0.1:9/x",
        "--notify-secret-env", "NOT_SET_ANYWHERE",
    )  # fmt: skip
    assert code == 2
    assert err == (
        'error: --notify-secret-env="NOT_SET_ANYWHERE": the variable NOT_SET_ANYWHERE is not '
        "set; export the webhook's signing secret in it\n"
    )
    assert not (workspace / "runs").exists() or not list((workspace / "runs").iterdir())


def test_the_dry_run_names_the_webhooks_host_not_its_path(workspace: Path) -> None:
    write(workspace / "p.dot", QUICK % "")
    result = invoke(
        ["run", "p.dot", "--dry-run", "--notify", "https://hooks.example.com/services/T0KEN"]
    )
    assert result.exit_code == 0
    assert (
        "notify: https://hooks.example.com of gate_waiting, run_finished (json; from --notify)"
        in result.stdout
    )
    assert "T0KEN" not in result.stdout


def test_resume_notifies_when_given_the_flag_again(workspace: Path) -> None:
    slow = QUICK.replace('tool_command="echo fine"', 'tool_command="test -f go || sleep 30"')
    code, err = _run(workspace, slow % "", "--timeout", "1s")
    assert code == 124, err
    run_dir = only_run_dir(workspace / "runs")
    (workspace / "go").touch()
    with Hook().running() as hook:
        args = [
            "resume",
            str(run_dir),
            "--notify",
            hook.url,
            "--notify-on",
            "run_started,run_finished",
        ]
        result = invoke(args)
    assert result.exit_code == 0, result.output
    started, finished = (r.json() for r in hook.requests)
    assert (started["event"], started["details"]["resumed"]) == ("run_started", True)
    assert (finished["event"], finished["status"], finished["run_id"]) == (
        "run_finished",
        "success",
        run_dir.name,
    )
    # The webhook is not recorded with the run: a later resume without it notifies no one.
    assert hook.url not in (run_dir / "manifest.json").read_text()


def test_the_final_line_times_the_run_not_the_last_deliveries(workspace: Path) -> None:
    write(workspace / "p.dot", QUICK % "")
    started = time.monotonic()
    with Hook(statuses=(503,) * 4).running() as hook:
        args = ["run", "p.dot", "--logs-dir", "runs/r", "--notify", hook.url]
        result = invoke([*args, "--notify-on", "run_finished"])
    elapsed = time.monotonic() - started
    assert result.exit_code == 0, result.stderr
    assert "not delivered after 4 attempts: HTTP 503" in result.stderr
    # The deliveries after the run paused 0.5s, 1s and 2s between attempts ...
    assert elapsed > 3.5
    # ... which the final line does not count as the run's time.
    said = result.stdout.strip().splitlines()[-1]
    seconds = float(said.split("pipeline succeeded in ")[1].split("s;")[0])
    assert seconds < elapsed - 3.0, said


def test_lint_checks_the_graph_attribute_notify_at_its_line(workspace: Path) -> None:
    write(workspace / "p.dot", QUICK % 'graph [notify="http://127.0.0.1:99999/x"]')
    result = invoke(["lint", "p.dot"])
    assert result.exit_code == 1
    assert result.stdout.startswith(
        'p.dot:2:10: error attribute_value: notify="http://127.0.0.1:99999/x": expected a host'
    )
    write(workspace / "p.dot", QUICK % 'graph [notify=""]')
    assert invoke(["lint", "p.dot"]).exit_code == 0
