"""Prompt files from the command line: the plan names them, a run sends their text."""

from __future__ import annotations

import shutil
from pathlib import Path

from attractor.engine.run import origin_folder
from attractor.linter.prepare import prepare
from tests.cli.runkit import invoke, only_run_dir, write
from tests.linter.test_lint_prompt_files import PIPELINE


def test_dry_run_names_the_prompt_file_and_a_run_sends_its_text(workspace: Path) -> None:
    write(workspace / "p.dot", PIPELINE)
    write(workspace / "prompts" / "plan.md", "Plan: $goal\n")
    plan = invoke(["run", "p.dot", "--dry-run", "--backend", "simulate"])
    assert plan.exit_code == 0, plan.output
    assert "prompt: from prompts/plan.md (12 characters)" in plan.output
    result = invoke(["run", "p.dot", "--backend", "simulate", "--logs-dir", "runs/r"])
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / "runs")
    assert (run_dir / "plan" / "prompt.md").read_text("utf-8").startswith("Plan: build a kite")
    # The run keeps the prompt beside its copy of the pipeline: loading the
    # copy (as a resume does) reads the same text after the file is gone.
    shutil.rmtree(workspace / "prompts")
    graph, found = prepare(run_dir / "pipeline.dot")
    assert graph is not None and not [d for d in found if d.is_error]
    assert graph.node("plan").prompt == "Plan: build a kite\n"


def test_a_missing_prompt_file_stops_the_run_before_it_starts(workspace: Path) -> None:
    write(workspace / "p.dot", PIPELINE)
    result = invoke(["run", "p.dot", "--backend", "simulate", "--logs-dir", "runs/r"])
    assert result.exit_code != 0
    assert "p.dot:5:11: error prompt_file" in result.output
    assert not (workspace / "runs").exists()


def test_a_run_keeps_a_prompt_file_from_outside_the_pipeline_folder(workspace: Path) -> None:
    text = PIPELINE.replace("@prompts/plan.md", "@../shared/plan.md")
    write(workspace / "pipes" / "p.dot", text)
    write(workspace / "shared" / "plan.md", "Shared plan: $goal\n")
    result = invoke(["run", "pipes/p.dot", "--backend", "simulate", "--logs-dir", "runs/r"])
    assert result.exit_code == 0, result.output
    run_dir = only_run_dir(workspace / "runs")
    assert (run_dir / "_up" / "shared" / "plan.md").is_file()
    # A resume loads the run's copy: it reads the copy kept in the run directory.
    shutil.rmtree(workspace / "shared")
    copy = run_dir / "pipeline.dot"
    graph, found = prepare(copy, include_folder=origin_folder(copy))
    assert graph is not None and not [d for d in found if d.is_error]
    assert graph.node("plan").prompt == "Shared plan: build a kite\n"
