"""``workspace_setup`` runs inside the run's boundary, like any step's command.

The real CLI on a real git repository: the setup command reads the user's key
and writes outside the worktree; the key never reaches its log and the write is
refused; ``--dry-run`` shows where it would run.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from click.testing import Result

from tests.cli.runkit import invoke, only_run_dir, read_json, write
from tests.sandbox.conftest import needs_bwrap
from tests.workspace.gitkit import make_repo

SETUP = "printenv OPENAI_API_KEY; echo x > $HOME/f || echo refused; echo ok > built"
PIPELINE = (
    'digraph p {\n  graph [workspace_setup="' + SETUP + '"%s]\n'
    "  start [shape=Mdiamond]; done [shape=Msquare]\n"
    '  t [shape=parallelogram, tool_command="cat built"]\n'
    "  start -> t -> done\n}\n"
)


def _run(tmp_path: Path, attrs: str, *extra: str) -> tuple[Path, Result, str]:
    repo = make_repo(tmp_path / "repo", {".gitignore": "built\n"})
    home = tmp_path / "home"
    home.mkdir()
    dot = write(tmp_path / "p.dot", PIPELINE % attrs)
    key = "sk-test-" + secrets.token_hex(16)
    logs = tmp_path / "logs" / "r"
    args = ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs), *extra]
    result = invoke(args, env={"OPENAI_API_KEY": key, "HOME": str(home)})
    return home, result, key


@needs_bwrap
def test_workspace_setup_runs_sandboxed_and_its_log_is_redacted(tmp_path: Path) -> None:
    # env=inherit hands the key to the command on purpose: the log must still hide it.
    home, result, key = _run(tmp_path, ", env=inherit")
    assert result.exit_code == 0, result.output + result.stderr
    run_dir = only_run_dir(tmp_path / "logs")
    log = (run_dir / "workspace-setup.log").read_text()
    assert key not in log
    assert "[redacted:OPENAI_API_KEY]" in log
    assert "refused" in log  # the write to $HOME failed inside the sandbox
    assert not (home / "f").exists()
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "built").read_text() == "ok\n"  # the worktree itself is writable


def test_workspace_setup_gets_the_filtered_environment(tmp_path: Path) -> None:
    # The default env=core drops the key before the command starts (with or without bwrap).
    _home, result, key = _run(tmp_path, "", "--sandbox", "none")
    assert result.exit_code == 0, result.output + result.stderr
    log = (only_run_dir(tmp_path / "logs") / "workspace-setup.log").read_text()
    assert key not in log
    assert "redacted" not in log  # nothing to hide: printenv found no such variable
    assert log.splitlines() == []  # the write to $HOME is allowed without a sandbox


@needs_bwrap
def test_dry_run_shows_the_boundary_of_workspace_setup(tmp_path: Path) -> None:
    _home, result, _key = _run(tmp_path, ', network="on"', "--dry-run")
    assert result.exit_code == 0, result.output + result.stderr
    lines = result.output.splitlines()
    line = next(x for x in lines if x.startswith("workspace: worktree"))
    assert "(boundary: bwrap sandbox, network on, writable: workdir, env=core)" in line
