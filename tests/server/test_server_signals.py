"""``attractor serve`` stopped by a signal stops its runs' commands first, whatever comes next."""

from __future__ import annotations

import json
import signal
from pathlib import Path

from tests.cli.runkit import wait_for
from tests.proc.prockit import outlived
from tests.server.serverkit import read_until, sse_events, start_server

#: Unsandboxed (the test needs the command's own pid); it notes SIGTERM and goes on,
#: so its stop takes the kill grace: time for more signals while the run saves itself.
DEAF_TOOL = """digraph deaf {
    start [shape=Mdiamond]
    done  [shape=Msquare]
    wait  [shape=parallelogram, sandbox=none,
           tool_command="trap 'echo > ../termed' TERM; echo $$ > ../tool.pid; while :; do
                         sleep 1; done"]
    start -> wait -> done
}
"""


def _written(path: Path) -> str:
    """The line the command writes to ``path``, once it is there whole."""
    wait_for(lambda: path.exists() and path.read_text().endswith("\n"), f"{path.name}")
    return path.read_text()


def test_a_hangup_then_ctrl_c_stop_the_runs_command_and_save_the_run(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "deaf.dot").write_text(DEAF_TOOL)
    server = start_server(root)
    try:
        with server.client() as client:
            response = client.post(
                "/pipelines", json={"path": "deaf.dot", "settings": {"kill_grace": "3s"}}
            )
            assert response.status_code == 201, response.text
            run_id = response.json()["id"]
            with client.stream("GET", f"/pipelines/{run_id}/events") as events:
                read_until(sse_events(events), "stage_started", "wait")
        pid = int(_written(tmp_path / "tool.pid"))
        # The terminal closes; Ctrl-C while the run stops its command (within the grace).
        server.process.send_signal(signal.SIGHUP)
        _written(tmp_path / "termed")
        server.process.send_signal(signal.SIGINT)
        stderr = server.stop()
    finally:
        if server.process.poll() is None:
            server.process.kill()
    assert not outlived(pid), "the run's command outlived the server"
    assert "Traceback" not in stderr, stderr
    assert server.process.returncode == 129  # stopped by SIGHUP, as every command says
    run_dir = root / ".attractor" / "runs" / run_id
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["status"] == "hangup"  # as the server's first stop signal says
    last = json.loads((run_dir / "events.jsonl").read_text().splitlines()[-1])
    assert (last["type"], last["signal"]) == ("pipeline_interrupted", "SIGHUP")
