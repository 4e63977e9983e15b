"""Parallel branches in worktrees of their own, merged at the fan-in (item 5), real git."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.runkit import invoke, only_run_dir, read_json, write
from tests.llm.fake_http import FakeServer, Reply
from tests.llm.wire import openai_completion
from tests.workspace.gitkit import git, make_repo


def _fan(merge: str, left: str, right: str, after: str = "") -> str:
    return f"""digraph fan {{
      start [shape=Mdiamond]; done [shape=Msquare]
      split [shape=component]
      left  [shape=parallelogram, tool_command="{left}"]
      right [shape=parallelogram, tool_command="{right}"]
      join  [shape=tripleoctagon, merge="{merge}"]
      fixup [shape=parallelogram, tool_command="echo resolved > fixed.txt"]
      start -> split
      split -> left
      split -> right
      left -> join
      right -> join
      join -> done [condition="outcome!=fail"]
      join -> fixup [condition="outcome=fail && context.workspace.merge=conflict"]
      fixup -> done
      {after}
    }}
    """


def _run(tmp_path: Path, pipeline: str, writable: Path | None = None) -> tuple[Path, Path, object]:
    repo = make_repo(tmp_path / "repo", {"shared.txt": "base\n"})
    dot = write(tmp_path / "p.dot", pipeline)
    logs = tmp_path / "logs"
    args = ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r")]
    if writable is not None:  # a place outside the workspace the steps may write
        args += ["--writable", str(writable)]
    result = invoke(args)
    return repo, only_run_dir(logs), result


def test_branches_cannot_trample_each_other_and_merge_all_at_the_fan_in(tmp_path: Path) -> None:
    # Both branches write the same scratch file: in one directory the last would win.
    left = "echo left > scratch.txt && sleep 0.3 && cp scratch.txt left.txt"
    right = "echo right > scratch.txt && sleep 0.3 && cp scratch.txt right.txt && rm scratch.txt"
    repo, run_dir, result = _run(tmp_path, _fan("all", left, right))

    assert result.exit_code == 0, result.output + result.stderr
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "left.txt").read_text() == "left\n"
    assert (work_tree / "right.txt").read_text() == "right\n"
    status = read_json(run_dir / "join" / "status.json")
    assert sorted(status["merged"]) == ["left", "right"]
    branch = f"attractor/{run_dir.name}"
    kinds = git(repo, "log", "--format=%(trailers:key=Attractor-Kind,valueonly)", branch).split()
    assert kinds.count("merge") == 2
    # The branch worktrees are gone once merged; their branches keep the history.
    assert "--left" not in git(repo, "worktree", "list")
    assert git(repo, "rev-parse", "--verify", f"attractor/{run_dir.name}--left").strip()


def test_merge_selected_takes_only_the_branch_the_fan_in_chose(tmp_path: Path) -> None:
    left = "echo left > left.txt"
    right = "echo right > right.txt; exit 1"
    _, run_dir, result = _run(tmp_path, _fan("selected", left, right))
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert result.exit_code == 0, result.output + result.stderr
    assert (work_tree / "left.txt").exists() and not (work_tree / "right.txt").exists()


def test_merge_none_keeps_the_files_of_the_fan_out(tmp_path: Path) -> None:
    _, run_dir, result = _run(tmp_path, _fan("none", "echo l > l.txt", "echo r > r.txt"))
    assert result.exit_code == 0, result.stderr
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert not (work_tree / "l.txt").exists() and not (work_tree / "r.txt").exists()


def test_a_conflict_is_an_outcome_to_route_on_never_a_half_merged_tree(tmp_path: Path) -> None:
    left = "echo from-left > shared.txt && echo l > only-left.txt"
    right = "echo from-right > shared.txt"
    repo, run_dir, result = _run(tmp_path, _fan("all", left, right))

    assert result.exit_code == 0, result.output + result.stderr  # routed to fixup
    status = read_json(run_dir / "join" / "status.json")
    assert status["outcome"] == "fail" and status["conflicts"] == ["shared.txt"]
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    shared = (work_tree / "shared.txt").read_text()
    assert shared == "base\n"  # no conflict markers, no half merge
    assert not (work_tree / "only-left.txt").exists()
    assert (work_tree / "fixed.txt").exists()
    journal = (run_dir / "journal.jsonl").read_text().splitlines()
    contexts = [json.loads(line).get("context", {}) for line in journal]
    assert any(c.get("workspace.conflicts") == ["shared.txt"] for c in contexts)
    assert git(repo, "status", "--porcelain") == ""


def test_many_branches_starting_at_once_each_get_their_worktree(tmp_path: Path) -> None:
    # git writes a new worktree's admin folder in steps: worktree commands of
    # branches starting together used to read each other's half-made folders
    # ("failed to read .../commondir") and fail the fan-out.
    count = 48
    nodes = "\n".join(
        f'b{i} [shape=parallelogram, tool_command="echo {i} > f{i}.txt"]; '
        f"split -> b{i}; b{i} -> join"
        for i in range(count)
    )
    pipeline = f"""digraph many {{
      start [shape=Mdiamond]; done [shape=Msquare]
      split [shape=component, max_parallel={count}]
      join  [shape=tripleoctagon]
      start -> split
      {nodes}
      join -> done
    }}
    """
    repo, run_dir, result = _run(tmp_path, pipeline)

    assert result.exit_code == 0, result.output + result.stderr
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert sorted(p.name for p in work_tree.glob("f*.txt")) == sorted(
        f"f{i}.txt" for i in range(count)
    )
    assert "--b" not in git(repo, "worktree", "list")  # each branch's worktree removed


def test_a_branch_worktree_is_one_git_knows_on_its_own_branch(tmp_path: Path) -> None:
    # Branch worktrees are registered without `git worktree add` (many at once):
    # git inside one still sees a worktree of the repository, on the branch's own
    # branch, with a clean checkout; the agent can commit there.
    seen = tmp_path / "seen"  # outside the worktrees: their own files would show in status
    seen.mkdir()
    probe = (
        f"git symbolic-ref HEAD > {seen}/head-$B.txt "
        f"&& git status --porcelain > {seen}/status-$B.txt "
        f"&& git worktree list --porcelain > {seen}/list-$B.txt "
        "&& echo $B > $B.txt && git add $B.txt && git commit -qm $B"
    )
    left, right = (probe.replace("$B", name) for name in ("left", "right"))
    repo, run_dir, result = _run(tmp_path, _fan("all", left, right), writable=seen)

    assert result.exit_code == 0, result.output + result.stderr
    for name in ("left", "right"):
        ref = f"refs/heads/attractor/{run_dir.name}--{name}"
        assert (seen / f"head-{name}.txt").read_text().strip() == ref
        assert (seen / f"status-{name}.txt").read_text() == ""
        assert f"branch {ref}" in (seen / f"list-{name}.txt").read_text()
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "left.txt").read_text() == "left\n"
    assert (work_tree / "right.txt").read_text() == "right\n"
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 2  # repo, run


def test_each_agent_branch_is_told_its_own_worktree_and_branch(tmp_path: Path) -> None:
    # The branches' sessions start together, each in a worktree just checked out at
    # the fan-out's commit: they share one look at git, and each is still told its own.
    names = ("red", "green", "blue")
    nodes = "\n".join(f'{n} [prompt="say done"]; split -> {n}; {n} -> join' for n in names)
    pipeline = f"""digraph agents {{
      start [shape=Mdiamond]; done [shape=Msquare]
      split [shape=component]
      join  [shape=tripleoctagon]
      start -> split
      {nodes}
      join -> done
    }}
    """
    repo = make_repo(tmp_path / "repo", {"shared.txt": "base\n"})
    dot = write(tmp_path / "p.dot", pipeline)
    logs = tmp_path / "logs"
    replies = [Reply(body=openai_completion("done")) for _ in names]
    with FakeServer(replies).running() as model:
        result = invoke(
            ["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r"),
             "--backend", "llm", "--model", "gpt-4o", "--base-url", f"{model.url}/v1"]
        )  # fmt: skip
    assert result.exit_code == 0, result.output + result.stderr
    run_dir = only_run_dir(logs)
    head = git(repo, "rev-parse", f"attractor/{run_dir.name}").strip()
    told = {}
    for body in model.bodies:
        system = body["messages"][0]["content"]
        workdir = system.split("Working directory: ", 1)[1].split("\n", 1)[0]
        told[Path(workdir).name] = system
    assert sorted(told) == sorted(f"{run_dir.name}--{n}" for n in names)
    log = git(repo, "log", "--oneline", "-8", head).strip()
    for folder, system in told.items():
        assert f"Git branch: attractor/{folder}\n" in system
        assert "Git status: clean\n" in system
        assert f"Recent commits:\n{log}" in system


def test_a_branch_worktree_whose_removal_was_cut_short_is_made_again(tmp_path: Path) -> None:
    """Killed while the fan-in removed a branch's worktree (its admin folder goes first),
    a run leaves a work tree whose .git names nothing: the fan-out's next start makes
    that branch's worktree again instead of failing the run on it for good. Here the
    step after the fan-in leaves such a work tree, as the kill would, then loops back."""
    leftover = "../r--left"  # the branch's worktree, beside the run's (unsandboxed step)
    again = (
        f"mkdir -p {leftover} && echo 'gitdir: /nowhere/gone' > {leftover}/.git && "
        f"echo half > {leftover}/left.txt && exit 1"
    )
    pipeline = f"""digraph loop {{
      start [shape=Mdiamond]; done [shape=Msquare]
      split [shape=component, max_visits=2]
      left  [shape=parallelogram, tool_command="echo left >> left.txt"]
      right [shape=parallelogram, tool_command="echo right >> right.txt"]
      join  [shape=tripleoctagon]
      check [shape=parallelogram, sandbox=none,
             tool_command="test $(wc -l < left.txt) -ge 2 || ({again})"]
      start -> split -> left -> join
      split -> right -> join
      join -> check
      check -> split [condition="outcome=fail"]
      check -> done [condition="outcome=success"]
    }}
    """
    repo, run_dir, result = _run(tmp_path, pipeline)
    assert result.exit_code == 0, result.output + result.stderr  # type: ignore[attr-defined]
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "left.txt").read_text() == "left\nleft\n"  # not the leftover's
    assert not (work_tree.parent / "r--left").exists()  # removed at the fan-in, whole
