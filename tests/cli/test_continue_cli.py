"""Continuing a finished run: --retry-failed and --from, through the CLI."""

from __future__ import annotations

from pathlib import Path

from tests.cli.runkit import invoke, lines_of, read_json, write

FLAKY = """\
digraph flaky {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    a     [shape=parallelogram, tool_command="echo a >> side.txt"]
    b     [shape=parallelogram, tool_command="echo b >> side.txt; sh check.sh"]
    c     [shape=parallelogram, tool_command="echo c >> side.txt"]
    start -> a -> b -> c -> exit
}
"""


def _mark(name: str, phase: str) -> str:
    """A tool node that records its run and sets context ``phase`` through status.json."""
    q = '\\"'  # a quote inside the DOT string
    updates = f"{q}context_updates{q}: {{{q}phase{q}: {q}{phase}{q}}}"
    status = f"{{{q}outcome{q}: {q}success{q}, {updates}}}"
    command = f"echo {name} >> side.txt; printf '%s' '{status}' > $ATTRACTOR_STAGE_DIR/status.json"
    return f'{name} [shape=parallelogram, tool_command="{command}"]'


PHASES = f"""\
digraph phases {{
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    {_mark("mark1", "one")}
    write [prompt="Write it"]
    {_mark("mark2", "two")}
    start -> mark1 -> write -> mark2 -> exit
}}
"""


def test_retry_failed_reruns_only_the_failed_node_and_goes_on(workspace: Path) -> None:
    write(workspace / "p.dot", FLAKY)
    write(workspace / "check.sh", "exit 1\n")
    assert invoke(["run", "p.dot", "--logs-dir", "runs/r"]).exit_code == 1
    refused = invoke(["resume", "runs/r"])
    assert refused.exit_code == 2 and "resume --retry-failed runs the failed node" in refused.stderr

    write(workspace / "check.sh", "exit 0\n")  # the cause is fixed
    result = invoke(["resume", "runs/r", "--retry-failed"])
    assert result.exit_code == 0, result.output
    assert "continuing the failed run at b with a fresh retry count" in result.stderr
    # a did not run again; the files went back to where b began (the failed b's
    # line is gone), with the fix made by hand applied on top.
    assert lines_of(workspace / "side.txt") == ["a", "b", "c"]
    assert "the edits made by hand are applied again" in result.stderr
    manifest = read_json(workspace / "runs" / "r" / "manifest.json")
    assert [c["how"] for c in manifest["continuations"]] == ["retry_failed"]
    assert manifest["status"] == "success"


def test_from_goes_back_to_a_node_with_the_context_it_first_had(workspace: Path) -> None:
    write(workspace / "p.dot", PHASES)
    assert invoke(["run", "p.dot", "--logs-dir", "runs/r"]).exit_code == 0
    assert read_json(workspace / "runs" / "r" / "checkpoint.json")["context"]["phase"] == "two"

    result = invoke(["resume", "runs/r", "--from", "write"])
    assert result.exit_code == 0, result.output
    # mark1 is kept, mark2 runs again on the files as they were when write was entered.
    assert lines_of(workspace / "side.txt") == ["mark1", "mark2"]
    prompt = (workspace / "runs" / "r" / "write" / "prompt.md").read_text()
    assert "phase = one" in prompt and "phase = two" not in prompt
    started = read_json(workspace / "runs" / "r" / "manifest.json")["continuations"]
    assert started[0]["how"] == "from" and started[0]["node"] == "write"


def test_a_node_that_does_not_exist_is_refused_with_a_suggestion(workspace: Path) -> None:
    write(workspace / "p.dot", PHASES)
    assert invoke(["run", "p.dot", "--logs-dir", "runs/r"]).exit_code == 0
    result = invoke(["resume", "runs/r", "--from", "wirte"])
    assert result.exit_code == 2
    assert "'wirte' is not a node of this run's pipeline; did you mean write?" in result.stderr
    retry = invoke(["resume", "runs/r", "--retry-failed"])
    assert retry.exit_code == 2 and "--retry-failed continues a failed run" in retry.stderr


LOOP = """\
digraph loop {
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    a     [shape=parallelogram, tool_command="echo a >> side.txt", max_visits=2]
    check [shape=parallelogram, tool_command="sh check.sh"]
    start -> a -> check
    check -> exit [condition="outcome=success"]
    check -> a    [condition="outcome=fail"]
}
"""


def test_retry_failed_gives_a_node_that_ran_out_of_visits_its_visits_again(
    workspace: Path,
) -> None:
    write(workspace / "p.dot", LOOP)
    write(workspace / "check.sh", "exit 1\n")
    failed = invoke(["run", "p.dot", "--logs-dir", "runs/r"])
    assert failed.exit_code == 1
    assert "entered 3 times, more than max_visits=2" in failed.output + failed.stderr
    assert lines_of(workspace / "side.txt") == ["a", "a"]

    write(workspace / "check.sh", "exit 0\n")  # the cause is fixed
    result = invoke(["resume", "runs/r", "--retry-failed"])
    assert result.exit_code == 0, result.output + result.stderr
    assert lines_of(workspace / "side.txt") == ["a", "a", "a"]


def test_retry_failed_of_a_node_that_failed_on_its_last_visit_runs_it(workspace: Path) -> None:
    once = LOOP.replace("max_visits=2", "max_visits=1").replace(
        'tool_command="echo a >> side.txt"', 'tool_command="echo a >> side.txt; sh check.sh"'
    )
    write(workspace / "p.dot", once)
    write(workspace / "check.sh", "exit 1\n")
    assert invoke(["run", "p.dot", "--logs-dir", "runs/r"]).exit_code == 1
    write(workspace / "check.sh", "exit 0\n")
    result = invoke(["resume", "runs/r", "--retry-failed"])
    assert result.exit_code == 0, result.output + result.stderr
    # The failed attempt's line went with its files (put back); the retry wrote it anew.
    assert lines_of(workspace / "side.txt") == ["a"]
    assert "entered 2 times" not in result.output
