"""A sandboxed step cannot plant what git or attractor would run or follow outside it.

Each test runs a real pipeline in the bwrap sandbox whose tool step tries every
way in it knows and writes down which it got; git's config, hooks and links, and
attractor's own folder, must come out as they were, while the step can still
commit its work where the workspace lets it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli.runkit import finish, invoke, only_run_dir, spawn, write
from tests.sandbox.conftest import needs_bwrap
from tests.workspace.gitkit import git, make_repo

pytestmark = needs_bwrap

#: sh: try each way in (TRY "what" command...), noting "got: what" or "refused: what".
_TRY = (
    'try() { w="$1"; shift; '
    'if ("$@") >/dev/null 2>&1; then echo "got: $w"; else echo "refused: $w"; fi; }'
)


def _attempts(*lines: str) -> str:
    """A tool_command running ``lines`` after _TRY, its report in the stage's tries.txt."""
    body = "; ".join(lines)
    return f'{_TRY}; {{ {body}; }} > "$ATTRACTOR_STAGE_DIR/tries.txt"'


def _pipeline(command: str) -> str:
    escaped = command.replace("\\", "\\\\").replace('"', '\\"')
    return f"""digraph p {{
        start [shape=Mdiamond]
        done  [shape=Msquare]
        step [shape=parallelogram, tool_command="{escaped}"]
        start -> step -> done
    }}"""


def _tries(run_dir: Path) -> list[str]:
    return (run_dir / "step" / "tries.txt").read_text().splitlines()


def _tried(where: Path, command: str, run_dir: Path, *extra: str) -> list[str]:
    """Run ``command`` as the one step of a pipeline in ``where`` (the current folder),
    sandboxed, into ``run_dir``: what its tries got."""
    write(where / "p.dot", _pipeline(command))
    args = ["run", "p.dot", "--sandbox", "bwrap", *extra, "--logs-dir", str(run_dir)]
    result = invoke(args)
    assert result.exit_code == 0, result.output + result.stderr
    return _tries(run_dir)


def test_in_a_worktree_the_step_commits_but_cannot_touch_gits_control_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    config_before = (repo / ".git" / "config").read_text()
    monkeypatch.chdir(repo)
    plant = "printf '[core]\\n\\tfsmonitor = touch planted\\n'"
    command = _attempts(
        "C=$(git rev-parse --git-common-dir); A=$(git rev-parse --git-dir)",
        f'try config sh -c "{plant} >> $C/config"',
        'try hook sh -c "echo touch planted > $C/hooks/post-checkout"',
        'try commondir sh -c "echo /tmp > $C/commondir"',
        'try admin-commondir sh -c "echo /tmp > $A/commondir"',
        'try gitfile sh -c "echo gitdir: /tmp > .git"',
        'try rename-worktrees mv "$C/worktrees" "$C/worktrees-old"',
        'try rename-admin mv "$A" "$A-old"',
        "try commit sh -c 'echo b > b.txt && git add b.txt && git commit -qm b'",
    )
    assert _tried(repo, command, tmp_path / "r") == [
        "refused: config",
        "refused: hook",
        "refused: commondir",
        "refused: admin-commondir",
        "refused: gitfile",
        "refused: rename-worktrees",
        "refused: rename-admin",
        "got: commit",
    ]
    assert (repo / ".git" / "config").read_text() == config_before
    assert not (repo / ".git" / "commondir").exists()
    run_branch = git(repo, "branch", "--list", "attractor/*", "--format=%(refname:short)")
    assert "b" in git(repo, "log", "--format=%s", run_branch.strip()).split()


def test_with_no_workspace_the_repositorys_control_files_are_read_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    monkeypatch.chdir(repo)
    command = _attempts(
        'try config sh -c "echo x >> .git/config"',
        'try commondir sh -c "echo /tmp > .git/commondir"',
        "try rename-git mv .git .git-old",
        "try object git hash-object -w a.txt",
        "try edit sh -c 'echo changed > a.txt'",
    )
    assert _tried(repo, command, tmp_path / "r", "--workspace", "none") == [
        "refused: config",
        "refused: commondir",
        "refused: rename-git",
        "got: object",
        "got: edit",
    ]
    assert not (repo / ".git" / "commondir").exists()


@pytest.mark.parametrize("logs_dir", [None, "runs/r1"])
def test_the_step_cannot_swap_the_run_directorys_folder_for_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, logs_dir: str | None
) -> None:
    # A folder above the run directory that stayed writable (.attractor, or runs/
    # for --logs-dir runs/r1) could be renamed away, mounts and all, and a copy of
    # the step's making put where attractor writes.
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    folder = ".attractor" if logs_dir is None else "runs"
    command = _attempts(
        f"try rename mv {folder} {folder}-old",
        'try own-stage touch "$ATTRACTOR_STAGE_DIR/mine.txt"',
        "try workdir touch made.txt",
    )
    write(work / "p.dot", _pipeline(command))
    args = ["run", "p.dot", "--sandbox", "bwrap", "--workspace", "none"]
    result = invoke([*args, "--logs-dir", logs_dir] if logs_dir else args)
    assert result.exit_code == 0, result.output + result.stderr
    run_dir = work / logs_dir if logs_dir else only_run_dir(work / ".attractor" / "runs")
    assert _tries(run_dir) == ["refused: rename", "got: own-stage", "got: workdir"]
    if logs_dir is None:
        assert sorted(os.listdir(work / ".attractor")) == [".gitignore", "runs"]


