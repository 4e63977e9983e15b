"""Plain command lines run without the shell, with the shell's observable behaviour."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from attractor.proc.process import run_process
from attractor.proc.spawn import direct_argv


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("/bin/true", ["/bin/true"]),
        ("make  -C build test", ["make", "-C", "build", "test"]),
        ("pytest -q tests/a.py::test_b", ["pytest", "-q", "tests/a.py::test_b"]),
        ("echo hi", None),  # a builtin
        ("cd /tmp", None),
        ("FOO=1 env", None),  # an assignment
        ("ls *.py", None),
        ("ls ~", None),
        ("a && b", None),
        ("echo 'x'", None),
        ("cat $HOME/x", None),
        ("sleep 1 # note", None),
        ("ls\tx", None),
        ("", None),
    ],
)
def test_direct_argv_only_for_plain_commands(command: str, argv: list[str] | None) -> None:
    assert direct_argv(command) == argv


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "script"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


@pytest.mark.anyio
async def test_direct_command_has_its_own_group_cwd_env_and_files(tmp_path: Path) -> None:
    script = _script(tmp_path, 'echo "$(pwd) $ATTR_X $1"; ps -o pgid=,sid= -p $$ >&2')
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    env = {**os.environ, "ATTR_X": "seen"}
    result = await run_process(
        f"{script} arg", cwd=tmp_path, env=env, stdout_path=out, stderr_path=err
    )
    assert result.returncode == 0
    assert out.read_text() == f"{tmp_path} seen arg\n"
    pgid, sid = result.stderr.split()
    assert pgid == sid != str(os.getpgid(0))


@pytest.mark.anyio
@pytest.mark.parametrize("files", [True, False])
async def test_missing_command_reports_like_the_shell(tmp_path: Path, files: bool) -> None:
    paths = {"stdout_path": tmp_path / "o", "stderr_path": tmp_path / "e"} if files else {}
    result = await run_process("no-such-command-xyz arg", cwd=tmp_path, **paths)  # type: ignore[arg-type]
    assert result.returncode == 127
    assert "no-such-command-xyz" in result.stderr and "not found" in result.stderr


@pytest.mark.anyio
async def test_script_without_shebang_runs_through_the_shell(tmp_path: Path) -> None:
    script = tmp_path / "plain"
    script.write_text("echo from-sh\n")
    script.chmod(0o755)
    result = await run_process(str(script), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "from-sh\n")


@pytest.mark.anyio
@pytest.mark.parametrize("files", [True, False])
async def test_killed_by_a_signal_reports_128_plus_n(tmp_path: Path, files: bool) -> None:
    script = _script(tmp_path, "kill -USR1 $$; sleep 5")
    paths = {"stdout_path": tmp_path / "o", "stderr_path": tmp_path / "e"} if files else {}
    direct = await run_process(str(script), cwd=tmp_path, **paths)  # type: ignore[arg-type]
    shell = await run_process(f"{script} && :", cwd=tmp_path, **paths)  # type: ignore[arg-type]
    assert direct.returncode == shell.returncode == 128 + signal.SIGUSR1
    assert direct.stderr == shell.stderr == "User defined signal 1\n"
