"""The package's import structure, counting imports made inside functions too.

import-linter checks the layers (pyproject.toml); these checks see what it does
not: a module-level import cycle closed by an import inside a function, and the
engine core reaching the Ray executor, which only the launcher may choose. The
front ends' rule (only the launcher and the read side) is import-linter's too;
it is checked here as well, with the launcher's lazy re-exports behind it. That
the Ray executor uses the run only through ``engine/seam.py`` is import-linter's
alone (its fifth contract).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "attractor"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, *, typing_only: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, in functions too; ``if TYPE_CHECKING:`` blocks when asked."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node) and not typing_only:
            yield from (n for s in node.orelse for n in _imports_of(s, typing_only))
            continue
        yield from _imports_of(node, typing_only)


def _imports_of(node: ast.AST, typing_only: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    else:
        yield from _imports(node, typing_only=typing_only)


def _target(name: str) -> str | None:
    """The module of this package that importing ``name`` loads, if any."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _graph(*, typing_only: bool) -> dict[str, set[str]]:
    """Module -> the modules of this package it imports (``typing_only``: with type-only ones)."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(encoding="utf-8")), typing_only=typing_only):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, *([base] if base else [])])
                names = [f"{base}.{alias.name}" for alias in node.names]
            targets.update(t for t in map(_target, names) if t is not None and t != module)
        graph[module] = targets
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        circles.append(sorted(group))
    return circles


#: The Ray executor's package: only the launcher (the composition root) picks it.
RAY_EXECUTOR = "attractor.ray_exec"
#: The run, its store and the read side: none of them may reach Ray code.
CORE = ("attractor.engine", "attractor.store", "attractor.runview")


def _is_ray(module: str) -> bool:
    return module == RAY_EXECUTOR or module.startswith(RAY_EXECUTOR + ".")


def _imports_ray_itself(module: str) -> bool:
    """Whether ``module`` imports the ``ray`` distribution, anywhere in it."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    for node in _imports(tree, typing_only=True):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            names = [node.module or ""] if not node.level else []
        if any(name == "ray" or name.startswith("ray.") for name in names):
            return True
    return False


def test_no_engine_core_module_imports_a_ray_module() -> None:
    graph = _graph(typing_only=True)
    core = [m for m in graph if m.startswith(CORE)]
    assert core  # the packages are where the check looks
    reaching = {m: sorted(t for t in graph[m] if _is_ray(t)) for m in core}
    assert {m: ts for m, ts in reaching.items() if ts} == {}
    assert [m for m in core if _imports_ray_itself(m)] == []


def test_the_ray_check_sees_the_ray_executor_import_ray() -> None:
    assert _imports_ray_itself("attractor.ray_exec.executor")
    assert _is_ray("attractor.ray_exec.tasks") and not _is_ray("attractor.ray_execx")


def test_no_import_circle_counting_imports_inside_functions() -> None:
    assert _circles(_graph(typing_only=False)) == []


def test_no_import_circle_even_counting_type_only_imports() -> None:
    """``if TYPE_CHECKING:`` imports count too: types name only modules below them."""
    assert _circles(_graph(typing_only=True)) == []


def test_the_checks_see_a_circle_closed_inside_a_function() -> None:
    """The graph counts an import inside a function, and a circle it closes."""
    graph = _graph(typing_only=False)
    assert "attractor.linter.prepare" in graph["attractor.engine.run"]  # imported lazily
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


#: The read side: the modules of the run side a front end may import itself.
#: Everything of ``engine``, ``store``, ``ray_exec`` and ``handlers`` reaches a
#: front end through the launcher.
READ_SIDE = {"attractor.runview.inventory", "attractor.runview.timeline"}
FRONT_ENDS = ("attractor.cli", "attractor.server", "attractor.lsp")


def _front_end_reach(graph: dict[str, set[str]]) -> dict[str, list[str]]:
    """Each front-end module -> what it imports of the run side outside the read side."""
    below = ("attractor.engine", "attractor.store", "attractor.ray_exec", "attractor.handlers")
    reach = {}
    for module, targets in graph.items():
        if module.startswith(FRONT_ENDS):
            outside = sorted(t for t in targets if t.startswith(below) and t not in READ_SIDE)
            if outside:
                reach[module] = outside
    return reach


def test_front_ends_reach_the_engine_only_through_the_launcher_and_the_read_side() -> None:
    """Imports inside functions and type-only ones count too (import-linter checks the same)."""
    assert _front_end_reach(_graph(typing_only=True)) == {}


def test_the_front_end_check_sees_an_import_inside_a_function() -> None:
    graph = {"attractor.cli.x": {"attractor.store.rundir", "attractor.runview.inventory"}}
    assert _front_end_reach(graph) == {"attractor.cli.x": ["attractor.store.rundir"]}


def test_the_launcher_re_exports_the_engine_s_own_objects_loaded_on_first_use() -> None:
    """Each name front ends take from the launcher is the engine's (or a handler's)
    object itself, and importing the launcher loads none of them."""
    code = (
        "import importlib, sys\n"
        "import attractor.launch as launch\n"
        "before = sorted(m for m in sys.modules if m.startswith(('attractor.engine',"
        " 'attractor.store', 'attractor.ray_exec', 'attractor.handlers')))\n"
        "wrong = [n for n, m in launch._FRONT_END.items()"
        " if getattr(launch, n) is not getattr(importlib.import_module(m), n)]\n"
        "print(before, wrong)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(PACKAGE.parent)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[] []"
