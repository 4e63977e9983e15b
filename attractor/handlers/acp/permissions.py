"""What an ACP agent may do: the node's ``acp_permissions`` policy.

The policy answers the agent's tool-permission requests by the kind of tool
call (ACP's ``read``, ``edit``, ``execute``...), and also decides which of
attractor's own services the agent may use: file writes and terminals.

==============  =================================  ============  ==========
policy          permission requests allowed         file writes   terminals
==============  =================================  ============  ==========
``deny``        none                                no            no
``allow_read``  read, search, think                 no            no
``allow_edits`` and edit, delete, move (default)    yes           no
``allow_all``   every kind                          yes           yes
==============  =================================  ============  ==========

Reads are confined to the workspace under every policy; writes and commands
stay inside it (and inside the node's sandbox when it is on). Nothing is
allowed silently beyond the default: ``allow_all`` is a choice written in the
graph, and every answer is logged to tools.log; a refusal also shows as an
``agent_warning`` event.
"""

from __future__ import annotations

from dataclasses import dataclass

from attractor.dot.graph import Node

DEFAULT_POLICY = "allow_edits"
_READS = frozenset({"read", "search", "think"})
_EDITS = _READS | {"edit", "delete", "move"}
_KINDS: dict[str, frozenset[str] | None] = {
    "deny": frozenset(),
    "allow_read": _READS,
    "allow_edits": _EDITS,
    "allow_all": None,  # every kind
}


@dataclass(frozen=True)
class Policy:
    """One node's ``acp_permissions``."""

    name: str

    @classmethod
    def of(cls, node: Node) -> Policy:
        raw = (node.raw("acp_permissions") or node.graph.raw("acp_permissions") or "").strip()
        return cls(raw if raw in _KINDS else DEFAULT_POLICY)

    def allows(self, kind: str) -> bool:
        kinds = _KINDS[self.name]
        return kinds is None or kind in kinds

    @property
    def writes(self) -> bool:
        return self.allows("edit")

    @property
    def commands(self) -> bool:
        return self.allows("execute")
