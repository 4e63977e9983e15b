"""``attractor fork`` and ``attractor diff`` on real repositories (items 3 and 4)."""

from __future__ import annotations

import json
import os
import secrets
from pathlib import Path

from tests.cli.runkit import invoke, only_run_dir, read_json, write
from tests.workspace.gitkit import git, make_repo

PIPELINE = """digraph p {
  start [shape=Mdiamond]; done [shape=Msquare]
  a [shape=parallelogram, tool_command="echo a >> log.txt"]
  b [shape=parallelogram, tool_command="echo b >> log.txt && echo new > b.txt"]
  c [shape=parallelogram, tool_command="echo c >> log.txt"]
  start -> a -> b -> c -> done
}
"""


def _finished_run(tmp_path: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "repo")
    dot = write(tmp_path / "p.dot", PIPELINE)
    logs = tmp_path / "logs"
    result = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r")])
    assert result.exit_code == 0, result.stderr
    return repo, only_run_dir(logs)


def test_fork_starts_a_new_run_at_the_node_and_leaves_the_original_alone(tmp_path: Path) -> None:
    repo, run_dir = _finished_run(tmp_path)
    original = read_json(run_dir / "manifest.json")["workspace"]
    tip = git(repo, "rev-parse", original["branch"]).strip()
    files_before = sorted(p.name for p in run_dir.iterdir())
    fork_dir = tmp_path / "fork"

    result = invoke(["fork", str(run_dir), "--from", "b", "--logs-dir", str(fork_dir)])

    assert result.exit_code == 0, result.output + result.stderr
    assert "the fork starts at b, as the run was when b was first entered" in result.stderr
    forked = read_json(fork_dir / "manifest.json")
    assert forked["forked_from"] == {"run_dir": str(run_dir.resolve()), "node": "b"}
    branch = forked["workspace"]["branch"]
    assert branch == "attractor/fork" and branch != original["branch"]
    fork_tree = Path(forked["workspace"]["work_tree"])
    assert fork_tree != Path(original["work_tree"])
    # The fork's files started where b was first entered: a's line only, then b and c ran.
    assert (fork_tree / "log.txt").read_text() == "a\nb\nc\n"
    commits = git(repo, "log", "--format=%(trailers:key=Attractor-Node,valueonly)", branch)
    assert [c for c in commits.split() if c][:2] == ["c", "b"]
    # The original run, its branch and its worktree are untouched.
    assert git(repo, "rev-parse", original["branch"]).strip() == tip
    assert (Path(original["work_tree"]) / "log.txt").read_text() == "a\nb\nc\n"
    assert sorted(p.name for p in run_dir.iterdir()) == files_before
    assert "continuations" not in read_json(run_dir / "manifest.json")


def test_fork_from_a_node_the_run_never_entered_is_refused_and_copies_nothing(
    tmp_path: Path,
) -> None:
    _, run_dir = _finished_run(tmp_path)
    result = invoke(["fork", str(run_dir), "--from", "zz", "--logs-dir", str(tmp_path / "f")])
    assert result.exit_code == 2
    assert "'zz' is not a node of this run's pipeline" in result.stderr
    assert not (tmp_path / "f").exists()


def test_diff_prints_what_one_stage_or_the_whole_run_changed(tmp_path: Path) -> None:
    _, run_dir = _finished_run(tmp_path)

    stage = invoke(["diff", str(run_dir), "b"])
    whole = invoke(["diff", str(run_dir)])
    stat = invoke(["diff", str(run_dir), "b", "--stat"])
    nothing = invoke(["diff", str(run_dir), "start"])

    assert stage.exit_code == 0, stage.stderr
    assert "+++ b/b.txt" in stage.output and "+new" in stage.output
    assert "+b" in stage.output and "+a" not in stage.output and "+c" not in stage.output
    assert "+a" in whole.output and "+c" in whole.output
    assert "b.txt" in stat.output and "2 files changed" in stat.output
    assert nothing.exit_code == 0 and nothing.output == ""
    typo = invoke(["diff", str(run_dir), "bb"])
    assert typo.exit_code == 2
    assert typo.stderr.startswith(
        f"error: {run_dir}: the run's pipeline has no node 'bb'; did you mean 'b'? its nodes: "
    )


