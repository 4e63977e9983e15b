"""The folder of each node in a run directory: named after the node, made once, found again."""

from __future__ import annotations

from pathlib import Path

from attractor.store.rundir import RunDir


def test_a_node_s_folder_is_made_on_first_use_and_found_again(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    first, created = run_dir.open_stage_dir("plan")
    assert (first, created) == (tmp_path / "plan", True) and first.is_dir()
    (first / "note.txt").write_text("kept")
    assert run_dir.open_stage_dir("plan") == (first, False)
    assert run_dir.stage_dir("plan") == first
    run_dir.open_stage_dir("build")
    # Entered again after another node: the same folder, with what it holds.
    assert run_dir.open_stage_dir("plan") == (first, False)
    assert (first / "note.txt").read_text() == "kept"


def test_a_node_s_folder_removed_since_is_made_again(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    folder, _ = run_dir.open_stage_dir("plan")
    run_dir.open_stage_dir("build")
    folder.rmdir()
    assert run_dir.open_stage_dir("plan") == (folder, True) and folder.is_dir()


def test_node_ids_become_folder_names(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    names = {
        "plan": "plan",
        "step-2.b": "step-2.b",
        "a b/c": "a_b_c",
        "._hidden_": "hidden",
        "été": "été",
        "_": "pipeline",
    }
    for node_id, name in names.items():
        assert run_dir.open_stage_dir(node_id)[0] == tmp_path / name
        assert run_dir.stage_path(node_id) == tmp_path / name
