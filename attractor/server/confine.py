"""Keeping what a request names inside the server's root.

A pipeline a server runs may name paths of its own: the graph's and each
node's ``workdir`` and ``writable`` paths, a manager's ``stack.child_workdir``
and ``stack.child_dotfile`` (and, in turn, the paths the child pipeline names),
and a human gate's ``human.show``. Each is resolved the way the engine will
resolve it (symbolic links followed) and must stay under the root; so must a
run directory the server reads. A path that leads outside is refused with
:class:`PermissionError` (the server answers 403) naming the node, the
attribute and what to do.
"""

from __future__ import annotations

from pathlib import Path

from attractor.dot.graph import Graph, Node
from attractor.dot.schema import parse_paths
from attractor.errors import UsageError

#: Longer request paths are refused before the file system sees them.
MAX_PATH_CHARS = 1024
#: How deep manager nodes may nest child pipelines before the check gives up.
MAX_CHILD_DEPTH = 8


def inside(root: Path, path: Path) -> bool:
    """Whether ``path`` (resolved) is ``root`` (resolved) or under it."""
    try:
        real = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop, a name too long
        return False
    base = root.resolve()
    return real == base or base in real.parents


def confine(root: Path, relative: str, what: str) -> Path:
    """``relative`` resolved inside ``root``.

    Raises:
        PermissionError: it leads outside the root (the message says so).
        UsageError: it is too long to be a path.
    """
    if len(relative) > MAX_PATH_CHARS:
        raise UsageError(
            f"{what} is {len(relative)} characters long; name a path of at most {MAX_PATH_CHARS}"
        )
    path = root / relative
    if not inside(root, path):
        raise PermissionError(
            f"{what} {relative!r} is outside the server root {root.resolve()}; "
            "name a path inside the root"
        )
    return path.resolve()


def check_graph_paths(graph: Graph, root: Path, workdir: Path) -> None:
    """Refuse a pipeline (or a child pipeline it runs) that names a path outside ``root``.

    ``workdir`` is the run's base working directory (already under the root).

    Raises:
        PermissionError: the first path that leads outside, with its node and attribute.
    """
    _check(graph, root, workdir, depth=0, seen=set())


def _check(graph: Graph, root: Path, base: Path, depth: int, seen: set[Path]) -> None:
    where = graph.file or "the pipeline"
    own = _text(graph.raw("workdir"))
    graph_workdir = base / own if own else base
    _refuse_outside(root, graph_workdir, f"{where}: graph workdir={own!r}")
    for written in parse_paths(_text(graph.raw("writable"))):
        _refuse_outside(root, base / written, f"{where}: graph writable={written!r}")
    for node in graph.nodes():
        workdir = _node_workdir(node, graph, base)
        for key, raw, path in _node_paths(node, graph, base, workdir):
            _refuse_outside(root, path, f"{where}: node {node.id} {key}={raw!r}")
        prompt = graph.prompt_files.get(node.id)
        if prompt is not None and prompt.source:  # read when the pipeline was loaded
            _refuse_outside(
                root, Path(prompt.source), f"{where}: node {node.id} prompt=@{prompt.path}"
            )
        _check_child(node, graph, root, base, workdir, depth, seen)


def _node_workdir(node: Node, graph: Graph, base: Path) -> Path:
    """As the engine's StageEnv.workdir: the node's, else the graph's, under ``base``."""
    raw = _text(node.raw("workdir")) or _text(graph.raw("workdir"))
    return base / raw if raw else base


def _node_paths(node: Node, graph: Graph, base: Path, workdir: Path) -> list[tuple[str, str, Path]]:
    """(attribute, value as written, path the engine will use) for each path the node names."""
    found = [("workdir", _text(node.raw("workdir")) or _text(graph.raw("workdir")), workdir)]
    shown = _text(node.raw("human.show"))
    if shown:
        found.append(("human.show", shown, workdir / shown))
    child = _text(node.raw("stack.child_workdir")) or _text(graph.raw("stack.child_workdir"))
    if child:
        found.append(("stack.child_workdir", child, base / child))
    dotfile = _child_dotfile(node, graph, base)
    if dotfile is not None:
        found.append((*_child_attribute(node, graph), dotfile))
    # A sandboxed step may write these (relative to the run's workdir, as the boundary's).
    found += [("writable", path, base / path) for path in parse_paths(_text(node.raw("writable")))]
    return found


def _child_attribute(node: Node, graph: Graph) -> tuple[str, str]:
    """(attribute, value) naming the node's child pipeline: a sub-pipeline's or a manager's."""
    if node.handler_type == "subgraph":
        return "dot_file", _text(node.raw("dot_file"))
    raw = _text(node.raw("stack.child_dotfile")) or _text(graph.raw("stack.child_dotfile"))
    return "stack.child_dotfile", raw


def _child_dotfile(node: Node, graph: Graph, base: Path) -> Path | None:
    """As the manager and sub-pipeline handlers find it: beside the parent pipeline,
    else in the workdir."""
    if node.handler_type not in ("stack.manager_loop", "subgraph"):
        return None
    raw = _child_attribute(node, graph)[1]
    if not raw:
        return None
    path = Path(raw)
    if path.is_absolute():
        return path
    beside = Path(graph.file).parent / path if graph.file else None
    return beside if beside is not None and beside.exists() else base / path


def _check_child(
    node: Node, graph: Graph, root: Path, base: Path, workdir: Path, depth: int, seen: set[Path]
) -> None:
    dotfile = _child_dotfile(node, graph, base)
    if dotfile is None or depth >= MAX_CHILD_DEPTH:
        return
    real = dotfile.resolve()
    if real in seen or not real.is_file():
        return  # checked already, or the run will say it is missing
    seen.add(real)
    from attractor.linter.prepare import prepare

    child, _ = prepare(real)
    if child is None:
        return  # the manager reports the child's syntax error when it runs
    own = ""
    if node.handler_type != "subgraph":  # a sub-pipeline runs in its node's workdir
        own = _text(node.raw("stack.child_workdir")) or _text(graph.raw("stack.child_workdir"))
    _check(child, root, base / own if own else workdir, depth + 1, seen)


def _refuse_outside(root: Path, path: Path, what: str) -> None:
    if not inside(root, path):
        raise PermissionError(
            f"{what} leads outside the server root {root.resolve()}; "
            "a pipeline the server runs may name paths inside the root only"
        )


def _text(value: str | None) -> str:
    return (value or "").strip()
