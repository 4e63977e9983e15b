"""A run in a git repository works in a worktree of its own (item 1 of the workspace work).

Everything here runs the real CLI on real repositories with real git.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli.runkit import invoke, only_run_dir, read_json, write
from tests.workspace.gitkit import git, git_commands, make_repo, state_of

WRITE_PIPELINE = """digraph p {
  start [shape=Mdiamond]; done [shape=Msquare]
  impl [shape=parallelogram, tool_command="echo agent >> notes.txt && echo new > made.txt"]
  start -> impl -> done
}
"""


def _run(repo: Path, logs: Path, *extra: str, pipeline: str = WRITE_PIPELINE):
    dot = write(logs.parent / "p.dot", pipeline)
    args = ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r"), *extra]
    return invoke(args)


def test_the_users_checkout_index_and_stash_stay_exactly_as_they_were(tmp_path: Path) -> None:
    repo = make_repo(
        tmp_path / "repo", {"notes.txt": "one\n", "keep.txt": "k\n", ".gitignore": ".attractor/\n"}
    )
    git(repo, "stash", "list")
    (repo / "keep.txt").write_text("stashed change\n")
    git(repo, "stash")
    (repo / "notes.txt").write_text("one\nuncommitted\n")  # modified, not staged
    (repo / "staged.txt").write_text("staged\n")
    git(repo, "add", "staged.txt")  # staged
    (repo / "untracked.txt").write_text("untracked\n")
    before = state_of(repo)

    result = _run(repo, tmp_path / "logs")

    assert result.exit_code == 0, result.output + result.stderr
    assert state_of(repo) == before  # files, index bytes, status, stash, HEAD
    manifest = read_json(only_run_dir(tmp_path / "logs") / "manifest.json")
    work_tree = Path(manifest["workspace"]["work_tree"])
    # The run started from HEAD plus every uncommitted change, and worked there.
    assert (work_tree / "notes.txt").read_text() == "one\nuncommitted\nagent\n"
    assert (work_tree / "staged.txt").read_text() == "staged\n"
    assert (work_tree / "untracked.txt").read_text() == "untracked\n"
    assert (work_tree / "made.txt").read_text() == "new\n"
    assert not (repo / "made.txt").exists()
    branch = manifest["workspace"]["branch"]
    assert git(repo, "show", f"{branch}:made.txt") == "new\n"
    # The branch begins with the uncommitted changes, so git merge would refuse to
    # overwrite them; the summary says so and names a command that works.
    assert "take the result: git merge" not in result.output
    merge = subprocess.run(
        ["git", "merge", branch], cwd=repo, env=_git_env(), capture_output=True, check=False
    )
    assert merge.returncode != 0 and state_of(repo) == before
    take = next(
        line for line in result.output.splitlines() if line.startswith("take the result on top")
    )
    command = take.split(": ", 1)[1].split(" (or ", 1)[0]
    subprocess.run(command, shell=True, check=True, cwd=tmp_path, env=_git_env())
    assert (repo / "made.txt").read_text() == "new\n"
    assert (repo / "notes.txt").read_text() == "one\nuncommitted\nagent\n"
    assert (repo / "untracked.txt").read_text() == "untracked\n"
    assert git(repo, "diff", "--cached", "--name-only") == "staged.txt\n"  # index untouched


def _git_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}


def test_dry_run_names_the_mode_and_where_it_comes_from(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    plain = tmp_path / "plain"
    plain.mkdir()
    dot = write(tmp_path / "p.dot", WRITE_PIPELINE)

    in_repo = invoke(["run", str(dot), "--dry-run", "--workdir", str(repo)])
    elsewhere = invoke(["run", str(dot), "--dry-run", "--workdir", str(plain)])
    off = invoke(["run", str(dot), "--dry-run", "--workdir", str(repo), "--workspace", "none"])
    by_env = CliEnv(ATTRACTOR_WORKSPACE="snapshot").dry(dot, repo)

    assert "workspace: worktree (default: " in in_repo.output
    assert "branch attractor/RUN_ID" in in_repo.output
    assert "workspace: snapshot (default: the workdir is not in a git repository)" in (
        elsewhere.output
    )
    assert "workspace: none (--workspace)" in off.output and "no checkpoints" in off.output
    assert "workspace: snapshot (ATTRACTOR_WORKSPACE)" in by_env
    assert not (repo / ".attractor").exists() and not (plain / ".attractor").exists()


def test_dry_run_names_only_the_links_the_checkout_has(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": ".venv/\n"})
    dot = write(tmp_path / "p.dot", WRITE_PIPELINE)

    bare = invoke(["run", str(dot), "--dry-run", "--workdir", str(repo)]).output
    (repo / ".venv").mkdir()
    with_venv = invoke(["run", str(dot), "--dry-run", "--workdir", str(repo)]).output

    assert "links nothing (the checkout has none of .venv, venv, node_modules)" in bare
    assert "links .venv from the checkout" in with_venv and "node_modules" not in with_venv


class CliEnv:
    def __init__(self, **env: str) -> None:
        self.env = env

    def dry(self, dot: Path, workdir: Path) -> str:
        return invoke(["run", str(dot), "--dry-run", "--workdir", str(workdir)], self.env).output


def test_graph_attribute_chooses_the_mode(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    dot = write(
        tmp_path / "p.dot", WRITE_PIPELINE.replace("digraph p {", 'digraph p {\n  workspace="none"')
    )
    out = invoke(["run", str(dot), "--dry-run", "--workdir", str(repo)]).output
    assert "workspace: none (graph attribute workspace)" in out


def _refused(tmp_path: Path, workdir: Path, *extra: str, env: dict[str, str] | None = None):
    dot = write(tmp_path / "p.dot", WRITE_PIPELINE)
    logs = tmp_path / "logs"
    args = ["run", str(dot), "--workdir", str(workdir), "--logs-dir", str(logs / "r"), *extra]
    result = invoke(args, env)
    assert result.exit_code == 2, result.output + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert not logs.exists()  # refused before anything ran or was written
    return lines[0]


def test_a_rebase_in_progress_is_refused_before_anything_runs(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"f.txt": "base\n"})
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "f.txt").write_text("other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "f.txt").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    git(repo, "rebase", "other", check=False)  # stops on the conflict
    assert (repo / ".git" / "rebase-merge").exists() or (repo / ".git" / "rebase-apply").exists()

    line = _refused(tmp_path, repo)

    assert "in the middle of a rebase" in line and "git rebase --abort" in line
    assert "--workspace snapshot" in line


def test_a_merge_in_progress_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"f.txt": "base\n"})
    git(repo, "checkout", "-q", "-b", "other")
    (repo / "f.txt").write_text("other\n")
    git(repo, "commit", "-qam", "other")
    git(repo, "checkout", "-q", "main")
    (repo / "f.txt").write_text("main\n")
    git(repo, "commit", "-qam", "main")
    git(repo, "merge", "other", check=False)

    line = _refused(tmp_path, repo)

    assert "in the middle of a merge" in line and "git merge --abort" in line


def test_a_repository_without_commits_is_refused_unless_snapshot_is_chosen(
    tmp_path: Path,
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "a.txt").write_text("a\n")

    line = _refused(tmp_path, repo)
    assert "has no commits yet" in line and "git commit" in line

    dot = write(tmp_path / "p.dot", WRITE_PIPELINE)
    ok = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(tmp_path / "l2" / "r"),
                 "--workspace", "snapshot"])  # fmt: skip
    assert ok.exit_code == 0, ok.stderr
    assert (repo / "made.txt").exists()  # snapshot: the stages work in the workdir


def test_a_bare_repository_is_refused(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    bare.mkdir()
    git(bare, "init", "-q", "--bare")
    line = _refused(tmp_path, bare)
    assert "bare git repository" in line and "git clone" in line


def test_git_missing_is_one_line_and_none_still_runs(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    bin_dir = tmp_path / "bin"  # a PATH with a shell but no git
    bin_dir.mkdir()
    for tool in ("sh", "echo", "cat"):
        found = shutil.which(tool)
        assert found is not None
        os.symlink(found, bin_dir / tool)
    dot = write(tmp_path / "p.dot", WRITE_PIPELINE)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTRACTOR_")}
    env["PATH"] = str(bin_dir)
    base = [sys.executable, "-m", "attractor", "run", str(dot), "--workdir", str(plain)]
    refused = subprocess.run(
        [*base, "--logs-dir", str(tmp_path / "l1" / "r")],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.strip().splitlines() == [
        "error: git is not installed, and the run's workspace needs it: install git, "
        "or pass --workspace none to run without checkpoints of the files"
    ]
    assert not (tmp_path / "l1").exists()
    ran = subprocess.run(
        [*base, "--logs-dir", str(tmp_path / "l2" / "r"), "--workspace", "none",
         "--sandbox", "none"],
        env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "workspace: none" in ran.stdout


def test_snapshot_mode_gives_the_workdir_no_git_and_keeps_checkpoints_in_the_run_dir(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.txt").write_text("one\n")

    result = _run(plain, tmp_path / "logs")

    assert result.exit_code == 0, result.stderr
    assert not (plain / ".git").exists()
    run_dir = only_run_dir(tmp_path / "logs")
    git_dir = run_dir / "workspace.git"
    assert git_dir.is_dir()
    shown = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"attractor/{run_dir.name}:made.txt"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert shown == "new\n"
    assert "workspace: snapshot" in result.output


def test_a_real_virtual_environment_is_there_for_the_worktree_steps(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": ".venv/\n", "m.py": "VALUE = 41\n"})
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")],
        check=True, timeout=120,
    )  # fmt: skip
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      test [shape=parallelogram,
            tool_command=".venv/bin/python -c 'import sys,m;print(sys.prefix,m.VALUE+1)' > out.txt"]
      start -> test -> done
    }
    """

    linked = _run(repo, tmp_path / "logs", pipeline=pipeline)
    unlinked = _run(repo, tmp_path / "logs2", "--workspace-link", "none", pipeline=pipeline)

    assert linked.exit_code == 0, linked.output + linked.stderr
    manifest = read_json(only_run_dir(tmp_path / "logs") / "manifest.json")
    work_tree = Path(manifest["workspace"]["work_tree"])
    prefix, value = (work_tree / "out.txt").read_text().split()
    assert value == "42"  # the worktree's own m.py, run by the checkout's environment
    assert Path(prefix).resolve() == (repo / ".venv").resolve()
    # The link is never part of a checkpoint.
    branch = manifest["workspace"]["branch"]
    assert ".venv" not in git(repo, "ls-tree", "--name-only", branch).split()
    assert unlinked.exit_code == 1  # without the environment the step cannot run


