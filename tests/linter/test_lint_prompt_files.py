"""``prompt="@FILE"`` reads the prompt from a file beside the pipeline."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attractor.dot.prompts import snapshot_path
from attractor.linter.prepare import prepare
from tests.linter.lintkit import by_rule

PIPELINE = """digraph P {
    goal="build a kite"
    start [shape=Mdiamond]
    done  [shape=Msquare]
    plan [prompt="@prompts/plan.md"]
    start -> plan -> done
}
"""


def write_file(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _pipeline_in(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return _pipeline(folder, text)


def _pipeline(folder: Path, text: str = PIPELINE) -> Path:
    path = folder / "p.dot"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_prompt_is_the_file_text_with_goal_expanded(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "plan.md").write_text("Plan: $goal\nthen stop.\n", "utf-8")
    graph, found = prepare(_pipeline(tmp_path))
    assert graph is not None and not [d for d in found if d.is_error]
    assert graph.node("plan").prompt == "Plan: build a kite\nthen stop.\n"
    assert graph.prompt_files["plan"].path == "prompts/plan.md"


def test_a_missing_prompt_file_is_an_error_at_the_prompt(tmp_path: Path) -> None:
    path = _pipeline(tmp_path)
    graph, found = prepare(path, file="p.dot")
    (error,) = by_rule(found, "prompt_file")
    assert (error.severity, error.file, error.line, error.column) == ("error", "p.dot", 5, 11)
    assert '"prompts/plan.md"' in error.message and "No such file" in error.message
    assert graph is not None and graph.node("plan").prompt == "@prompts/plan.md"


def test_a_prompt_file_outside_the_pipeline_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("not a prompt", "utf-8")
    folder = tmp_path / "pipes"
    folder.mkdir()
    (folder / "prompts").mkdir()
    os.symlink(tmp_path / "secret.md", folder / "prompts" / "plan.md")
    _, found = prepare(_pipeline(folder))
    (error,) = by_rule(found, "prompt_file")
    assert "outside" in error.message
    assert error.fix == "keep prompt files inside the pipeline's folder or the working directory"


def test_a_prompt_file_elsewhere_in_the_project_is_read_as_a_sub_pipeline_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    write_file(project / "other" / "prompts" / "x.md", "Shared: $goal")
    write_file(project / "prompts" / "root.md", "From the root")
    text = PIPELINE.replace("@prompts/plan.md", "@../other/prompts/x.md").replace(
        "start -> plan", 'r [prompt="@prompts/root.md"]\n    start -> r -> plan'
    )
    path = _pipeline_in(project / "pipelines", text)
    monkeypatch.chdir(project)  # the project's root, where its users run it
    graph, found = prepare(path)
    assert graph is not None and not [d for d in found if d.is_error]
    assert graph.node("plan").prompt == "Shared: build a kite"
    assert graph.node("r").prompt == "From the root"  # a path from the project's root


def test_a_prompt_file_above_both_roots_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    write_file(tmp_path / "secret.md", "not a prompt")
    path = _pipeline_in(
        project / "pipelines", PIPELINE.replace("prompts/plan.md", "../../secret.md")
    )
    monkeypatch.chdir(project)
    _, found = prepare(path)
    (error,) = by_rule(found, "prompt_file")
    assert "outside the places a run may read" in error.message


def test_snapshot_path_keeps_every_copy_inside_the_run_directory() -> None:
    assert snapshot_path("prompts/plan.md") == "prompts/plan.md"
    assert snapshot_path("../other/x.md") == os.path.join("_up", "other", "x.md")
    assert snapshot_path("a/../../x.md") == os.path.join("_up", "x.md")
    assert snapshot_path("/etc/passwd") is None
    assert snapshot_path("..") is None


def test_a_directory_is_no_prompt_file(tmp_path: Path) -> None:
    (tmp_path / "prompts" / "plan.md").mkdir(parents=True)
    _, found = prepare(_pipeline(tmp_path))
    assert len(by_rule(found, "prompt_file")) == 1


def test_prompt_file_attribute_is_an_alias(tmp_path: Path) -> None:
    (tmp_path / "plan.md").write_text("Plan it", "utf-8")
    text = PIPELINE.replace('prompt="@prompts/plan.md"', 'prompt_file="plan.md"')
    graph, found = prepare(_pipeline(tmp_path, text))
    assert graph is not None and graph.node("plan").prompt == "Plan it"
    assert [d.severity for d in by_rule(found, "alias")] == ["style"]


def test_a_pipeline_given_as_text_cannot_name_a_prompt_file() -> None:
    _, found = prepare(PIPELINE, file="<string>")
    (error,) = by_rule(found, "prompt_file")
    assert "given as text" in error.message


def test_a_tool_command_naming_a_file_is_an_error(tmp_path: Path) -> None:
    text = PIPELINE.replace(
        'plan [prompt="@prompts/plan.md"]', 'plan [shape=parallelogram, tool_command="@check.sh"]'
    )
    _, found = prepare(_pipeline(tmp_path, text))
    (error,) = by_rule(found, "prompt_file")
    assert error.fix == 'write tool_command="sh check.sh"'
