"""``--auto-approve``: which choice it takes at a gate, and ``--auto-approve=LABEL``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.runkit import completed_stages, invoke, only_run_dir, write

#: A review loop whose first edge sends the work back: the first choice never ends it.
_REVIEW = """digraph review {{
  start [shape=Mdiamond]; done [shape=Msquare];
  work [prompt="Do the work", max_visits=3];
  review [shape=hexagon, label="Review the work"{extra}];
  start -> work -> review;
  review -> work [label="[R] Request fixes"];
  review -> done [label="[A] Approve"];
}}
"""


def _run(workspace: Path, extra: str, *flags: str) -> tuple[int, str, list[str]]:
    write(workspace / "r.dot", _REVIEW.format(extra=extra))
    result = invoke(["run", *flags, "r.dot", "--backend", "simulate", "--logs-dir", "runs/{graph}"])
    stages = completed_stages(only_run_dir(workspace / "runs")) if result.exit_code < 2 else []
    return result.exit_code, result.stderr, stages


def test_bare_auto_approve_takes_the_first_choice_as_its_help_says(workspace: Path) -> None:
    code, _, stages = _run(workspace, "", "--auto-approve")
    assert code == 1  # sent back to work until its max_visits ran out
    assert stages.count("work") == 3 and "done" not in stages
    help_text = invoke(["run", "--help"]).stdout
    assert "first choice" in help_text and "human.default_choice" in help_text
    assert "--auto-approve=LABEL" in " ".join(help_text.split())


def test_bare_auto_approve_honours_the_gates_default_choice(workspace: Path) -> None:
    code, _, stages = _run(workspace, ', human.default_choice="Approve"', "--auto-approve")
    assert code == 0 and stages.count("work") == 1 and stages[-1] == "done"


def test_a_graph_default_choice_is_every_gates_default(workspace: Path) -> None:
    write(
        workspace / "r.dot",
        _REVIEW.format(extra="").replace(
            "digraph review {", 'digraph review {\n  graph [human.default_choice="Approve"];'
        ),
    )
    lint = invoke(["lint", "--strict", "r.dot"])
    assert lint.exit_code == 0, lint.stdout + lint.stderr  # a graph attribute, as documented
    result = invoke(["run", "--auto-approve", "r.dot", "--backend", "simulate", "--logs-dir", "g"])
    assert result.exit_code == 0, result.stderr
    stages = completed_stages(workspace / "g")
    assert stages.count("work") == 1 and stages[-1] == "done"


@pytest.mark.parametrize("label", ["Approve", "a", "[A] Approve"])
def test_auto_approve_label_takes_that_choice(workspace: Path, label: str) -> None:
    code, err, stages = _run(workspace, "", f"--auto-approve={label}")
    assert code == 0, err
    assert stages.count("work") == 1 and stages[-1] == "done"


def test_auto_approve_label_wins_over_the_default_choice(workspace: Path) -> None:
    extra = ', human.default_choice="Request fixes"'
    code, _, stages = _run(workspace, extra, "--auto-approve=Approve")
    assert code == 0 and stages.count("work") == 1


def test_auto_approve_label_no_gate_offers_is_one_line_exit_2(workspace: Path) -> None:
    code, err, _ = _run(workspace, "", "--auto-approve=Ship it")
    assert code == 2
    assert err == (
        "error: --auto-approve=Ship it: no human gate offers that choice; "
        "the choices are '[R] Request fixes', '[A] Approve'\n"
    )
    assert not (workspace / "runs").exists()


def test_auto_approve_label_excludes_answers(workspace: Path) -> None:
    write(workspace / "answers.txt", "A\n")
    code, err, _ = _run(workspace, "", "--auto-approve=A", "--answers", "answers.txt")
    assert code == 2 and "--auto-approve and --answers cannot be used together" in err


def test_a_choice_written_apart_from_auto_approve_gets_the_way_to_write_it(
    workspace: Path,
) -> None:
    write(
        workspace / "p.dot",
        "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; start -> done }",
    )
    result = invoke(["run", "p.dot", "--auto-approve", "Approve"])
    assert result.exit_code == 2
    assert "to take the choice Approve at every gate: --auto-approve=Approve" in result.stderr


def test_no_choice_is_suggested_from_a_word_that_is_not_after_auto_approve(
    workspace: Path,
) -> None:
    dot = "digraph p { start [shape=Mdiamond]; done [shape=Msquare]; start -> done }"
    write(workspace / "p.dot", dot)
    result = invoke(["run", "p.dot", "oops", "--auto-approve"])
    assert result.exit_code == 2
    assert "unexpected extra argument (oops)" in result.stderr
    assert "--auto-approve=oops" not in result.stderr
