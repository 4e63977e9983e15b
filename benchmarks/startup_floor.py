"""The least a short run of a pipeline file can cost as a whole process (bench_all's floor).

Usage: ``python benchmarks/startup_floor.py FILE FOLDER NODES [--worktree REPO]``

What any run must do and nothing more: check the file as ``attractor lint`` does (the
same command, in this process), start an anyio event loop (every run runs under one),
write each node's folder, its three small files and a journal line under a new folder
of FOLDER, and with ``--worktree`` make the one git worktree a run in REPO works in
(``git worktree add --detach``; it goes with the caller's folder, the repository too),
start as the command line starts (the garbage collector paused: cli/collector.py) and end
as it ends: exit handlers, flushed streams, then ``os._exit`` without the interpreter's
teardown. Start-up goals that lie below this floor are judged against it.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import tempfile
from pathlib import Path

gc.disable()  # as the console script does for a short command, before its imports

from attractor.cli.main import cli  # noqa: E402


def main() -> None:
    path, folder, nodes = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    repo = Path(sys.argv[5]) if sys.argv[4:5] == ["--worktree"] else None
    try:
        cli.main(["lint", path], standalone_mode=True)
    except SystemExit as done:
        if done.code not in (0, None):
            raise
    import anyio

    root = Path(tempfile.mkdtemp(dir=folder))

    async def run() -> None:
        if repo is not None:
            tree = root / "worktree"
            git = ["git", "-C", str(repo), "worktree", "add", "-q", "--detach", str(tree)]
            await anyio.run_process(git)
        # Written in the loop's thread, as the engine writes a node's small files.
        with open(root / "journal.jsonl", "a", encoding="utf-8") as journal:  # noqa: ASYNC230
            for i in range(nodes):
                node = root / f"n{i}"
                node.mkdir()
                for name in ("prompt.md", "response.md", "status.json"):
                    (node / name).write_text(f"{name}\n", encoding="utf-8")
                journal.write(f'{{"node": "n{i}"}}\n')
                journal.flush()

    anyio.run(run)
    atexit._run_exitfuncs()
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
