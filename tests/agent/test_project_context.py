"""Project context: the environment block, git facts and instruction files found upward."""

from __future__ import annotations

import datetime
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from attractor.agent.checkout import Checkout
from attractor.agent.project_context import (
    INSTRUCTIONS_BUDGET,
    TRUNCATED_MARK,
    GitState,
    ProjectContext,
    environment_block,
    gather,
    git_state,
)
from attractor.proc.environment import LocalEnvironment
from attractor.proc.process import ProcessResult


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg" / "sub").mkdir(parents=True)
    _git(root, "init", "-q", "-b", "trunk")
    (root / "AGENTS.md").write_text("Root rule: run make test.\n")
    (root / "CLAUDE.md").write_text("Claude rule: be brief.\n")
    (root / "GEMINI.md").write_text("Gemini rule.\n")
    (root / "pkg" / "AGENTS.md").write_text("Package rule: no new deps.\n")
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", "first commit message")
    (root / "pkg" / "untracked.txt").write_text("x")
    return root


def _gather(workdir: Path, names: tuple[str, ...]) -> ProjectContext:
    async def go() -> ProjectContext:
        return await gather(workdir, names, model="test-model")

    return anyio.run(go)


def test_agents_md_found_from_a_subdirectory_root_first(repo: Path) -> None:
    context = _gather(repo / "pkg" / "sub", ("CLAUDE.md",))
    found = [f.path.relative_to(repo).as_posix() for f in context.files]
    assert found == ["AGENTS.md", "CLAUDE.md", "pkg/AGENTS.md"]
    text = context.instructions
    assert text.index("Root rule") < text.index("Claude rule") < text.index("Package rule")
    assert "Gemini rule" not in text


def test_only_the_profiles_own_file_besides_agents_md(repo: Path) -> None:
    context = _gather(repo / "pkg", ("GEMINI.md",))
    assert [f.path.name for f in context.files] == ["AGENTS.md", "GEMINI.md", "AGENTS.md"]
    assert "Claude rule" not in context.instructions


def test_environment_block_has_git_branch_status_and_commits(repo: Path) -> None:
    context = _gather(repo / "pkg", ())
    env = context.environment
    assert env.startswith("<environment>") and env.endswith("</environment>")
    assert f"Working directory: {repo / 'pkg'}" in env
    assert "Is git repository: true" in env
    assert "Git branch: trunk" in env
    assert "0 changed, 1 untracked" in env and "?? untracked.txt" in env
    assert "first commit message" in env
    assert "Model: test-model" in env
    assert f"Today's date: {datetime.date.today().isoformat()}" in env


