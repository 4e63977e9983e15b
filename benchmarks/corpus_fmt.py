"""Format every pipeline of a folder in memory and check ``attractor fmt`` on it.

Usage: ``python benchmarks/corpus_fmt.py FOLDER``

For each ``*.dot`` file under FOLDER that parses: its canonical form (what
``attractor fmt`` would write; nothing is written), that formatting it again
changes nothing (idempotence), that the formatted text still parses, and that
lint finds the same errors and warnings in it (rule, severity, line and node;
style notes aside: the aliases fmt rewrites are what they report), and that the
graph a run would read (every attribute of the graph, its nodes and edges, once
aliases are resolved and the stylesheet applied) is the same. Each file is
linted from its project's folder (the first folder under FOLDER), with the
file's own folder for the paths it names, as ``corpus_lint.py`` does. Also
counts the alias notes left in the formatted text (``aliases_left``: fmt writes
every alias in its canonical form, except one beside the attribute it shadows,
which lint reports as a warning). Prints the counts and every file that breaks
a check.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from attractor.dot.formatter import format_source
from attractor.dot.parser import parse_dot, read_source
from attractor.errors import PipelineError, PipelineSyntaxError
from attractor.linter.base import closed_handler_types
from attractor.linter.prepare import prepare

Finding = tuple[str, str, int, str | None]


def findings(text: str, path: Path) -> tuple[list[Finding], Any]:
    """Lint's errors and warnings, and the graph as the run reads it (aliases resolved)."""
    graph, found = prepare(text, file=str(path), folder=path.parent)
    shown = sorted((d.rule, d.severity, d.line, d.node) for d in found if d.severity != "style")
    if graph is None:
        return shown, None
    nodes = {n.id: dict(n.attrs) for n in graph.nodes()}
    edges = [(e.source, e.target, dict(e.attrs)) for e in graph.edges()]
    # The stylesheet's text changes (``model:`` -> ``llm_model:``); what it gives
    # each node is compared in the node's attributes.
    attrs = {k: v for k, v in graph.attrs.items() if k != "model_stylesheet"}
    return shown, (attrs, nodes, edges)


def aliases_left(text: str, path: Path) -> list[tuple[int, str]]:
    """The alias notes (style) lint still gives on ``text``: fmt should leave none."""
    found = prepare(text, file=str(path), folder=path.parent)[1]
    return [(d.line, d.message) for d in found if d.rule == "alias" and d.severity == "style"]


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print("usage: corpus_fmt.py FOLDER", file=sys.stderr)
        return 2
    root = Path(argv[0]).resolve()
    counts = {
        "files": 0,
        "parse": 0,
        "changed": 0,
        "idempotent": 0,
        "same_lint": 0,
        "aliases_left": 0,
    }
    broken: list[str] = []
    here = Path.cwd()
    try:
        for path in sorted(root.rglob("*.dot")):
            counts["files"] += 1
            os.chdir(root / path.relative_to(root).parts[0])
            try:
                text = read_source(path)
                parse_dot(text, file=str(path))
            except (PipelineError, PipelineSyntaxError):
                continue
            counts["parse"] += 1
            once = format_source(text)
            counts["changed"] += once != text
            if format_source(once) == once:
                counts["idempotent"] += 1
            else:
                broken.append(f"{path.relative_to(root)}: not idempotent")
            with closed_handler_types():
                try:
                    same = findings(once, path) == findings(text, path)
                except PipelineError as error:
                    same, error_text = False, str(error)
                    broken.append(f"{path.relative_to(root)}: {error_text}")
            counts["same_lint"] += same
            left = aliases_left(once, path)
            counts["aliases_left"] += len(left)
            broken += [f"{path.relative_to(root)}:{line}: alias left: {m}" for line, m in left]
            if not same:
                broken.append(f"{path.relative_to(root)}: lint results differ")
    finally:
        os.chdir(here)
    for name, n in counts.items():
        print(f"{name}: {n}")
    for line in broken:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
