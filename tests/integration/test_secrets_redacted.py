"""Secrets planted in the environment and in a file never reach a run's files, the CLI or the API.

Real runs: the CLI as a subprocess, tool nodes that ``printenv`` and ``cat`` the
secrets, an agent (the scripted model) whose shell and read_file tools do the
same, and ``attractor serve`` on 127.0.0.1 reading the finished run and starting
one of its own. Every file of every run directory is searched byte for byte.
"""

from __future__ import annotations

import json
import os
import secrets
import string
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import attractor
from tests.server.serverkit import free_port, sse_events

pytestmark = pytest.mark.timeout(240)


def _random(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


_B64 = string.ascii_letters + string.digits + "+/"
#: Variables set for the run (MY_CUSTOM_VAR only counts as secret because it is declared).
ENV_SECRETS = {
    "OPENAI_API_KEY": "sk-test-" + secrets.token_hex(16),
    "DEPLOY_TOKEN": "dt-" + secrets.token_hex(12),
    "MY_CUSTOM_VAR": "cv-" + secrets.token_hex(12),
}
AWS_KEY = "AKIA" + _random(string.ascii_uppercase + string.digits, 16)
GITHUB_TOKEN = "ghp_" + _random(string.ascii_letters + string.digits, 36)
BEARER = _random(string.ascii_letters + string.digits, 32)
KEY_BODY = [_random(_B64, 64) for _ in range(4)]
PRIVATE_KEY = "\n".join(
    ["-----BEGIN OPENSSH PRIVATE KEY-----", *KEY_BODY, "-----END OPENSSH PRIVATE KEY-----"]
)
SECRETS_FILE = (
    f"aws_access_key_id = {AWS_KEY}\n"
    f"github = {GITHUB_TOKEN}\n"
    f"curl -H 'Authorization: Bearer {BEARER}' https://example.invalid\n"
    f"{PRIVATE_KEY}\n"
    "the end\n"
)
#: Every string that must not appear anywhere.
RAW = [*ENV_SECRETS.values(), AWS_KEY, GITHUB_TOKEN, BEARER, *KEY_BODY]

PIPELINE = """digraph leak {
    graph [env=inherit]  // the commands see the secrets, on purpose
    start [shape=Mdiamond]
    done  [shape=Msquare]
    dump  [shape=parallelogram, tool_command="printenv; cat secrets.txt; printenv DEPLOY_TOKEN >&2"]
    agent [prompt="Look at the environment and at secrets.txt"]
    fails [shape=parallelogram, tool_command="cat secrets.txt; echo $DEPLOY_TOKEN >&2; exit 3"]
    start -> dump -> agent -> fails -> done
}
"""


def _model() -> dict[str, object]:
    shell = {"command": "printenv OPENAI_API_KEY MY_CUSTOM_VAR; env; cat secrets.txt"}
    write_back = {"path": "config.txt", "content": "key = [redacted:OPENAI_API_KEY]\n"}
    return {
        "responses": [
            {
                "text": "looking",
                "tool_calls": [
                    {"name": "shell", "arguments": shell},
                    {"name": "read_file", "arguments": {"path": "secrets.txt"}},
                ],
            },
            {"text": "saving", "tool_calls": [{"name": "write_file", "arguments": write_back}]},
            # A model that repeats a key it should not know: the answer is redacted too.
            {"text": f"Done. The key is {ENV_SECRETS['OPENAI_API_KEY']} and {AWS_KEY}."},
        ],
        "then": "stop",
    }


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTRACTOR_")}
    # The subprocesses import this checkout's attractor, whatever the current directory.
    path = os.pathsep.join([str(Path(attractor.__file__).parents[1]), env.get("PYTHONPATH", "")])
    env.update(ENV_SECRETS, ATTRACTOR_SECRETS="MY_CUSTOM_*", NO_COLOR="1", PYTHONPATH=path)
    return env


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "p.dot").write_text(PIPELINE)
    (tmp_path / "secrets.txt").write_text(SECRETS_FILE)
    (tmp_path / "model.json").write_text(json.dumps(_model()))
    return tmp_path


def _leaks(text: str | bytes, where: str) -> list[str]:
    data = text.encode() if isinstance(text, str) else text
    return [f"{where}: {raw[:12]}..." for raw in RAW if raw.encode() in data]


def _files(folder: Path) -> Iterator[Path]:
    return (path for path in sorted(folder.rglob("*")) if path.is_file())


def _run_dirs(workspace: Path) -> list[Path]:
    return sorted(p for p in (workspace / ".attractor" / "runs").iterdir() if p.is_dir())