def test_a_worktree_config_a_step_could_create_is_read_only_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # With extensions.worktreeConfig (git sparse-checkout sets it), git reads the
    # worktree's own config.worktree: missing, a step could once create it.
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    git(repo, "config", "extensions.worktreeConfig", "true")
    monkeypatch.chdir(repo)
    command = _attempts(
        "A=$(git rev-parse --git-dir)",
        "try config-worktree sh -c \"printf '[core]\\n\\tfsmonitor = touch planted\\n' "
        '> $A/config.worktree"',  # fmt: skip
    )
    assert _tried(repo, command, tmp_path / "r") == ["refused: config-worktree"]
    assert not list(tmp_path.rglob("planted"))


def test_a_git_directory_behind_a_link_is_guarded_where_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # .git a link to the git directory (kept elsewhere in the workdir): once bwrap
    # refused the mount and every sandboxed step failed.
    work = tmp_path / "work"
    make_repo(work / "store", {"a.txt": "a\n"})
    (work / "store" / ".git").rename(work / "repo.git")
    (work / "store" / ".git").symlink_to(work / "repo.git")
    monkeypatch.chdir(work / "store")
    command = _attempts(
        'try config sh -c "echo x >> .git/config"', "try object git hash-object -w a.txt"
    )
    extra = ("--workspace", "none", "--writable", str(work))
    assert _tried(work / "store", command, tmp_path / "r", *extra) == [
        "refused: config",
        "got: object",
    ]


def test_a_nested_repository_the_step_records_runs_nothing_at_the_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # git add -A runs git status inside each nested repository the index records,
    # with that repository's config: the checkpoint, on the host, once ran the
    # fsmonitor the step planted there.
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    monkeypatch.chdir(repo)
    ran = tmp_path / "ran"  # the host can write here, the sandbox cannot
    ident = "-c user.name=s -c user.email=s@x"
    command = (
        f"mkdir sub && git -C sub init -q && git -C sub {ident} commit -q --allow-empty -m s "
        f"&& git -C sub config core.fsmonitor 'touch {ran}' "
        "&& git update-index --add --cacheinfo 160000,$(git -C sub rev-parse HEAD),sub "
        "&& echo b > b.txt"
    )
    write(repo / "p.dot", _pipeline(command))
    result = invoke(["run", "p.dot", "--sandbox", "bwrap", "--logs-dir", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output + result.stderr
    assert not ran.exists(), "the step's fsmonitor ran outside the sandbox"
    run_branch = git(repo, "branch", "--list", "attractor/*", "--format=%(refname:short)")
    assert "b.txt" in git(repo, "ls-tree", "--name-only", run_branch.strip())


def test_a_fifo_in_place_of_the_runs_branch_does_not_hold_the_run(tmp_path: Path) -> None:
    # git waits on a FIFO under a ref's name for ever, and the checkpoint that asks
    # for the branch runs shielded: once nothing, not even --timeout, stopped it.
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    command = (
        'b=$(git symbolic-ref HEAD); c=$(git rev-parse --git-common-dir); rm -f "$c/$b"; '
        'mkfifo "$c/$b"; echo change > new.txt'
    )
    write(repo / "p.dot", _pipeline(command))
    args = ["run", "p.dot", "--sandbox", "bwrap", "--timeout", "30s"]
    code, out, err = finish(spawn([*args, "--logs-dir", str(tmp_path / "r")], repo), timeout=90)
    assert code == 0, out + err
    branch = git(repo, "branch", "--list", "attractor/*", "--format=%(refname)").strip()
    assert (repo / ".git" / branch).is_file()  # a ref file again, at the last checkpoint


def test_a_link_on_the_way_to_the_runs_reflog_is_not_written_through(tmp_path: Path) -> None:
    # logs/ is writable for the step's own commits: a link in place of the branch's
    # reflog once had the checkpoint's update-ref append to the file it named.
    repo = make_repo(tmp_path / "repo", {"a.txt": "a\n"})
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    command = (
        f'b=$(git symbolic-ref HEAD); c=$(git rev-parse --git-common-dir); rm -f "$c/logs/$b"; '
        f'ln -s {victim} "$c/logs/$b"; echo change > new.txt'
    )
    write(repo / "p.dot", _pipeline(command))
    args = ["run", "p.dot", "--sandbox", "bwrap", "--logs-dir", str(tmp_path / "r")]
    code, out, err = finish(spawn(args, repo), timeout=90)
    assert code == 0, out + err
    assert victim.read_text() == "mine\n"