def test_diff_never_shows_a_secret_a_stage_wrote_to_a_file(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    leak = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      w [shape=parallelogram, env=inherit, tool_command="printenv OPENAI_API_KEY > leak.txt"]
      start -> w -> done
    }"""
    dot = write(tmp_path / "p.dot", leak)
    key = {"OPENAI_API_KEY": "sk-test-" + secrets.token_hex(16)}
    logs = tmp_path / "logs"
    ran = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r")], key)
    assert ran.exit_code == 0, ran.stderr
    run_dir = only_run_dir(logs)
    # The file itself holds the key (the stage wrote it; the run's own files do not).
    work_tree = Path(read_json(run_dir / "manifest.json")["workspace"]["work_tree"])
    assert (work_tree / "leak.txt").read_text().strip() == key["OPENAI_API_KEY"]

    for args in ([], ["w"]):
        shown = invoke(["diff", str(run_dir), *args], key)
        assert shown.exit_code == 0, shown.stderr
        assert "+++ b/leak.txt" in shown.output
        assert "+[redacted:OPENAI_API_KEY]" in shown.output
        assert key["OPENAI_API_KEY"] not in shown.output


def test_diff_of_a_run_without_workspace_says_why(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    dot = write(tmp_path / "p.dot", PIPELINE)
    logs = tmp_path / "logs"
    invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs / "r"),
            "--workspace", "none"])  # fmt: skip
    result = invoke(["diff", str(only_run_dir(logs))])
    assert result.exit_code == 2
    assert "kept no checkpoints of its files (--workspace none)" in result.stderr


def test_status_shows_the_files_each_stage_changed(tmp_path: Path) -> None:
    _, run_dir = _finished_run(tmp_path)
    result = invoke(["status", str(run_dir)])
    assert result.exit_code == 0, result.stderr
    rows = {line.split()[0]: line for line in result.output.splitlines() if line.split()}
    assert "2 files" in rows["b"] and "1 file" in rows["a"]
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    assert json.loads(lines[2])["files"] == 2


def test_the_usage_line_of_diff_shows_node_is_optional() -> None:
    usage = invoke(["diff", "--help"]).stdout.splitlines()[0]
    assert usage.endswith(" diff [OPTIONS] RUN_DIR [NODE]")


def test_fork_of_a_snapshot_run_starts_from_the_node_without_redoing_later_stages(
    tmp_path: Path,
) -> None:
    plain = tmp_path / "plain"  # no git repository: a snapshot workspace
    plain.mkdir()
    pipeline = """digraph p {
      start [shape=Mdiamond]; done [shape=Msquare]
      a [shape=parallelogram, tool_command="echo a >> log.txt"]
      b [shape=parallelogram, tool_command="echo b >> log.txt"]
      start -> a -> b -> done
    }
    """
    dot = write(tmp_path / "p.dot", pipeline)
    run_dir = tmp_path / "logs" / "r"
    ran = invoke(["run", str(dot), "--workdir", str(plain), "--logs-dir", str(run_dir)])
    assert ran.exit_code == 0, ran.stderr
    assert read_json(run_dir / "manifest.json")["workspace"]["mode"] == "snapshot"

    result = invoke(["fork", str(run_dir), "--from", "b", "--logs-dir", str(tmp_path / "f")])

    assert result.exit_code == 0, result.output + result.stderr
    assert (plain / "log.txt").read_text() == "a\nb\n"  # not a b b
    assert "edits made by hand" not in result.stderr  # b's own line is not one
    assert not (plain / ".git").exists()


def test_fork_of_a_snapshot_run_keeps_edits_made_by_hand_after_it(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    dot = write(tmp_path / "p.dot", PIPELINE)
    run_dir = tmp_path / "logs" / "r"
    ran = invoke(["run", str(dot), "--workdir", str(plain), "--logs-dir", str(run_dir)])
    assert ran.exit_code == 0, ran.stderr
    (plain / "mine.txt").write_text("by hand\n")

    result = invoke(["fork", str(run_dir), "--from", "c", "--logs-dir", str(tmp_path / "f")])

    assert result.exit_code == 0, result.output + result.stderr
    assert "saved the edits made by hand" in result.stderr
    assert (plain / "mine.txt").read_text() == "by hand\n"
    assert (plain / "log.txt").read_text() == "a\nb\nc\n"


def test_a_forks_history_is_the_originals_only_up_to_the_node(tmp_path: Path) -> None:
    """What the original did from the node on is not the fork's: its rows, events and
    folders hold the stages before the node, then the fork's own."""
    _, run_dir = _finished_run(tmp_path)
    fork_dir = tmp_path / "fork"

    result = invoke(["fork", str(run_dir), "--from", "b", "--logs-dir", str(fork_dir)])

    assert result.exit_code == 0, result.output + result.stderr
    rows = _nodes_of(fork_dir / "results.jsonl")
    assert rows == ["start", "a", "b", "c", "done"]
    lines = (fork_dir / "events.jsonl").read_text().splitlines()
    started = [e["name"] for e in map(json.loads, lines) if e["type"] == "stage_started"]
    assert started == ["start", "a", "b", "c", "done"]
    assert not (fork_dir / "b" / "v1-a1").exists()  # the original's b is not an attempt here
    status = invoke(["status", str(fork_dir), "--json"])
    assert status.exit_code == 0, status.stderr
    assert [a["node"] for a in json.loads(status.output)["timeline"]] == rows
    # A second fork of the fork goes back through the fork's own history.
    again = invoke(["fork", str(fork_dir), "--from", "c", "--logs-dir", str(tmp_path / "f2")])
    assert again.exit_code == 0, again.output + again.stderr
    rows = _nodes_of(tmp_path / "f2" / "results.jsonl")
    assert rows == ["start", "a", "b", "c", "done"]


