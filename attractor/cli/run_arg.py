"""RUN_DIR (and NODE) as commands take them: a run directory's path, or a run's id.

``attractor runs`` lists runs by id (the run directory's name); a command that
takes RUN_DIR accepts that id too, for a run under the current folder's
``.attractor/runs/``. A path that exists is always taken as it is.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

#: Where a run's id is looked up (the default ``--logs-dir`` puts runs there).
RUNS_FOLDER = Path(".attractor") / "runs"


def run_dir_of(value: str) -> Path:
    """The run directory ``value`` names (see the module docstring)."""
    path = Path(value)
    if os.path.lexists(path) or os.sep in value or value in (".", ".."):
        return path
    by_id = RUNS_FOLDER / value
    return by_id if by_id.is_dir() else path


def missing(value: str) -> str | None:
    """The message for a RUN_DIR that is neither a path nor a run's id (None: it is one)."""
    if os.path.lexists(run_dir_of(value)):
        return None
    return (
        f"{value}: no such run directory (nor a run id under {RUNS_FOLDER}); "
        "pass the directory attractor run printed, or list the runs with attractor runs"
    )


def no_such_step(run: Path, node: str, within: str = "") -> str | None:
    """Why ``node`` (``NODE/CHILD...``, a step of the sub-pipeline NODE runs) names no
    step of the run in ``run``; None when it does, or when the run cannot tell (its
    pipeline copy is unusable, or the child run has not started yet)."""
    from attractor.dot.includes import SUBGRAPH
    from attractor.runview.inventory import run_graph
    from attractor.runview.listing import is_run_dir

    graph = run_graph(run)
    own, _, rest = node.partition("/")
    if graph is None:
        return None
    if not graph.has_node(own):
        nodes = [n.id for n in graph.nodes()]
        close = difflib.get_close_matches(own, nodes, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        where = f"the sub-pipeline of {within}" if within else "the run's pipeline"
        shown = ", ".join(nodes[:20]) + (", ..." if len(nodes) > 20 else "")
        return f"{where} has no node {own!r}; {hint}its nodes: {shown}"
    if not rest:
        return None
    path = f"{within}/{own}" if within else own
    if graph.node(own).handler_type != SUBGRAPH:
        return f"{path} is not a sub-pipeline, so it has no step {rest!r}"
    children = sorted(c for c in (run / own).glob("child*") if is_run_dir(c))
    return no_such_step(children[0], rest, path) if children else None
