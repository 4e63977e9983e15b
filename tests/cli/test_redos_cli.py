"""A model-written regex cannot freeze a run: --timeout still ends it on time."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.cli.runkit import finish, spawn, write

EVIL = {"pattern": "(a+)+$", "regex": True, "path": "evil.txt"}


@pytest.mark.slow
def test_a_catastrophic_regex_under_timeout_exits_124_promptly(workspace: Path) -> None:
    # Under Python's re this input needs ~2**40 steps while holding the GIL,
    # which froze the event loop, --timeout and every signal handler.
    write(workspace / "evil.txt", ("a" * 40 + "!\n") * 50_000)
    call = {"name": "search_file", "arguments": EVIL}
    script = {"responses": [{"text": "", "tool_calls": [call]}], "then": "repeat_last"}
    write(workspace / "model.json", json.dumps(script))
    write(
        workspace / "p.dot",
        """digraph redos {
            start [shape=Mdiamond]
            exit  [shape=Msquare]
            grep  [prompt="find it", max_turns=500]
            start -> grep -> exit
        }""",
    )
    began = time.monotonic()
    proc = spawn(
        [
            "run",
            "p.dot",
            "--timeout",
            "3s",
            "--backend",
            "scripted:model.json",
            "--logs-dir",
            "runs/{timestamp}-{graph}",
        ],
        workspace,
    )
    code, _, err = finish(proc, timeout=30)
    elapsed = time.monotonic() - began
    assert code == 124, err
    # A backtracking engine would take hours on this pattern; a generous bound
    # keeps the test about freezing, not about how loaded the machine is.
    assert elapsed < 20, f"exit took {elapsed:.1f}s after a 3s timeout"
    runs = list((workspace / "runs").iterdir())
    log = (runs[0] / "grep" / "tools.log").read_text()
    assert "no matches" in log  # each search finished: RE2 runs in linear time