def _nodes_of(results: Path) -> list[str]:
    return [json.loads(line)["node"] for line in results.read_text().splitlines()]


def test_a_fork_of_a_damaged_run_is_one_line_and_makes_nothing(tmp_path: Path) -> None:
    _, run_dir = _finished_run(tmp_path)
    (run_dir / "events.jsonl").unlink()
    os.mkfifo(run_dir / "events.jsonl")  # a reader that opened it plainly would wait forever
    fork_dir = tmp_path / "fork"

    result = invoke(["fork", str(run_dir), "--from", "b", "--logs-dir", str(fork_dir)])

    assert result.exit_code == 2
    assert "events.jsonl: cannot read: a FIFO" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    assert not fork_dir.exists()


def test_a_fork_whose_workspace_setup_fails_leaves_no_worktree_or_branch(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    dot = write(tmp_path / "p.dot", PIPELINE)
    logs = tmp_path / "logs"
    # Set-up that passes in a fresh worktree and fails in one that holds a's output.
    setup = ["--workspace-setup", "test ! -e log.txt"]
    ran = invoke(["run", str(dot), "--workdir", str(repo), "--logs-dir", str(logs), *setup])
    assert ran.exit_code == 0, ran.stderr
    before = git(repo, "branch", "--list", "attractor/*")

    result = invoke(["fork", str(logs), "--from", "b", "--logs-dir", str(tmp_path / "fork")])

    assert result.exit_code != 0
    assert "workspace_setup 'test ! -e log.txt' failed" in result.stderr
    assert git(repo, "branch", "--list", "attractor/*") == before  # no branch of the fork's
    assert "attractor/fork" not in git(repo, "worktree", "list")
    # The registry of runs names the first run alone.
    assert len(list((repo / ".git" / "attractor" / "runs").iterdir())) == 1