def _run_cli(workspace: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = [sys.executable, "-m", "attractor", "run", "p.dot", "--backend", "scripted:model.json"]
    return subprocess.run(
        [*args, *extra],
        cwd=workspace,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_no_secret_reaches_a_run_directory_or_the_terminal(workspace: Path) -> None:
    plain = _run_cli(workspace)
    as_json = _run_cli(workspace, "--json")

    assert plain.returncode == 1, plain.stderr  # the last tool fails on purpose
    leaks = [
        *_leaks(plain.stdout + plain.stderr, "CLI output"),
        *_leaks(as_json.stdout + as_json.stderr, "CLI --json output"),
    ]
    runs = _run_dirs(workspace)
    assert len(runs) == 2
    for run in runs:
        for path in _files(run):
            leaks += _leaks(path.read_bytes(), str(path.relative_to(workspace)))
    assert leaks == []

    # What was taken out says what it was.
    run = runs[0]
    dump = (run / "dump" / "stdout.txt").read_text()
    for name in ENV_SECRETS:
        assert f"{name}=[redacted:{name}]" in dump
    assert "aws_access_key_id = [redacted:aws-access-key]" in dump
    assert "[redacted:github-token]" in dump and "[redacted:private-key]\nthe end" in dump
    assert "Authorization: Bearer [redacted:bearer-token]" in dump
    assert (run / "dump" / "stderr.txt").read_text() == "[redacted:DEPLOY_TOKEN]\n"
    tools_log = (run / "agent" / "tools.log").read_text()
    assert "[redacted:OPENAI_API_KEY]\n[redacted:MY_CUSTOM_VAR]" in tools_log
    assert "was not run: its arguments hold a [redacted:...] placeholder" in tools_log
    assert not (workspace / "config.txt").exists()  # the placeholder was not written
    assert "The key is [redacted:OPENAI_API_KEY]" in (run / "agent" / "response.md").read_text()
    assert "[redacted:DEPLOY_TOKEN]" in plain.stdout + plain.stderr  # the failure reason
    # The files the commands read are the user's: untouched.
    assert (workspace / "secrets.txt").read_text() == SECRETS_FILE


def _serve(workspace: Path) -> tuple[subprocess.Popen[str], str]:
    port = free_port()
    args = [sys.executable, "-m", "attractor", "serve", "--root", str(workspace)]
    args += ["--host", "127.0.0.1", "--port", str(port), "--no-token"]
    process = subprocess.Popen(
        args, cwd=workspace, env=_env(), stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert process.poll() is None, process.communicate()[1]
        try:
            httpx.get(f"{url}/pipelines", timeout=5)
            return process, url
        except httpx.TransportError:
            time.sleep(0.05)
    process.kill()
    raise AssertionError("the server did not answer within 30s")


def _everything_about(client: httpx.Client, run_id: str) -> list[tuple[str, str]]:
    """Every endpoint's answer about one run: (path, body)."""
    paths = [f"/pipelines/{run_id}", f"/pipelines/{run_id}/checkpoint"]
    paths += [f"/pipelines/{run_id}/context", f"/pipelines/{run_id}/questions"]
    paths += [f"/pipelines/{run_id}/nodes/{node}" for node in ("dump", "agent", "fails")]
    answers = [(path, client.get(path).text) for path in ["/pipelines", *paths]]
    with client.stream("GET", f"/pipelines/{run_id}/events") as response:
        streamed = [json.dumps(event.data) for event in sse_events(response)]
    answers.append((f"/pipelines/{run_id}/events", "\n".join(streamed)))
    return answers


def test_no_secret_reaches_the_api(workspace: Path) -> None:
    assert _run_cli(workspace).returncode == 1
    process, url = _serve(workspace)
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            started = client.post(
                "/pipelines",
                json={"path": "p.dot", "settings": {"backend": "scripted:model.json"}},
            )
            assert started.status_code in (200, 201, 202), started.text
            served_id = started.json()["id"]
            deadline = time.monotonic() + 90
            while client.get(f"/pipelines/{served_id}").json().get("active"):
                assert time.monotonic() < deadline, "the served run did not end"
                time.sleep(0.1)
            leaks: list[str] = []
            bodies = ""
            for run in _run_dirs(workspace):
                for path, body in _everything_about(client, run.name):
                    leaks += _leaks(body, path)
                    bodies += body
                for path in _files(run):
                    leaks += _leaks(path.read_bytes(), str(path.relative_to(workspace)))
    finally:
        process.terminate()
        _, err = process.communicate(timeout=30)
    assert leaks == []
    assert _leaks(err, "server stderr") == []
    assert "[redacted:DEPLOY_TOKEN]" in bodies and "[redacted:aws-access-key]" in bodies


WAITS = """digraph waits {
    graph [env=inherit]  // the commands see the secrets, on purpose
    start [shape=Mdiamond]
    done  [shape=Msquare]
    wait  [shape=parallelogram,
           tool_command="echo $DEPLOY_TOKEN; until [ -f go ]; do sleep 0.05; done"]
    start -> wait -> done
}
"""


def test_a_running_tools_output_is_redacted_when_read_through_the_api(workspace: Path) -> None:
    (workspace / "waits.dot").write_text(WAITS)
    process, url = _serve(workspace)
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            run_id = client.post("/pipelines", json={"path": "waits.dot"}).json()["id"]
            deadline = time.monotonic() + 60
            while True:  # until the command has printed its line (and waits for go)
                files = client.get(f"/pipelines/{run_id}/nodes/wait").json().get("files", {})
                if files.get("stdout.txt"):
                    break
                assert time.monotonic() < deadline, "the tool printed nothing"
                time.sleep(0.05)
            (workspace / "go").touch()
            while client.get(f"/pipelines/{run_id}").json().get("active"):
                assert time.monotonic() < deadline, "the run did not end"
                time.sleep(0.05)
            stdout = (
                workspace / ".attractor" / "runs" / run_id / "wait" / "stdout.txt"
            ).read_text()
    finally:
        process.terminate()
        process.communicate(timeout=30)
    assert files["stdout.txt"] == "[redacted:DEPLOY_TOKEN]\n"  # read while the command ran
    assert stdout == "[redacted:DEPLOY_TOKEN]\n"  # and scrubbed once it ended


SLOW = """digraph slow {
    graph [env=inherit]  // the commands see the secrets, on purpose
    start [shape=Mdiamond]
    done  [shape=Msquare]
    slow  [shape=parallelogram, tool_command="printenv DEPLOY_TOKEN; cat secrets.txt; sleep 30"]
    start -> slow -> done
}
"""


def test_a_stopped_tools_output_files_are_scrubbed_too(workspace: Path) -> None:
    (workspace / "slow.dot").write_text(SLOW)
    args = [sys.executable, "-m", "attractor", "run", "slow.dot", "--timeout", "2s"]
    done = subprocess.run(args, cwd=workspace, env=_env(), capture_output=True, text=True)

    assert done.returncode == 124, done.stderr
    [run] = _run_dirs(workspace)
    stdout = (run / "slow" / "stdout.txt").read_text()
    assert stdout.startswith("[redacted:DEPLOY_TOKEN]\naws_access_key_id = [redacted:aws-")
    leaks = _leaks(done.stdout + done.stderr, "CLI output")
    for path in _files(run):
        leaks += _leaks(path.read_bytes(), str(path.relative_to(workspace)))
    assert leaks == []


KILLED = """digraph killed {
    graph [env=inherit]  // the commands see the secrets, on purpose
    start [shape=Mdiamond]
    done  [shape=Msquare]
    slow  [shape=parallelogram, tool_command="printenv DEPLOY_TOKEN; [ -f go ] || sleep 60"]
    start -> slow -> done
}
"""


def test_a_resume_scrubs_the_output_of_a_command_the_engine_died_under(workspace: Path) -> None:
    (workspace / "killed.dot").write_text(KILLED)
    # No workspace: its snapshot would put back the stage, and with it take away "go".
    args = [sys.executable, "-m", "attractor", "run", "killed.dot", "--workspace", "none"]
    engine = subprocess.Popen(
        args, cwd=workspace, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 60
        while (
            not list(workspace.glob(".attractor/runs/*/slow/stdout.txt"))
            or not next(iter(workspace.glob(".attractor/runs/*/slow/stdout.txt"))).read_text()
        ):
            assert time.monotonic() < deadline, "the command printed nothing"
            time.sleep(0.05)
    finally:
        engine.kill()  # SIGKILL: no finally of the engine runs
        engine.wait(timeout=30)
    [run] = _run_dirs(workspace)
    assert ENV_SECRETS["DEPLOY_TOKEN"] in (run / "slow" / "stdout.txt").read_text()

    (workspace / "go").touch()
    args = [sys.executable, "-m", "attractor", "resume", str(run)]
    resumed = subprocess.run(args, cwd=workspace, env=_env(), capture_output=True, text=True)

    assert resumed.returncode == 0, resumed.stderr
    leaks = _leaks(resumed.stdout + resumed.stderr, "CLI output")
    for path in _files(run):
        leaks += _leaks(path.read_bytes(), str(path.relative_to(workspace)))
    assert leaks == []