def test_workspace_setup_runs_once_in_the_new_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {".gitignore": "built/\n"})
    result = _run(
        repo, tmp_path / "logs", "--workspace-setup", "mkdir built && echo ok > built/ready"
    )
    assert result.exit_code == 0, result.stderr
    manifest = read_json(only_run_dir(tmp_path / "logs") / "manifest.json")
    assert (Path(manifest["workspace"]["work_tree"]) / "built" / "ready").read_text() == "ok\n"
    assert not (repo / "built").exists()


def test_a_failing_workspace_setup_stops_the_run_and_leaves_no_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    result = _run(repo, tmp_path / "logs", "--workspace-setup", "exit 3")
    assert result.exit_code == 1
    assert "workspace_setup 'exit 3' failed (exit 3)" in result.stderr
    assert git(repo, "branch", "--list", "attractor/*") == ""
    assert "attractor" not in git(repo, "worktree", "list")
    # Nor a line in the repository's registry of runs, naming a run that never was.
    registry = repo / ".git" / "attractor" / "runs"
    assert not registry.exists() or list(registry.iterdir()) == []


def test_a_clean_checkout_ends_with_git_merge_and_no_search_for_a_start_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"notes.txt": "one\n", ".gitignore": ".attractor/\n"})
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    result = _run(repo, tmp_path / "logs")
    assert result.exit_code == 0, result.output + result.stderr
    manifest = read_json(only_run_dir(tmp_path / "logs") / "manifest.json")
    assert f"take the result: git merge {manifest['workspace']['branch']}" in result.output
    started = git_commands(trace)
    assert any("commit-tree" in argv for argv in started)  # the trace saw the run's git
    # Nothing uncommitted: no commit of it begins the branch, none is looked for.
    assert not any(any("Kind: start" in a for a in argv) for argv in started)


