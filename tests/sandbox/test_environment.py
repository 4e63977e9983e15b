"""The execution environments behave like the shell the commands were written for."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.proc.bwrap import Fence
from attractor.proc.envfilter import EnvPolicy
from attractor.proc.environment import BwrapEnvironment, LocalEnvironment
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
    assert [p.name for p in env.glob("**/*.txt")] == ["b.txt"]
    with pytest.raises(PermissionError):
        env.read_file("../outside")


@needs_bwrap
async def test_a_plain_command_keeps_its_argv0_inside_the_sandbox(tmp_path: Path) -> None:
    env = BwrapEnvironment(tmp_path, EnvPolicy(), fence=Fence(tmp_path))
    result = await env.run("cat /proc/self/cmdline", stdout_path=tmp_path / "o")
    assert result.stdout.split("\0")[:2] == ["cat", "/proc/self/cmdline"]
