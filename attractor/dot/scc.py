"""Strongly connected components of a small directed graph given as adjacency lists."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def strongly_connected(successors: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The components of the graph ``node -> successors`` (Tarjan's algorithm, no recursion).

    Every node must be a key of ``successors``; targets that are not keys are
    ignored. Each component lists its nodes; components come out in reverse
    topological order (a component before those that lead into it).
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for root in successors:
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(successors[root]))]
        while work:
            node, children = work[-1]
            for child in children:
                if child not in successors:
                    continue
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(successors[child])))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    found.append(_pop_component(stack, on_stack, node))
    return found


def _pop_component(stack: list[str], on_stack: set[str], root: str) -> list[str]:
    component = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == root:
            return component
