"""Context fidelity: how much of the run so far an LLM stage is given.

``full`` continues a conversation (a *thread*) that earlier stages held; every
other mode starts a fresh conversation whose prompt opens with a preamble built
from the run record (see :mod:`attractor.handlers.preamble`).

Which mode, first match wins: the ``fidelity`` of the edge the run arrived by,
the node's ``fidelity``, the graph's ``default_fidelity``, else ``compact``.

Which thread, for ``full``: the node's ``thread_id``, the arriving edge's
``thread_id``, the graph's ``thread_id``, the node's first class (a subgraph
label gives its nodes one), else the thread the previous stage used, else the
previous node's id. That last step means a chain of ``full`` nodes without any
thread ids reads as one conversation, which is what an author drawing
``plan -> implement`` under ``default_fidelity="full"`` expects.
"""

from __future__ import annotations

from typing import Any

from attractor.dot.graph import Edge, Graph, Node
from attractor.dot.schema import FIDELITY_MODES
from attractor.handlers.context import Context
from attractor.valueclass import frozen

DEFAULT = "compact"
FULL = "full"

#: Context key: the edge the run took into the node about to run (its source and
#: the context attributes it carries), set by the engine each time it follows one.
ARRIVAL_KEY = "internal.arrival"
#: Context key prefix: ``internal.thread_of.<node>`` is the thread a node last used.
THREAD_OF_PREFIX = "internal.thread_of."


@frozen
class ContextPlan:
    """The fidelity mode of one stage and, under ``full``, its thread key."""

    mode: str
    thread: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"fidelity": self.mode, "thread": self.thread}


def arrival(edge: Edge) -> dict[str, str]:
    """What the engine records in the context when it follows ``edge``."""
    return {
        "from": edge.source,
        "fidelity": str(edge.get("fidelity") or ""),
        "thread_id": str(edge.get("thread_id") or ""),
    }


def plan_for(node: Node, graph: Graph, context: Context) -> ContextPlan:
    """The fidelity mode and thread of ``node`` entered with ``context``."""
    came = _arrival(context)
    mode = _first(came.get("fidelity"), node.get("fidelity"), graph.get("default_fidelity"))
    mode = mode if mode in FIDELITY_MODES else DEFAULT
    if mode != FULL:
        return ContextPlan(mode)
    previous = came.get("from") or context.get_string("internal.last_node")
    inherited = context.get_string(THREAD_OF_PREFIX + previous) if previous else ""
    classes = node.classes
    thread = _first(
        node.get("thread_id"),
        came.get("thread_id"),
        graph.get("thread_id"),
        classes[0] if classes else "",
        inherited,
        previous,
        node.id,
    )
    return ContextPlan(mode, thread)


def _arrival(context: Context) -> dict[str, str]:
    value = context.get(ARRIVAL_KEY)
    if not isinstance(value, dict):
        return {}
    return {str(k): str(v) for k, v in value.items() if v is not None}


def _first(*values: object) -> str:
    for value in values:
        text = str(value or "").strip()
        if text:
            return text
    return ""
