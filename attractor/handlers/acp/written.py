"""Where a node's ``backend`` was written, for the messages that refuse it.

A module of its own so that the pre-run checks (``describe``, ``servers``) share
it without importing each other or anything that runs an agent.
"""

from __future__ import annotations

from attractor.dot.graph import Node


def where_backend(node: Node) -> str:
    """``p.dot:12:5: node work`` : where the node's ``backend`` was written."""
    pos = node.pos_of("backend") or node.graph.pos_of("backend")
    return f"{pos}: node {node.id}" if pos is not None else f"node {node.id}"
