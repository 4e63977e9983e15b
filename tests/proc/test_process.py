"""Commands run in their own process group and never outlive their step."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import anyio
import pytest

from attractor.proc.process import process_env, run_process
from tests.proc.prockit import cancel_once_started, children


def _alive(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and "ps -eo" not in line]


def _marker_command(seconds: int) -> tuple[str, str]:
    # A unique, harmless argument makes the process findable in ps.
    marker = f"attractor-test-{uuid.uuid4().hex}"
    return f"sleep {seconds} # {marker}", marker


@pytest.mark.anyio
async def test_output_and_exit_code_are_captured(tmp_path: Path) -> None:
    result = await run_process("echo out; echo err >&2; exit 3", cwd=tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (3, "out\n", "err\n")
    assert not result.timed_out


@pytest.mark.anyio
async def test_timeout_kills_the_whole_group_and_keeps_partial_output(tmp_path: Path) -> None:
    marker = f"attractor-test-{uuid.uuid4().hex}"
    script = tmp_path / "s.sh"
    script.write_text(f"echo started\nsh -c 'sleep 30; : {marker}' &\nsleep 31\n")
    result = await run_process(f"sh {script}", cwd=tmp_path, timeout=0.5, kill_grace=0.5)
    assert result.timed_out and result.returncode is None
    assert result.stdout == "started\n"
    assert _alive(marker) == []


@pytest.mark.anyio
async def test_cancellation_terminates_and_reraises(tmp_path: Path) -> None:
    marker = f"attractor-test-{uuid.uuid4().hex}"
    script = tmp_path / "s.sh"
    script.write_text(f"sh -c 'sleep 30; : {marker}' &\nwait\n")
    with anyio.move_on_after(0.5) as scope:
        await run_process(f"sh {script}", cwd=tmp_path, kill_grace=0.5)
    assert scope.cancelled_caught
    assert _alive(marker) == []


@pytest.mark.anyio
async def test_a_command_cancelled_as_it_starts_leaves_no_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its output captured through pipes: started by anyio, whose pipes connect after
    # the start; cancelled in between, the child was once killed but never awaited.
    before = children()
    with anyio.CancelScope() as scope:
        cancel_once_started(monkeypatch, scope)
        await run_process("sleep 30", cwd=tmp_path, kill_grace=0.5)
    assert children() - before == set()


@pytest.mark.anyio
async def test_sigterm_ignoring_command_is_killed(tmp_path: Path) -> None:
    command, marker = _marker_command(30)
    result = await run_process(
        f"trap '' TERM; {command}", cwd=tmp_path, timeout=0.3, kill_grace=0.3
    )
    assert result.timed_out
    assert _alive(marker) == []


@pytest.mark.anyio
async def test_background_leftovers_are_killed_at_exit(tmp_path: Path) -> None:
    marker = f"attractor-test-{uuid.uuid4().hex}"
    result = await run_process(f"(sh -c 'sleep 30; : {marker}' &); echo done", cwd=tmp_path)
    assert result.stdout == "done\n"
    assert _alive(marker) == []


@pytest.mark.anyio
async def test_streams_to_files(tmp_path: Path) -> None:
    out, err = tmp_path / "stage" / "stdout.txt", tmp_path / "stage" / "stderr.txt"
    result = await run_process(
        "echo to-file; echo oops >&2",
        cwd=tmp_path,
        stdout_path=out,
        stderr_path=err,
        env={**os.environ, "LC_ALL": "C"},
    )
    assert out.read_text() == "to-file\n" and err.read_text() == "oops\n"
    assert result.stdout == "to-file\n" and result.stderr == "oops\n"


@pytest.mark.anyio
async def test_each_command_sees_the_environment_as_it_is_when_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = []
    for value in ("first", "second", None):
        if value is None:
            monkeypatch.delenv("ATTRACTOR_TEST_VALUE")
        else:
            monkeypatch.setenv("ATTRACTOR_TEST_VALUE", value)
        out = tmp_path / f"{value}.txt"
        await run_process(
            "printenv ATTRACTOR_TEST_VALUE ATTRACTOR_NODE",
            cwd=tmp_path,
            env=process_env({"ATTRACTOR_NODE": value}),
            stdout_path=out,
            stderr_path=tmp_path / "err.txt",
        )
        seen.append(out.read_text())
    assert seen == ["first\nfirst\n", "second\nsecond\n", "None\n"]


@pytest.mark.anyio
async def test_a_filtered_environment_follows_changes_and_is_never_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from attractor.proc.envfilter import EnvPolicy
    from attractor.proc.environment import LocalEnvironment

    monkeypatch.setenv("ATTRACTOR_TEST_KEPT", "one")
    monkeypatch.setenv("ATTRACTOR_TEST_TOKEN", "secret")
    policy = EnvPolicy("inherit", deny=("ATTRACTOR_TEST_TOKEN",))
    local = LocalEnvironment(tmp_path, policy)
    first = local.env({"EXTRA": 1})
    assert first["ATTRACTOR_TEST_KEPT"] == "one" and first["EXTRA"] == "1"
    assert "ATTRACTOR_TEST_TOKEN" not in first
    first["ATTRACTOR_TEST_KEPT"] = "changed by a caller"
    assert local.env()["ATTRACTOR_TEST_KEPT"] == "one" and "EXTRA" not in local.env()
    monkeypatch.setenv("ATTRACTOR_TEST_KEPT", "two")
    monkeypatch.setenv("ATTRACTOR_TEST_NEW", "new")
    out = tmp_path / "out.txt"
    result = await local.run(
        "printenv ATTRACTOR_TEST_KEPT ATTRACTOR_TEST_NEW; printenv ATTRACTOR_TEST_TOKEN",
        stdout_path=out,
        stderr_path=tmp_path / "err.txt",
    )
    assert out.read_text() == "two\nnew\n" and result.returncode == 1
    monkeypatch.setenv("MY_PROJECT_SETTING", "x")  # not a core variable
    assert local.env()["MY_PROJECT_SETTING"] == "x"
    strict = LocalEnvironment(tmp_path, EnvPolicy("core"))
    assert "MY_PROJECT_SETTING" not in strict.env()  # each policy filters on its own
    assert "MY_PROJECT_SETTING" in local.env()


@pytest.mark.anyio
async def test_commands_read_an_empty_stdin_one_after_another(tmp_path: Path) -> None:
    for name in ("a", "b"):
        out = tmp_path / f"{name}.txt"
        result = await run_process(
            "wc -c", cwd=tmp_path, stdout_path=out, stderr_path=tmp_path / "err.txt"
        )
        assert result.returncode == 0 and out.read_text().strip() == "0"