def test_outside_a_repository_only_the_workdir_is_searched(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("parent file, not ours\n")
    workdir = tmp_path / "plain"
    workdir.mkdir()
    (workdir / "AGENTS.md").write_text("our rule\n")
    context = _gather(workdir, ())
    assert [f.path for f in context.files] == [workdir / "AGENTS.md"]
    assert "Is git repository: false" in context.environment
    assert "Git branch" not in context.environment


def test_instructions_are_cut_at_the_budget_with_a_marker(repo: Path) -> None:
    (repo / "AGENTS.md").write_text("A" * (INSTRUCTIONS_BUDGET + 500))
    context = _gather(repo / "pkg", ("CLAUDE.md",))
    [first] = context.files  # the budget is spent: nothing deeper is read
    assert first.truncated and first.bytes_used == INSTRUCTIONS_BUDGET
    assert TRUNCATED_MARK in context.instructions
    assert "Package rule" not in context.instructions


def test_a_directory_named_agents_md_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").mkdir()
    context = _gather(tmp_path, ())
    assert context.files == ()


def test_environment_block_without_git() -> None:
    block = environment_block(Path("/w"), None, today=datetime.date(2030, 1, 2))
    assert "Today's date: 2030-01-02" in block and "Is git repository: false" in block


class _CountingEnvironment(LocalEnvironment):
    """The local environment, counting the commands it was asked to run."""

    commands: list[str]

    async def run(self, command: str, **kwargs: Any) -> ProcessResult:
        self.commands.append(command)
        return await super().run(command, **kwargs)


def test_sessions_starting_together_share_one_set_of_git_commands(repo: Path) -> None:
    env = _CountingEnvironment(repo)
    env.commands = []
    states: list[GitState | None] = []

    async def one() -> None:
        states.append(await git_state(repo, env))

    async def together() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(one)

    anyio.run(together)
    assert len(states) == 8 and all(s == states[0] for s in states)
    assert states[0] is not None and states[0].branch == "trunk"
    # One shell asks git everything (in a sandbox, one sandbox), once for all eight.
    assert len(env.commands) == 1
    anyio.run(one)  # a session starting later asks git again
    assert len(env.commands) == 2


def test_untouched_worktrees_of_one_commit_share_one_look_each_with_its_own_branch(
    repo: Path, tmp_path: Path
) -> None:
    # The branches of a fan-out: worktrees just checked out at the same commit.
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    trees = []
    for n in range(3):
        tree = tmp_path / f"branch{n}"
        _git(repo, "worktree", "add", "-q", "-b", f"fan/b{n}", str(tree), head)
        trees.append(tree)
    env = _CountingEnvironment(repo)
    env.commands = []
    shared: dict[int, GitState | None] = {}

    async def one(n: int) -> None:
        where = trees[n] / "pkg"  # the stage's workdir, the same folder in each
        checkout = Checkout(trees[n], f"fan/b{n}", head)
        shared[n] = await git_state(where, env, checkout)

    async def together() -> None:
        async with anyio.create_task_group() as tg:
            for n in range(3):
                tg.start_soon(one, n)

    anyio.run(together)
    assert len(env.commands) == 1  # one shell asked git, for the three of them
    for n, tree in enumerate(trees):
        own = anyio.run(git_state, tree / "pkg")  # each asked on its own, for comparison
        assert own is not None and own.branch == f"fan/b{n}"
        assert shared[n] == GitState(tree, own.branch, own.status, own.commits)
        assert own.root.resolve() == tree.resolve()
    # A session in a work tree something ran in asks its own git.
    (trees[0] / "pkg" / "new.txt").write_text("x")
    asked = anyio.run(git_state, trees[0] / "pkg", env)
    assert asked is not None and "new.txt" in asked.status and len(env.commands) == 2


def test_a_repository_with_no_commit_yet_is_still_one(tmp_path: Path) -> None:
    # HEAD names a branch with no commit: git cannot say the branch, but the
    # session still learns it works in a repository, and what is in it.
    root = tmp_path / "new"
    root.mkdir()
    _git(root, "init", "-q", "-b", "trunk")
    (root / "a.txt").write_text("a")
    state = anyio.run(git_state, root)
    assert state is not None and state.root.resolve() == root.resolve()
    assert state.branch == "(unknown)" and state.status == "?? a.txt" and state.commits == ""


def test_sessions_starting_together_read_the_same_instructions_and_later_ones_read_again(
    repo: Path,
) -> None:
    contexts: list[ProjectContext] = []

    async def one() -> None:
        contexts.append(await gather(repo / "pkg", ("CLAUDE.md",), model="m"))

    async def together() -> None:
        async with anyio.create_task_group() as tg:
            for _ in range(8):
                tg.start_soon(one)

    anyio.run(together)
    assert len(contexts) == 8 and all(c.files == contexts[0].files for c in contexts)
    assert "Package rule" in contexts[0].instructions
    (repo / "pkg" / "AGENTS.md").write_text("A newer package rule.\n")
    anyio.run(one)  # a session starting later reads the files again
    assert "A newer package rule" in contexts[-1].instructions


def test_outside_a_repository_there_is_no_git_state(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    assert anyio.run(git_state, tmp_path / "plain") is None


def test_outside_any_repository_git_is_not_even_started(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    env = _CountingEnvironment(plain)
    env.commands = []
    assert anyio.run(git_state, plain, env) is None
    assert env.commands == []  # a few lstat calls told it: no shell, no sandbox


@pytest.mark.parametrize("marker", ["file", "bare", "variable"])
def test_anything_git_might_take_for_a_repository_is_left_to_git(
    tmp_path: Path, marker: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner = tmp_path / "outer" / "inner"
    inner.mkdir(parents=True)
    if marker == "file":  # a worktree's pointer, here to nothing
        (tmp_path / "outer" / ".git").write_text("gitdir: /nowhere\n")
    elif marker == "bare":  # the folder above looks like a bare repository
        for name in ("objects", "refs"):
            (tmp_path / "outer" / name).mkdir()
        (tmp_path / "outer" / "HEAD").write_text("ref: refs/heads/main\n")
    else:
        monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    env = _CountingEnvironment(inner)
    env.commands = []
    assert anyio.run(git_state, inner, env) is None  # git itself finds no repository
    assert len(env.commands) == 1