def test_a_run_that_changed_no_file_has_no_result_to_take(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"notes.txt": "one\n", ".gitignore": ".attractor/\n"})
    quiet = "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; "
    quiet += 'look [shape=parallelogram, tool_command="cat notes.txt"]; start -> look -> done }'
    result = _run(repo, tmp_path / "logs", pipeline=quiet)
    assert result.exit_code == 0, result.output + result.stderr
    assert "0 commit(s)" in result.output
    assert "take the result" not in result.output


def test_a_run_leaves_nothing_untracked_in_the_users_checkout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"notes.txt": "one\n"})  # no .gitignore of its own
    monkeypatch.chdir(repo)
    write(repo / ".git" / "info" / "exclude", "p.dot\n")  # the pipeline is the test's
    write(repo / "p.dot", WRITE_PIPELINE)
    result = invoke(["run", "p.dot"])
    assert result.exit_code == 0, result.output + result.stderr
    assert (repo / ".attractor" / "runs").is_dir()
    assert git(repo, "status", "--porcelain") == ""  # .attractor ignores itself


def test_a_dirty_checkout_ends_with_a_diff_to_apply(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"notes.txt": "one\n", ".gitignore": ".attractor/\n"})
    (repo / "notes.txt").write_text("one\nuncommitted\n")
    result = _run(repo, tmp_path / "logs")
    assert result.exit_code == 0, result.output + result.stderr
    assert "take the result: git merge" not in result.output
    assert "| git -C" in result.output and "apply" in result.output


