"""Why a failed run failed, as the page's banner says it: the node, the reason, its last output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from attractor.run_status import RunStatus
from attractor.runview.inventory import stage_path, tail_text
from attractor.runview.listing import RunInfo

#: How many of the failed node's last output lines the banner shows.
OUTPUT_LINES = 20
#: Bytes read from the end of each output file for them.
_TAIL_BYTES = 8000


def failure_of(path: Path, info: RunInfo) -> dict[str, Any] | None:
    """``{"node", "reason", "output"}`` for a failed run, None for any other.

    ``output`` is the last lines the failed node wrote (its latest attempt's
    ``stderr.txt``, else ``stdout.txt``, else ``response.md``), "" when it wrote none.
    """
    if info.status != RunStatus.FAIL:
        return None
    node = info.current_node or ""
    return {"node": node, "reason": info.failure_reason, "output": last_output(path, node)}


def last_output(path: Path, node: str) -> str:
    """The last :data:`OUTPUT_LINES` lines of ``node``'s stderr, else its stdout,
    else (an agent's node) its response."""
    if not node:
        return ""
    folder = stage_path(path, node)
    for name in ("stderr.txt", "stdout.txt", "response.md"):
        text = tail_text(folder / name, _TAIL_BYTES)
        if text and text.strip():
            return "\n".join(text.rstrip().splitlines()[-OUTPUT_LINES:])
    return ""
