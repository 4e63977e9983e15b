"""What a sandboxed step leaves in its stage folder cannot steer attractor's own files.

The step may write its stage directory; attractor, outside the sandbox, writes
and reads files there after it. A link left under one of those names must not
be written or read through, and a FIFO must not hold the run.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.runkit import finish, spawn, write
from tests.sandbox.conftest import needs_bwrap

pytestmark = needs_bwrap

_SUCCESS = """echo '{\\"outcome\\": \\"success\\"}' > $ATTRACTOR_STAGE_DIR/status.json"""


def _run(workspace: Path, body: str, env: dict[str, str] | None = None) -> Path:
    write(
        workspace / "p.dot",
        "digraph p {\n start [shape=Mdiamond]\n done [shape=Msquare]\n" + body + "\n}\n",
    )
    write(workspace / "model.json", json.dumps({"responses": [{"text": "done"}], "then": "stop"}))
    args = ["run", "p.dot", "--sandbox", "bwrap", "--backend", "scripted:model.json"]
    args += ["--logs-dir", "runs", "--timeout", "60s"]
    code, out, err = finish(spawn(args, workspace, env), timeout=90)
    assert code == 0, out + err
    return workspace / "runs"


def test_a_link_left_where_attractor_writes_is_replaced_not_written_through(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    victim = write(outside / "victim.txt", "mine\n")
    links = "; ".join(
        f"ln -s {victim} $ATTRACTOR_STAGE_DIR/{name}"
        for name in ("status.engine.json", "response.md", "prompt.md")
    )
    run_dir = _run(
        workspace,
        f'link [shape=parallelogram, tool_command="{_SUCCESS}; {links}"]\n'
        'ask [prompt="go on"]\n start -> link -> ask -> done',
    )
    assert victim.read_text() == "mine\n"
    assert list(outside.iterdir()) == [victim]
    assert (run_dir / "link" / "status.engine.json").is_file()
    assert not (run_dir / "link" / "status.engine.json").is_symlink()


def test_a_fifo_left_where_attractor_writes_does_not_hold_the_run(workspace: Path) -> None:
    run_dir = _run(
        workspace,
        f'fifo [shape=parallelogram, tool_command="{_SUCCESS}; '
        'mkfifo $ATTRACTOR_STAGE_DIR/status.engine.json"]\n start -> fifo -> done',
    )
    assert (run_dir / "fifo" / "status.engine.json").is_file()


def test_a_link_to_a_hidden_secret_is_not_read_into_a_later_prompt(
    workspace: Path, tmp_path: Path
) -> None:
    # ~/.netrc is hidden inside the sandbox; attractor, outside it, can read it.
    home = tmp_path.parent / f"{tmp_path.name}-home"
    home.mkdir()
    write(home / ".netrc", "machine example.com password hunter2-planted\n")
    run_dir = _run(
        workspace,
        'plant [shape=parallelogram, tool_command="ln -s $HOME/.netrc '
        '$ATTRACTOR_STAGE_DIR/response.md"]\n'
        'summ [prompt="Summarize", fidelity="summary:high"]\n start -> plant -> summ -> done',
        env={"HOME": str(home)},
    )
    assert "hunter2" not in (run_dir / "summ" / "prompt.md").read_text()
