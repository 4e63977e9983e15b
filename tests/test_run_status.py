"""One status type for runs and checkpoints, written to disk as the same words as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attractor.launch import launch, plan_run
from attractor.run_status import (
    ENDED,
    RESUMABLE,
    STOPPED,
    RunStatus,
    SeenStatus,
    listed_status,
    run_status,
)
from attractor.runview.listing import LISTED_STATUSES, run_info

#: Fails on its first pass (and leaves a mark), so the loop_restart edge starts it over.
RESTARTS = """digraph again {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    try   [shape=parallelogram, max_visits=3,
           tool_command="test -f mark || { touch mark; exit 1; }"]
    start -> try
    try -> done [condition="outcome=success"]
    try -> try [condition="outcome=fail", loop_restart=true]
}
"""


@pytest.mark.anyio
async def test_a_restarted_run_records_restarted_as_the_plain_word(tmp_path: Path) -> None:
    (tmp_path / "again.dot").write_text(RESTARTS)
    flags = {"logs_dir": str(tmp_path / "runs" / "{timestamp}-{graph}"), "workdir": str(tmp_path)}
    result = await launch(plan_run(tmp_path / "again.dot", flags))
    assert result.status == RunStatus.SUCCESS and result.exit_code == 0
    statuses = {}
    for run_dir in (tmp_path / "runs").iterdir():
        manifest = json.loads((run_dir / "manifest.json").read_text())
        checkpoint = json.loads((run_dir / "checkpoint.json").read_text())
        assert manifest["status"] == checkpoint["status"]
        statuses[run_dir.name] = manifest["status"]
    assert sorted(statuses.values()) == ["restarted", "success"]
    assert all(type(s) is str and run_status(s) is not None for s in statuses.values())


def test_every_status_is_in_exactly_one_group() -> None:
    """Going, ended, stopped from outside, or gone on elsewhere: each status is one of them."""
    groups = [{RunStatus.RUNNING}, set(ENDED), set(STOPPED), {RunStatus.RESTARTED}]
    assert sorted(s for g in groups for s in g) == sorted(RunStatus)
    assert STOPPED | {RunStatus.RUNNING} == RESUMABLE
    assert run_status("timed_out") is RunStatus.TIMED_OUT and run_status("damaged") is None
    assert json.dumps({"status": RunStatus.HANGUP}) == '{"status": "hangup"}'


def test_a_listing_says_unknown_for_a_status_no_run_writes(tmp_path: Path) -> None:
    """The read side lists a run's own status, else its own word for it, never a
    word from a damaged file."""
    for name, status in (("a", "restarted"), ("b", "finished")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "manifest.json").write_text(json.dumps({"status": status}))
    assert run_info(tmp_path / "a").status is RunStatus.RESTARTED
    assert run_info(tmp_path / "b").status is SeenStatus.UNKNOWN
    assert listed_status(None) is SeenStatus.UNKNOWN
    assert LISTED_STATUSES[-3:] == ("stopped", "damaged", "unknown")
