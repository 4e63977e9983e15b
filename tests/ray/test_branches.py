"""Branches on the cluster behave as local ones: live events, gates answered here, one budget."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

from ray.cluster_utils import Cluster

from tests.ray.conftest import GATED, run_cli, spawn_cli, wait_until


def _collect(stream: object, into: list[str]) -> threading.Thread:
    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            into.append(line)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def test_a_branchs_events_reach_the_driver_while_it_runs(cluster: Cluster, tmp_path: Path) -> None:
    go = tmp_path / "go"
    (tmp_path / "p.dot").write_text(
        f"""digraph live {{
    start [shape=Mdiamond]
    done [shape=Msquare]
    fan [shape=component]
    join [shape=tripleoctagon]
    first [shape=parallelogram, tool_command="echo first"]
    hold [shape=parallelogram, tool_command="while [ ! -e {go} ]; do sleep 0.1; done"]
    other [shape=parallelogram, tool_command="echo other"]
    start -> fan
    fan -> first -> hold -> join
    fan -> other -> join
    join -> done
}}
""",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    proc = spawn_cli(["run", "p.dot", "--logs-dir", str(run_dir), "--json"], tmp_path, cluster)
    lines: list[str] = []
    reader = _collect(proc.stdout, lines)
    try:

        def hold_started() -> bool:
            events = [json.loads(line) for line in list(lines)]
            return any(e["type"] == "stage_started" and e["name"] == "hold" for e in events)

        # The branch is still running (it waits for `go`), yet its events are here.
        wait_until(hold_started, proc)
        completed = [json.loads(line) for line in list(lines)]
        assert any(e["type"] == "stage_completed" and e["name"] == "first" for e in completed)
        logged = (run_dir / "events.jsonl").read_text(encoding="utf-8")
        assert '"name": "hold"' in logged or '"name":"hold"' in logged
        go.touch()
        proc.wait(timeout=90)  # the reader alone reads stdout
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=10)
        err = proc.stderr.read() if proc.stderr else ""
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == 0, err
    kinds = [json.loads(line)["type"] for line in lines]
    assert kinds[-1] == "pipeline_completed"
    # Each event once: the relay neither drops nor repeats.
    started = [json.loads(line)["name"] for line in lines if '"stage_started"' in line]
    assert sorted(n for n in started if n in ("first", "hold", "other")) == [
        "first", "hold", "other"
    ], "".join(lines)  # fmt: skip


def test_a_gate_in_a_remote_branch_is_answered_on_the_drivers_terminal(
    cluster: Cluster, tmp_path: Path
) -> None:
    side = tmp_path / "side.txt"
    (tmp_path / "p.dot").write_text(GATED, encoding="utf-8")
    run_dir = tmp_path / "run"
    proc = spawn_cli(
        ["run", "p.dot", "--logs-dir", str(run_dir)], tmp_path, cluster, subprocess.PIPE
    )
    try:
        out, err = proc.communicate("H\n", timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Ship it?" in out + err  # the question was put on this terminal
    assert sorted(side.read_text(encoding="utf-8").split()) == ["hold", "other"]


NEVER_STOPS = {
    "responses": [{"text": "still busy", "tool_calls": [{"name": "list_dir", "arguments": {}}]}],
    "then": "repeat_last",
}


def test_branches_on_the_cluster_share_the_runs_turn_budget(
    cluster: Cluster, tmp_path: Path
) -> None:
    names = ["b1", "b2", "b3"]
    nodes = "\n".join(
        f'    {n} [prompt="branch {n}", max_turns=10, on_turn_limit=partial_success]' for n in names
    )
    edges = "\n".join(f"    fan -> {n} -> join" for n in names)
    (tmp_path / "p.dot").write_text(
        f"""digraph fan {{
    start [shape=Mdiamond]
    done  [shape=Msquare]
    fan   [shape=component]
    join  [shape=tripleoctagon]
{nodes}
{edges}
    start -> fan
    join -> done
}}
""",
        encoding="utf-8",
    )
    (tmp_path / "model.json").write_text(json.dumps(NEVER_STOPS), encoding="utf-8")
    run_dir = tmp_path / "run"
    args = ["run", "p.dot", "--logs-dir", str(run_dir), "--backend", "scripted:model.json"]
    done = run_cli(
        [*args, "--executor", "ray", "--max-total-turns", "4"],
        tmp_path,
        env={"ATTRACTOR_RAY_ADDRESS": cluster.address},
    )
    assert done.returncode == 1, done.stderr
    assert "run turn budget exhausted" in done.stdout + done.stderr
    requests = 0
    for name in names:
        transcript = run_dir / name / "transcript.jsonl"
        if transcript.exists():
            turns = [json.loads(line) for line in transcript.read_text().splitlines()]
            requests += len(turns)
            # Where an agent got a request, it also got its final, tool-free one.
            kinds = [t["kind"] for t in turns]
            assert kinds[-1] == "final", (name, kinds, _stage_story(run_dir, name))
    # Three agents on two workers, never more requests than the run's budget.
    assert 0 < requests <= 4


def _stage_story(run_dir: Path, name: str) -> dict[str, object]:
    """What a failed assertion shows of a branch: its status, its folders, its events."""
    stage = run_dir / name
    status = stage / "status.json"
    events = run_dir / "events.jsonl"
    return {
        "status": json.loads(status.read_text()) if status.exists() else None,
        "folders": sorted(p.name for p in stage.iterdir() if p.is_dir()),
        "events": [line for line in events.read_text().splitlines() if f'"{name}"' in line]
        if events.exists()
        else [],
    }