def test_a_dirty_checkout_ends_without_searching_git_for_the_commit_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = make_repo(tmp_path / "repo", {"notes.txt": "one\n", ".gitignore": ".attractor/\n"})
    (repo / "notes.txt").write_text("one\nuncommitted\n")
    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    result = _run(repo, tmp_path / "logs")
    assert result.exit_code == 0, result.output + result.stderr
    branch = read_json(only_run_dir(tmp_path / "logs") / "manifest.json")["workspace"]["branch"]
    first = git(repo, "rev-list", "--reverse", branch, "--not", "HEAD").split()[0]
    assert f"diff --binary {first[:12]} {branch} | git -C {repo} apply" in result.output
    # This process made that commit on the checkout's HEAD, which has not moved.
    assert not any(any("Kind: start" in a for a in argv) for argv in git_commands(trace))


def test_a_checkout_committed_to_during_the_run_still_gets_the_right_diff(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"notes.txt": "one\n", ".gitignore": ".attractor/\n"})
    (repo / "notes.txt").write_text("one\nuncommitted\n")
    pipeline = f"""digraph p {{
      start [shape=Mdiamond]; done [shape=Msquare]
      impl [shape=parallelogram, tool_command="echo new > made.txt"]
      user [shape=parallelogram, sandbox=none,  // the user, at work meanwhile
            tool_command="git -C {repo} -c user.name=u -c user.email=u@x commit -qam mine"]
      start -> impl -> user -> done
    }}
    """
    result = _run(repo, tmp_path / "logs", pipeline=pipeline)
    assert result.exit_code == 0, result.output + result.stderr
    assert git(repo, "log", "-1", "--format=%s").strip() == "mine"  # HEAD moved
    branch = read_json(only_run_dir(tmp_path / "logs") / "manifest.json")["workspace"]["branch"]
    first = git(repo, "rev-list", "--reverse", branch, "--not", "HEAD").split()[0]
    # The branch's first commit (the changes as they were) is still not in HEAD.
    assert f"diff --binary {first[:12]} {branch} | git -C {repo} apply" in result.output


def test_a_first_commit_that_cannot_be_made_leaves_no_worktree_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worktree's admin folder is written while git stages the checkout: when the
    staging fails, it goes again, with the folder and the branch."""
    from attractor.workspace import commits

    monkeypatch.setattr(commits, "_MAX_NESTED", 1)
    repo = make_repo(tmp_path / "repo", {"notes.txt": "one\n", ".gitignore": ".attractor/\n"})
    for name in ("one", "two"):  # nested repositories without a commit, two of them
        git(repo, "init", "-q", name)
        (repo / name / "f.txt").write_text("x\n")
    result = _run(repo, tmp_path / "logs")
    assert result.exit_code != 0
    assert "nested git repositories without a commit" in result.stderr
    common = repo / ".git"
    assert list((common / "attractor" / "worktrees").iterdir()) == []
    assert not (common / "worktrees").exists() or list((common / "worktrees").iterdir()) == []
    assert git(repo, "branch", "--list", "attractor/*") == ""
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
