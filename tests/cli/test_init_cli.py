"""``attractor init``: starter pipelines that lint clean and run offline."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from attractor.cli.init_cmd import TEMPLATES
from tests.cli.runkit import invoke, only_run_dir, read_json


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_each_template_lints_clean_and_runs_with_simulate(workspace: Path, name: str) -> None:
    made = invoke(["init", name])
    assert made.exit_code == 0, made.output
    file = TEMPLATES[name][0]
    assert made.stdout.startswith(f"wrote {file} ({name}:")
    text = (workspace / file).read_text("utf-8")
    assert text.startswith("// Starter pipeline")  # commented for a first reader
    lint = invoke(["lint", "--strict", file])
    assert lint.exit_code == 0 and lint.stdout == "no problems found in 1 file\n"
    ran = invoke(["run", file, "--backend", "simulate", "--auto-approve", "--logs-dir", "r/x"])
    assert ran.exit_code == 0, ran.output
    manifest = read_json(only_run_dir(workspace / "r") / "manifest.json")
    assert manifest["status"] == "success" and manifest["simulated"]["tools"] is True
    # Only the pipeline and the run directory: simulate ran no tool command.
    assert sorted(p.name for p in workspace.iterdir()) == sorted([file, "r"])


def test_init_names_the_file_and_refuses_to_overwrite(workspace: Path) -> None:
    assert invoke(["init", "ci", "build/ci.dot"]).exit_code == 0  # build/ is created
    (workspace / "file").write_text("")
    blocked = invoke(["init", "ci", "file/ci.dot"])
    assert blocked.exit_code == 2 and "cannot create file" in blocked.stderr
    again = invoke(["init", "ci", "build/ci.dot"])
    assert again.exit_code == 2 and "exists; pass --force" in again.stderr
    assert invoke(["init", "review", "build/ci.dot", "--force"]).exit_code == 0
    assert "component" in (workspace / "build" / "ci.dot").read_text("utf-8")


def test_init_with_only_a_file_uses_the_coding_template(workspace: Path) -> None:
    assert invoke(["init", "mine.dot"]).exit_code == 0
    assert "hexagon" in (workspace / "mine.dot").read_text("utf-8")


def test_unknown_template_lists_the_known_ones(workspace: Path) -> None:
    result = invoke(["init", "nope"])
    assert result.exit_code == 2 and "coding, review, ci" in result.stderr
    listed = invoke(["init", "--list"])
    assert [line.split()[0] for line in listed.stdout.splitlines()] == list(TEMPLATES)


def test_init_writes_the_pipeline_with_the_umask_and_force_keeps_the_mode(
    workspace: Path,
) -> None:
    old = os.umask(0o022)
    try:
        assert invoke(["init", "ci", "a.dot"]).exit_code == 0
        assert stat.S_IMODE((workspace / "a.dot").stat().st_mode) == 0o644
        os.umask(0o027)
        assert invoke(["init", "ci", "b.dot"]).exit_code == 0
        assert stat.S_IMODE((workspace / "b.dot").stat().st_mode) == 0o640
        (workspace / "a.dot").chmod(0o664)  # the user's choice survives --force
        assert invoke(["init", "review", "a.dot", "--force"]).exit_code == 0
        assert stat.S_IMODE((workspace / "a.dot").stat().st_mode) == 0o664
        assert "component" in (workspace / "a.dot").read_text("utf-8")
    finally:
        os.umask(old)


def test_init_onto_a_directory_or_an_unwritable_place_is_one_line_exit_2(
    workspace: Path,
) -> None:
    (workspace / "d.dot").mkdir()
    for args in (["init", "d.dot", "--force"], ["init", "d.dot"], ["init", "/proc/x.dot"]):
        result = invoke(args)
        assert result.exit_code == 2, (args, result.output)
        assert len(result.stderr.splitlines()) == 1 and result.stderr.startswith("error: ")
    assert "d.dot is a directory" in invoke(["init", "d.dot", "--force"]).stderr
    assert "cannot write /proc/x.dot" in invoke(["init", "/proc/x.dot"]).stderr
    assert list((workspace / "d.dot").iterdir()) == []
