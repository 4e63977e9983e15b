"""The execution environments behave like the shell the commands were written for."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from attractor.agent.tools import ToolContext, default_registry
from attractor.agent.tools.patch import patch_tool
from attractor.errors import PathEscapeError
from attractor.llm.types import ToolCall
from attractor.proc.bwrap import Fence
from attractor.proc.envfilter import EnvPolicy
from attractor.proc.environment import LocalEnvironment
from attractor.proc.sandbox_env import BwrapEnvironment
from tests.cli.runkit import pids_with
from tests.sandbox.conftest import needs_bwrap

pytestmark = pytest.mark.anyio


def _environments(work: Path) -> list[LocalEnvironment]:
    envs = [LocalEnvironment(work, EnvPolicy())]
    if not needs_bwrap.args[0]:
        envs.append(BwrapEnvironment(work, EnvPolicy(), fence=Fence(work)))
    return envs


async def test_exit_codes_match_the_shell_inside_and_outside(tmp_path: Path) -> None:
    for env in _environments(tmp_path):
        missing = await env.run("no-such-program-4b1e arg", stderr_path=tmp_path / "e")
        assert missing.returncode == 127, env.name
        assert "not found" in missing.stderr, env.name
        killed = await env.run("sh -c 'kill -9 $$'", stderr_path=tmp_path / "e")
        assert killed.returncode == 137, env.name
        plain = await env.run("/bin/echo hello", stdout_path=tmp_path / "o")
        assert (plain.returncode, plain.stdout) == (0, "hello\n"), env.name


@needs_bwrap
async def test_a_timeout_kills_the_sandbox_and_what_it_started(tmp_path: Path) -> None:
    env = BwrapEnvironment(tmp_path, EnvPolicy(), fence=Fence(tmp_path))
    mark = "61.517293"
    result = await env.run(f"setsid sleep {mark} & sleep {mark}", timeout=1, kill_grace=0.5)
    assert result.timed_out
    assert pids_with(mark) == []  # even the setsid one: the pid namespace died with it


async def test_file_operations_stay_beneath_the_workdir(tmp_path: Path) -> None:
    env = LocalEnvironment(tmp_path / "w")
    (tmp_path / "w").mkdir()
    env.write_file("a/b.txt", b"x")
    assert env.read_file("a/b.txt") == b"x"
    assert env.glob("**/*.txt") == "a/b.txt"
    assert env.grep("x") == "a/b.txt:1: x"
    with pytest.raises(PathEscapeError):
        env.read_file("../outside")


@needs_bwrap
async def test_a_plain_command_keeps_its_argv0_inside_the_sandbox(tmp_path: Path) -> None:
    env = BwrapEnvironment(tmp_path, EnvPolicy(), fence=Fence(tmp_path))
    result = await env.run("cat /proc/self/cmdline", stdout_path=tmp_path / "o")
    assert result.stdout.split("\0")[:2] == ["cat", "/proc/self/cmdline"]


@dataclass
class Elsewhere(LocalEnvironment):
    """An environment whose files are not on this machine (as a remote one's would be):
    its file operations answer from a dict, so a tool that went to the host's disk
    instead would find nothing."""

    files: dict[str, str] = field(default_factory=dict)
    calls: list[str] = field(default_factory=list)

    def read_lines(self, path: str, offset: int = 1, limit: int = 2000) -> str:
        self.calls.append(f"read {path} {offset} {limit}")
        return f"1 | {self.files[path]}"

    def write_text(self, path: str, content: str) -> str:
        self.calls.append(f"write {path}")
        self.files[path] = content
        return f"wrote {len(content)} bytes to {path}"

    def edit_text(self, path: str, old: str, new: str, *, replace_all: bool = False) -> str:
        self.calls.append(f"edit {path} {replace_all}")
        self.files[path] = self.files[path].replace(old, new)
        return f"replaced 1 occurrence(s) in {path}"

    def list_dir(self, path: str = ".") -> str:
        self.calls.append(f"list {path}")
        return "\n".join(sorted(self.files))

    def glob(self, pattern: str, path: str = ".") -> str:
        self.calls.append(f"glob {pattern} {path}")
        return "\n".join(sorted(self.files))

    def grep(
        self, pattern: str, path: str = ".", *, regex: bool = False, ignore_case: bool = False
    ) -> str:
        self.calls.append(f"grep {pattern} {path} {regex} {ignore_case}")
        return "\n".join(f"{k}:1: {v}" for k, v in sorted(self.files.items()) if pattern in v)

    def apply_patch(self, patch: str) -> str:
        self.calls.append("patch")
        return "patch applied:\nA new.txt"


async def _tool(context: ToolContext, name: str, **arguments: Any) -> str:
    registry = default_registry().with_tools(patch_tool())
    result = await registry.execute(ToolCall("c", name, arguments), context)
    assert not result.is_error, result.output
    return result.output


async def test_the_agent_file_tools_go_through_the_step_environment(tmp_path: Path) -> None:
    env = Elsewhere(tmp_path, files={"a.py": "print('remote')"})
    context = ToolContext(tmp_path, environment=env)
    assert await _tool(context, "read_file", path="a.py", offset=1, limit=5) == (
        "1 | print('remote')"
    )
    await _tool(context, "write_file", path="b.txt", content="hello")
    await _tool(context, "edit_file", path="b.txt", old_string="hello", new_string="bye")
    assert await _tool(context, "list_dir") == "a.py\nb.txt"
    assert await _tool(context, "glob", pattern="**/*") == "a.py\nb.txt"
    found = await _tool(context, "search_file", pattern="remote", regex=True, ignore_case=True)
    assert found == "a.py:1: print('remote')"
    assert await _tool(context, "apply_patch", patch="*** Begin Patch") == (
        "patch applied:\nA new.txt"
    )
    assert env.files["b.txt"] == "bye"
    assert os.listdir(tmp_path) == []  # nothing went to this machine's disk
    assert env.calls == [
        "read a.py 1 5",
        "write b.txt",
        "edit b.txt False",
        "list .",
        "glob **/* .",
        "grep remote . True True",
        "patch",
    ]


@needs_bwrap
async def test_file_tools_answer_alike_with_and_without_the_sandbox(tmp_path: Path) -> None:
    answers = []
    for sandboxed in (False, True):
        work = tmp_path / str(sandboxed)
        (work / "src").mkdir(parents=True)
        (work / "src" / "m.py").write_text("def f():\n    return 1\n")
        env = BwrapEnvironment(work, EnvPolicy(), fence=Fence(work)) if sandboxed else None
        context = ToolContext(work, environment=env)
        answers.append(
            [
                await _tool(context, "read_file", path="src/m.py"),
                await _tool(context, "edit_file", path="src/m.py", old_string="1", new_string="2"),
                await _tool(context, "search_file", pattern="return"),
                await _tool(context, "glob", pattern="**/*.py"),
                await _tool(context, "list_dir", path="src"),
            ]
        )
    assert answers[0] == answers[1]
    assert answers[1][2] == "src/m.py:2:     return 2"


async def test_a_subagents_file_tools_stay_in_its_own_folder(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "secret.txt").write_text("parent's file\n")
    (tmp_path / "sub" / "own.txt").write_text("mine\n")
    context = ToolContext(tmp_path / "sub", environment=LocalEnvironment(tmp_path))
    registry = default_registry()
    own = await registry.execute(ToolCall("c", "read_file", {"path": "own.txt"}), context)
    assert own.output == "1 | mine"
    escape = await registry.execute(ToolCall("c", "read_file", {"path": "../secret.txt"}), context)
    assert escape.is_error and "parent's file" not in escape.output
