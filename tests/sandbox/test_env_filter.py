"""Commands of a step see a filtered environment: no API keys unless named on purpose."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from attractor.proc.envfilter import EnvPolicy
from tests.cli.runkit import events, invoke, only_run_dir, write

SECRET = "sk-test-3f9a1c7e"  # a fake key planted in the engine's environment

TOOL_PIPELINE = """digraph p {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    t [shape=parallelogram, tool_command="printenv OPENAI_API_KEY; printenv DEPLOY_TOKEN; true"%s]
    start -> t -> done
}"""


def _tool_output(workspace: Path, *flags: str, attrs: str = "", **env: str) -> str:
    write(workspace / "p.dot", TOOL_PIPELINE % attrs)
    result = invoke(["run", "p.dot", "--logs-dir", "runs/{timestamp}", *flags], env=env)
    assert result.exit_code == 0, result.output + result.stderr
    latest = max((workspace / "runs").iterdir(), key=lambda p: p.stat().st_mtime_ns)
    out = (latest / "t" / "stdout.txt").read_text()
    for run_dir in (workspace / "runs").iterdir():
        shutil.rmtree(run_dir)
    return out


@pytest.mark.parametrize("sandbox", ["none", "auto"])
def test_a_tool_node_does_not_see_api_keys(workspace: Path, sandbox: str) -> None:
    out = _tool_output(
        workspace, "--sandbox", sandbox, OPENAI_API_KEY=SECRET, DEPLOY_TOKEN="deploy-1"
    )
    assert SECRET not in out
    assert "deploy-1" not in out
    assert out == ""


def test_env_allow_hands_a_named_secret_to_the_command(workspace: Path) -> None:
    out = _tool_output(
        workspace, "--env-allow", "DEPLOY_TOKEN", OPENAI_API_KEY=SECRET, DEPLOY_TOKEN="deploy-1"
    )
    # The command got the value; its output file names it instead (attractor.redact).
    assert out == "[redacted:DEPLOY_TOKEN]\n"


def test_a_node_attribute_allows_and_env_inherit_opts_out(workspace: Path) -> None:
    out = _tool_output(
        workspace, attrs=', env_allow="DEPLOY_*"', OPENAI_API_KEY=SECRET, DEPLOY_TOKEN="d-2"
    )
    assert out == "d-2\n"
    out = _tool_output(workspace, "--env", "inherit", OPENAI_API_KEY=SECRET, DEPLOY_TOKEN="d-3")
    assert out == "[redacted:OPENAI_API_KEY]\nd-3\n"  # got it; shown by name


def test_env_deny_wins_over_inherit(workspace: Path) -> None:
    write(workspace / "attractor.toml", 'env = "inherit"\nenv_deny = ["OPENAI_*"]\n')
    out = _tool_output(workspace, OPENAI_API_KEY=SECRET, DEPLOY_TOKEN="d-4")
    assert out == "d-4\n"


def test_core_keeps_what_toolchains_need() -> None:
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LC_ALL": "C.UTF-8",
        "VIRTUAL_ENV": "/v",
        "PYTHONPATH": "/src",
        "CI": "1",
        "ATTRACTOR_NODE": "t",
        "OPENAI_API_KEY": "k",
        "AWS_SECRET_ACCESS_KEY": "k",
        "GITHUB_TOKEN": "k",
        "DB_PASSWORD": "k",
        "GOOGLE_APPLICATION_CREDENTIALS": "k",
        "SSH_AUTH_SOCK": "/tmp/agent",
        "PYTHON_TOKEN": "k",
        "RANDOM_VAR": "x",
    }
    kept = EnvPolicy("core").apply(environ)
    assert sorted(kept) == [
        "ATTRACTOR_NODE", "CI", "HOME", "LC_ALL", "PATH", "PYTHONPATH", "VIRTUAL_ENV",
    ]  # fmt: skip
    assert EnvPolicy("none").apply(environ) == {}
    assert EnvPolicy("none", allow=("PATH",)).apply(environ) == {"PATH": "/usr/bin"}
    assert EnvPolicy("core", allow=("random_*",)).keeps("RANDOM_VAR")


def test_a_bad_env_setting_is_one_line(workspace: Path) -> None:
    write(workspace / "p.dot", TOOL_PIPELINE % "")
    result = invoke(["run", "p.dot", "--env", "all"])
    assert result.exit_code == 2
    assert "--env" in result.stderr and "expected one of inherit, core, none" in result.stderr


def _agent_run(workspace: Path, command: str, *flags: str, **env: str) -> list[dict[str, Any]]:
    write(
        workspace / "p.dot",
        """digraph p {
            start [shape=Mdiamond]
            done  [shape=Msquare]
            work  [prompt="look around", tool_hooks.post="printenv OPENAI_API_KEY >> hook.txt"]
            start -> work -> done
        }""",
    )
    call = {"name": "shell", "arguments": {"command": command}}
    turns = [{"text": "", "tool_calls": [call]}, {"text": "done"}]
    write(workspace / "model.json", json.dumps({"responses": turns, "then": "stop"}))
    args = ["run", "p.dot", "--logs-dir", "runs/{timestamp}", "--backend", "scripted:model.json"]
    result = invoke([*args, *flags], env=env)
    assert result.exit_code == 0, result.output + result.stderr
    run_dir = only_run_dir(workspace / "runs")
    return [e for e in events(run_dir) if e["type"] == "tool_call_completed"]


@pytest.mark.parametrize("sandbox", ["none", "auto"])
def test_the_agent_shell_tool_and_hooks_do_not_see_api_keys(workspace: Path, sandbox: str) -> None:
    done = _agent_run(
        workspace, "printenv OPENAI_API_KEY; echo status=$?", "--sandbox", sandbox,
        OPENAI_API_KEY=SECRET,
    )  # fmt: skip
    assert len(done) == 1
    assert SECRET not in done[0]["output"]
    assert "status=1" in done[0]["output"]
    assert (workspace / "hook.txt").read_text() == ""


def test_the_agent_shell_tool_gets_an_allowed_variable(workspace: Path) -> None:
    done = _agent_run(
        workspace, "printenv DEPLOY_TOKEN", "--env-allow", "DEPLOY_TOKEN", DEPLOY_TOKEN="d-5"
    )
    assert "d-5" in done[0]["output"]


def test_each_node_of_a_run_keeps_its_own_env_allow(workspace: Path) -> None:
    # Nodes with the same attributes share one worked-out boundary; others do not.
    command = 'shape=parallelogram, tool_command="printenv DEPLOY_TOKEN; true"'
    write(
        workspace / "p.dot",
        "digraph p {\n  start [shape=Mdiamond]\n  done [shape=Msquare]\n"
        f'  a [{command}, env_allow="DEPLOY_*"]\n  b [{command}]\n'
        f'  c [{command}, env_allow="DEPLOY_*"]\n  d [{command}, env_allow="OTHER_*"]\n'
        "  start -> a -> b -> c -> d -> done\n}\n",
    )
    result = invoke(["run", "p.dot", "--logs-dir", "runs/r"], env={"DEPLOY_TOKEN": "d-5"})
    assert result.exit_code == 0, result.output + result.stderr
    out = {n: (workspace / "runs/r" / n / "stdout.txt").read_text() for n in "abcd"}
    assert out == {"a": "d-5\n", "b": "", "c": "d-5\n", "d": ""}
