"""Sub-pipelines (``shape=folder``/``type=subgraph`` with ``dot_file``) through the real CLI."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.runkit import (
    finish,
    invoke,
    lines_of,
    only_run_dir,
    read_json,
    sleep_mark,
    spawn,
    started_stages,
    wait_for,
    write,
)


@pytest.fixture
def mark() -> Iterator[str]:
    with sleep_mark(31) as word:
        yield word


PARENT = """digraph parent {{
    start [shape=Mdiamond]
    done  [shape=Msquare]
    before [shape=parallelogram, tool_command="echo before >> side.txt"]
    checks [{how}]
    after [shape=parallelogram, tool_command="echo after >> side.txt"]
    wrong [shape=parallelogram, tool_command="echo wrong >> side.txt; exit 3"]
    start -> before -> checks
    checks -> after [condition="outcome=success && context.tool.output=from-child"]
    checks -> wrong
    after -> done
    wrong -> done
}}
"""

CHILD = """digraph child {{
    start [shape=Mdiamond]
    done  [shape=Msquare]
    who [shape=diamond]
    a [shape=parallelogram, tool_command="echo a >> side.txt"]
    b [shape=parallelogram, tool_command="{wait}"]
    c [shape=parallelogram, tool_command="printf from-child"]
    stranger [shape=parallelogram, tool_command="exit 1"]
    start -> who
    who -> a [condition="context.who=ann"]
    who -> stranger
    a -> b -> c -> done
    stranger -> done
}}
"""


def _files(
    workspace: Path, how: str = 'shape=folder, dot_file="sub/child.dot"', wait: str = "true"
) -> None:
    write(workspace / "p.dot", PARENT.format(how=how))
    write(workspace / "sub" / "child.dot", CHILD.format(wait=wait))


@pytest.mark.parametrize(
    "how",
    [
        'shape=folder, dot_file="sub/child.dot"',
        'type=subgraph, graph="sub/child.dot"',
        'type="sub_pipeline", sub_pipeline="sub/child.dot"',
    ],
)
def test_a_sub_pipeline_runs_inline_with_the_context_in_and_out(workspace: Path, how: str) -> None:
    _files(workspace, how)
    result = invoke(["run", "p.dot", "--logs-dir", "runs/{graph}", "--set", "who=ann", "--quiet"])
    assert result.exit_code == 0, result.output
    # The child saw the parent's `who` and its last tool output came back.
    assert lines_of(workspace / "side.txt") == ["before", "a", "after"]
    run_dir = only_run_dir(workspace / "runs")
    child = run_dir / "checks" / "child"
    assert read_json(child / "manifest.json")["status"] == "success"
    assert {"a", "b", "c"} <= {p.name for p in child.iterdir()}
    assert started_stages(run_dir) == ["start", "before", "checks", "after", "done"]


def test_a_failing_sub_pipeline_fails_its_node_with_the_child_reason(workspace: Path) -> None:
    _files(workspace)
    result = invoke(["run", "p.dot", "--logs-dir", "runs/{graph}", "--set", "who=bob"])
    # The child fails at `stranger`; nothing routes the failure of `checks`.
    assert result.exit_code == 1, result.output
    assert lines_of(workspace / "side.txt") == ["before"]
    assert "checks failed: sub-pipeline sub/child.dot failed: stranger failed" in result.stdout
    status = read_json(only_run_dir(workspace / "runs") / "checks" / "status.json")
    assert status["outcome"] == "fail"


def test_a_run_stopped_inside_a_sub_pipeline_resumes_inside_it(workspace: Path, mark: str) -> None:
    _files(workspace, wait=f"[ -f go ] || sleep {mark}")
    result = invoke(
        ["run", "p.dot", "--logs-dir", "runs/{graph}", "--set", "who=ann", "--timeout", "1s"]
    )
    assert result.exit_code == 124, result.output
    run_dir = only_run_dir(workspace / "runs")
    child = run_dir / "checks" / "child"
    assert (
        read_json(child / "manifest.json")["status"] == "interrupted"
    )  # stopped from outside: resumable
    write(workspace / "go", "")
    resumed = invoke(["resume", str(run_dir), "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    # Neither `before` nor the child's `a` ran twice; the child went on from `b`.
    assert lines_of(workspace / "side.txt") == ["before", "a", "after"]
    assert read_json(child / "manifest.json")["status"] == "success"
    assert started_stages(child).count("a") == 1


def _killed_in_the_child(workspace: Path, mark: str) -> Path:
    """A run killed while its child's stage b runs, that b would finish now; the child's folder."""
    _files(workspace, wait=f"[ -f go ] || sleep {mark}")
    proc = spawn(["run", "p.dot", "--logs-dir", "runs/{graph}", "--set", "who=ann"], workspace)
    child = workspace / "runs" / "parent" / "checks" / "child"
    try:
        wait_for(lambda: "b" in _started(child), "the child's stage b to start")
    finally:
        proc.send_signal(signal.SIGKILL)
        finish(proc)
    write(workspace / "go", "")
    return child


def test_a_run_killed_inside_a_sub_pipeline_resumes_inside_it(workspace: Path, mark: str) -> None:
    child = _killed_in_the_child(workspace, mark)
    resumed = invoke(["resume", str(workspace / "runs" / "parent"), "--quiet"])
    assert resumed.exit_code == 0, resumed.output
    assert lines_of(workspace / "side.txt") == ["before", "a", "after"]
    assert started_stages(child).count("a") == 1


def _started(run_dir: Path) -> list[str]:
    return started_stages(run_dir) if (run_dir / "events.jsonl").exists() else []


def test_lint_shows_the_child_errors_at_the_child_file_and_line(workspace: Path) -> None:
    _files(workspace)
    write(
        workspace / "sub" / "child.dot",
        "digraph c {\n  start [shape=Mdiamond]\n  x [shape=blob]\n  start -> x\n}\n",
    )
    result = invoke(["lint", "p.dot"])
    assert result.exit_code == 1, result.output
    assert "sub/child.dot:3:" in result.stdout
    assert "included by checks of p.dot" in result.stdout


def test_the_child_counts_its_steps_against_the_parent_step_budget(workspace: Path) -> None:
    _files(workspace)
    # start, before, checks in the parent, then the child's start, who, a, b: 7 steps.
    result = invoke(
        ["run", "p.dot", "--logs-dir", "runs/{graph}", "--set", "who=ann", "--max-steps", "6"]
    )
    assert result.exit_code == 1, result.output
    assert "run step budget exhausted: 6 of 6 steps taken before b" in result.stdout
    assert lines_of(workspace / "side.txt") == ["before", "a"]


def test_the_dry_run_shows_the_sub_pipeline_expanded_under_its_node(workspace: Path) -> None:
    _files(workspace)
    result = invoke(["run", "p.dot", "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index("3. checks [subgraph]")
    assert lines[at + 1] == f"   runs inline: {workspace / 'sub' / 'child.dot'}"
    inner = [line for line in lines[at:] if line.startswith("   | ")]
    assert inner[0] == "   | sub-pipeline child"
    assert "   | 3. a [tool]" in inner and "   |    -> a when context.who=ann" in inner


def test_graph_draws_the_sub_pipeline_in_a_box_beside_its_node(workspace: Path) -> None:
    import xml.etree.ElementTree as ET

    _files(workspace)
    result = invoke(["graph", "p.dot"])
    assert result.exit_code == 0, result.stderr
    svg = "{http://www.w3.org/2000/svg}"
    ids = {g.attrib.get("id", "") for g in ET.fromstring(result.stdout).iter(f"{svg}g")}
    assert {"node-checks", "node-checks/start", "node-checks/a", "node-checks/done"} <= ids
    assert "edge-checks/a-b" in ids
    texts = [t.text for t in ET.fromstring(result.stdout).iter(f"{svg}text")]
    assert "checks: sub/child.dot" in texts and "runs" in texts


def test_the_parents_display_and_logs_show_the_childs_stages(workspace: Path) -> None:
    _files(workspace, wait="echo inside-b")
    result = invoke(["run", "p.dot", "--logs-dir", "runs/{graph}", "--set", "who=ann"])
    assert result.exit_code == 0, result.output
    shown = result.stdout.splitlines()
    # The child's stage lines, named NODE/CHILD, before the sub-pipeline node's own.
    done = [line.split()[1] for line in shown if line.startswith("ok ")]
    assert done[done.index("before") + 1 :][:6] == [
        "checks/start",
        "checks/who",
        "checks/a",
        "checks/b",
        "checks/c",
        "checks/done",
    ]
    assert done[done.index("checks/done") + 1] == "checks"
    run_dir = only_run_dir(workspace / "runs")
    logs = invoke(["logs", str(run_dir), "checks"])
    assert logs.exit_code == 0, logs.stderr
    lines = logs.stdout.splitlines()
    b = lines.index("==> checks/b (tool), visit 1, attempt 1")
    assert lines[b + 1] == "inside-b"
    assert lines[b + 2].startswith("<== checks/b: success in ")
    c = lines.index("==> checks/c (tool), visit 1, attempt 1")
    assert lines[c + 1] == "from-child"
    # One step of the child on its own.
    one = invoke(["logs", str(run_dir), "checks/c"]).stdout.splitlines()
    assert one[:2] == ["==> checks/c (tool), visit 1, attempt 1", "from-child"]
    assert not any(line.startswith("==> checks/b") for line in one)
    refused = invoke(["logs", str(run_dir), "before/c"])
    assert refused.exit_code == 2
    assert "before is not a sub-pipeline" in refused.stderr
    typo = invoke(["logs", str(run_dir), "checks/cc"])
    assert typo.exit_code == 2 and typo.stdout == ""
    assert typo.stderr.startswith(
        f"error: {run_dir}: the sub-pipeline of checks has no node 'cc'; did you mean 'c'? "
    )


def test_a_resumed_parent_counts_the_childs_earlier_steps(workspace: Path, mark: str) -> None:
    _killed_in_the_child(workspace, mark)
    # As in one run: start, before, checks, then the child's start, who, a (recorded
    # before the kill) make 6; the child's b would be the 7th (uncounted: "before after").
    resumed = invoke(["resume", str(workspace / "runs" / "parent"), "--max-steps", "6"])
    assert resumed.exit_code == 1, resumed.output
    assert "run step budget exhausted: 6 of 6 steps taken before b" in resumed.stdout


def test_graph_of_sub_pipelines_that_fan_out_holds_a_bounded_number_of_nodes(
    workspace: Path,
) -> None:
    """Six small files, each running the next four times over, would be 4**5 boxes and
    thousands of nodes (a step may write such files): the picture stops at its limit
    and says what it left out."""
    import xml.etree.ElementTree as ET

    from attractor.render import MAX_CHILD_NODES

    for level in range(6):
        runs = "".join(
            f'  s{i} [type=sub_pipeline, dot_file="l{level + 1}.dot"]\n  start -> s{i} -> done\n'
            for i in range(4)
        )
        body = runs if level < 5 else "  start -> done\n"
        write(
            workspace / f"l{level}.dot",
            f"digraph l{level} {{\n  start [shape=Mdiamond]; done [shape=Msquare]\n{body}}}\n",
        )
    result = invoke(["graph", "l0.dot"])
    assert result.exit_code == 0, result.stderr
    svg = "{http://www.w3.org/2000/svg}"
    tree = ET.fromstring(result.stdout)
    drawn = [g for g in tree.iter(f"{svg}g") if "node" in g.attrib.get("class", "").split()]
    assert len(drawn) <= 6 + MAX_CHILD_NODES + 1  # the file's own, the children's, the note
    notes = [t.text for t in tree.iter(f"{svg}text") if "not drawn" in (t.text or "")]
    assert notes == [f"not drawn: more sub-pipeline nodes than a picture holds ({MAX_CHILD_NODES})"]
