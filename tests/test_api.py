"""The library API: what the CLI does, callable from Python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import attractor
from attractor.errors import ValidationError

PIPELINE = """digraph api {
    graph [goal="Say hi"]
    start [shape=Mdiamond]
    done  [shape=Msquare]
    greet [shape=parallelogram, tool_command="echo $GREETING >> greeted.txt"]
    start -> greet -> done
}
"""


def test_lint_returns_diagnostics(tmp_path: Path) -> None:
    path = tmp_path / "bad.dot"
    path.write_text("digraph bad { a -> b }")
    rules = {d.rule for d in attractor.lint(path)}
    assert {"start_node", "terminal_node"} <= rules


def test_load_refuses_a_pipeline_with_lint_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.dot"
    path.write_text("digraph bad { a -> b }")
    with pytest.raises(ValidationError):
        attractor.load(path)


@pytest.mark.anyio
async def test_run_a_pipeline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GREETING", "hello")
    (tmp_path / "p.dot").write_text(PIPELINE)
    # A variable outside the core set reaches commands only when named (docs/sandbox.md).
    flags = {"timeout": "1m", "workdir": ".", "env_allow": "GREETING"}
    result = await attractor.run("p.dot", flags=flags)
    assert result.status == "success" and result.exit_code == 0
    assert (tmp_path / "greeted.txt").read_text() == "hello\n"
    assert (result.run_dir / "checkpoint.json").is_file()


def test_importing_attractor_stays_light() -> None:
    code = "import sys, attractor; print('anyio' in sys.modules, 'rich' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


#: What ``attractor lint`` must never load: the run side's (the run, its store, the
#: read side, the Ray executor), the display's and the SDKs' imports.
_HEAVY = (
    *("anyio", "rich", "openai", "anthropic", "httpx", "importlib.metadata"),
    *("attractor.engine", "attractor.store", "attractor.runview", "attractor.ray_exec"),
)


def test_the_lint_command_loads_nothing_heavy(tmp_path: Path) -> None:
    (tmp_path / "p.dot").write_text(PIPELINE)
    code = (
        "import sys\n"
        "from attractor.cli.main import cli\n"
        "try:\n"
        f"    cli.main(['lint', {str(tmp_path / 'p.dot')!r}])\n"
        "except SystemExit as done:\n"
        "    print('exit', done.code)\n"
        f"print(*[m for m in {_HEAVY!r} if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *_, verdict, loaded = out.stdout.splitlines()
    assert verdict == "exit 0", out.stdout
    assert loaded == "", f"attractor lint imported {loaded}"


@pytest.mark.anyio
async def test_resume_continues_a_timed_out_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.dot").write_text(
        """digraph slow {
        start [shape=Mdiamond]
        done  [shape=Msquare]
        first [shape=parallelogram, tool_command="echo ran >> first.txt"]
        wait  [shape=parallelogram, tool_command="test -f go || sleep 30"]
        start -> first -> wait -> done
    }"""
    )
    stopped = await attractor.run("p.dot", flags={"timeout": "1s", "kill_grace": "100ms"})
    assert (stopped.status, stopped.current_node) == ("timed_out", "wait")
    (tmp_path / "go").touch()
    resumed = await attractor.resume(stopped.run_dir)
    assert resumed.status == "success"
    assert (tmp_path / "first.txt").read_text() == "ran\n"
