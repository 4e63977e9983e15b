"""A continuation (``resume --from``, ``--retry-failed``) is on disk before the workspace
moves back to where it continues: a kill during that move leaves a run that a plain
resume goes on with, never one that still reads as finished."""

from __future__ import annotations

from pathlib import Path

import pytest

from attractor.engine.continuation import Continuation
from attractor.engine.run import prepare_run_graph
from attractor.engine.setup import resume_setup
from attractor.store.rundir import RunDir
from tests.engine.enginekit import checkpoint_json, executed, graph_of, options, resume, run

pytestmark = pytest.mark.anyio


async def test_a_continuation_is_saved_before_anything_moves(tmp_path: Path) -> None:
    graph = graph_of(
        'a [shape=parallelogram, tool_command="echo a"]\n'
        'b [shape=parallelogram, tool_command="echo b"]\n'
        "start -> a -> b -> done\n"
    )
    finished = await run(graph, tmp_path)
    assert finished.status == "success"
    settings = options(tmp_path).settings
    how = Continuation(from_node="b")

    setup = resume_setup(finished.run_dir, settings, prepare_run_graph, {}, how, store=RunDir)
    setup.run_dir.unlock()  # as a kill right after the set-up leaves it (the lock is gone)

    saved = checkpoint_json(finished.run_dir)
    assert (saved["status"], saved["next_node"]) == ("running", "b")
    resumed = await resume(finished.run_dir, tmp_path)  # a plain resume: no --from
    assert resumed.status == "success"
    assert executed(resumed)[-2:] == ["b", "done"] and executed(resumed).count("a") == 1
