"""Every example in every ``--help`` runs, as written, against local fakes.

Each example runs in bash in its own copy of a workspace holding the files the
examples name (pipeline.dot, replies.json, answers.txt, examples/, stopped runs
to resume). Models are a scripted OpenAI-compatible server on 127.0.0.1: the
example's own ``http://127.0.0.1:8080/v1`` is pointed at it, and
``OPENAI_BASE_URL`` serves ``--model gpt-5``.
"""

from __future__ import annotations

import os
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from attractor.cli.main import cli
from tests.llm.fake_http import FakeServer, Received, Reply
from tests.llm.wire import openai_completion

#: Each example is a bash subprocess: the sweep stays out of the inner loop.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_URL = "http://127.0.0.1:8080/v1"

PIPELINE = """digraph feature {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    work  [prompt="Say done"]
    check [shape=parallelogram, tool_command="test -f go || sleep 30"]
    gate  [shape=hexagon, label="Ship?"]
    start -> work -> check -> gate
    gate -> exit [label="[A] Approve"]
    gate -> work [label="[R] Revise"]
}
"""
#: Runs the resume examples continue: stopped by --timeout while ``check`` waited for ``go``.
STOPPED_RUNS = (".attractor/runs/20261122T040646Z-feature", "runs/nightly")


class AlwaysDone(FakeServer):
    """An OpenAI-compatible server whose model always answers "Done." and stops."""

    def next_reply(self, received: Received) -> Reply:
        with self._lock:
            self.received.append(received)
        return Reply(200, openai_completion("Done."))


def _examples(args: list[str]) -> list[str]:
    text = CliRunner().invoke(cli, [*args, "--help"]).stdout
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "Examples:")
    found = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        found.append(line.strip())
    return found


COMMANDS = [[], *([name] for name in sorted(cli.list_commands(None)))]  # type: ignore[arg-type]
EXAMPLES = [(cmd, example) for cmd in COMMANDS for example in _examples(cmd)]


def _env(server_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ATTRACTOR_", "OPENAI_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["OPENAI_BASE_URL"] = f"{server_url}/v1"
    env["OPENAI_API_KEY"] = "test-key"
    env["NO_COLOR"] = "1"
    return env


def _bash(
    command: str, cwd: Path, env: dict[str, str], stdin: str = "A\n"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", f"set -o pipefail; {command}"],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with AlwaysDone().running() as running:
        yield running


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, server: FakeServer) -> Path:
    """The workspace every example starts from."""
    root = tmp_path_factory.mktemp("help")
    (root / "pipeline.dot").write_text(PIPELINE, encoding="utf-8")
    (root / "replies.json").write_text('{"responses": [{"text": "Done."}], "then": "stop"}')
    (root / "answers.txt").write_text("A\n")
    shutil.copytree(ROOT / "examples", root / "examples")
    for run_dir in STOPPED_RUNS:
        stopped = _bash(
            f"attractor run pipeline.dot --logs-dir {run_dir} --timeout 2s -q",
            root,
            _env(server.url),
        )
        assert stopped.returncode == 124, stopped.stderr
    (root / "go").write_text("")
    return root


def test_every_command_has_examples() -> None:
    assert {tuple(cmd) for cmd, _ in EXAMPLES} == {tuple(cmd) for cmd in COMMANDS}


@pytest.mark.parametrize(("command", "example"), EXAMPLES, ids=[e for _, e in EXAMPLES])
def test_help_example_runs(
    command: list[str], example: str, base: Path, server: FakeServer, tmp_path: Path
) -> None:
    workspace = tmp_path / "w"
    if example.startswith("attractor init"):
        workspace.mkdir()  # init writes new files; it refuses to overwrite
    else:
        shutil.copytree(base, workspace, symlinks=True)
    if "attractor serve" in example:
        _serve_example(example, workspace, _env(server.url))
        return
    before = len(server.received)
    result = _bash(example.replace(EXAMPLE_URL, f"{server.url}/v1"), workspace, _env(server.url))
    assert result.returncode == 0, f"{example}\n{result.stdout}\n{result.stderr}"
    if "--model" in example:  # the model really answered, from the fake server
        models = {r.body["model"] for r in server.received[before:]}
        assert models == {example.split("--model ")[1].split()[0]}


def _serve_example(example: str, workspace: Path, env: dict[str, str]) -> None:
    """A server example starts listening on its port and stops cleanly on Ctrl-C."""
    (workspace / "work").mkdir(exist_ok=True)  # ~/work, with HOME set to the workspace
    env = {**env, "HOME": str(workspace)}
    port = int(example.split("--port ")[1].split()[0]) if "--port " in example else 8700
    # Tests stay on loopback: an example that listens on every address is
    # started on 127.0.0.1 instead (the flag's parsing is what it shows).
    command = example.split("#")[0].strip().replace("--host 0.0.0.0", "--host 127.0.0.1")
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {command}" if command.startswith("attractor") else command],
        cwd=workspace,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_ready(proc, example)
        deadline = time.monotonic() + 10
        while not _listening(port):  # the line comes as the socket opens
            assert time.monotonic() < deadline, f"{example} said it serves; {port} stays closed"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode in (0, 130), f"{example}\n{out}\n{err}"


def _wait_ready(proc: subprocess.Popen[str], example: str) -> None:
    """Until the server says it serves (its own line on stderr, not just an open port)."""
    assert proc.stderr is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stderr, selectors.EVENT_READ)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if selector.select(timeout=0.5):
                line = proc.stderr.readline()
                assert line, f"{example} exited early: {proc.communicate()}"
                if line.startswith("serving http://"):
                    return
        raise AssertionError(f"{example} did not say it serves within 30 s")


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_scripts_as_documented(shell: str, tmp_path: Path) -> None:
    env = _env("http://127.0.0.1:1")
    script = _bash(f"_ATTRACTOR_COMPLETE={shell}_source attractor", tmp_path, env)
    assert script.returncode == 0 and "_ATTRACTOR_COMPLETE" in script.stdout
    assert f"_ATTRACTOR_COMPLETE={shell}_source attractor" in (ROOT / "docs" / "cli.md").read_text()


def test_completion_offers_commands_and_options(tmp_path: Path) -> None:
    env = _env("http://127.0.0.1:1") | {"_ATTRACTOR_COMPLETE": "bash_complete"}
    words = _bash('COMP_WORDS="attractor ex" COMP_CWORD=1 attractor', tmp_path, env)
    assert words.stdout.split() == ["plain,explain"]
    env |= {"COMP_WORDS": "attractor run p.dot --dry", "COMP_CWORD": "3"}
    options = _bash("attractor", tmp_path, env)
    assert "plain,--dry-run" in options.stdout.split()
