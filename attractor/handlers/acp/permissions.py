"""What an ACP agent may do: the node's ``acp_permissions`` policy.

The policy answers the agent's tool-permission requests by the kind of tool
call (ACP's ``read``, ``edit``, ``execute``...), and also decides which of
attractor's own services the agent may use: file writes and terminals.

===============  ==========================================  ===========  ==============
policy           permission requests                          file writes  terminals
===============  ==========================================  ===========  ==============
``deny``         all refused                                  no           no
``allow_read``   read, search, think allowed                  no           no
``allow_edits``  and edit, delete, move allowed (default)     yes          no
``ask``          as allow_edits; any other kind: a person     yes          a person
``allow_all``    all allowed                                  yes          yes
===============  ==========================================  ===========  ==============

Under ``ask`` a person answers yes or no through the run's interviewer (the
console, ``--answers``, the server's question endpoint), as at a human gate;
no answer is a no. A command the person already allowed as an ``execute``
tool call runs without a second question, in the agent's next terminal, when
that terminal runs exactly the command line the tool call named (itself, or
through ``sh -c``); any other command is asked about again.

Reads are confined to the workspace under every policy; writes and commands
stay inside it (and inside the node's sandbox when it is on). Nothing is
allowed silently beyond the default: ``allow_all`` is a choice written in the
graph, and every answer is logged to tools.log; a refusal also shows as an
``agent_warning`` event.
"""

from __future__ import annotations

from typing import Literal

from attractor.dot.graph import Node
from attractor.valueclass import frozen

DEFAULT_POLICY = "allow_edits"
_READS = frozenset({"read", "search", "think"})
_EDITS = _READS | {"edit", "delete", "move"}
_KINDS: dict[str, frozenset[str] | None] = {
    "deny": frozenset(),
    "allow_read": _READS,
    "allow_edits": _EDITS,
    "ask": _EDITS,  # and a person for the rest
    "allow_all": None,  # every kind
}

#: What the policy says to one request.
Decision = Literal["allow", "refuse", "ask"]


@frozen
class Policy:
    """One node's ``acp_permissions``."""

    name: str

    @classmethod
    def of(cls, node: Node) -> Policy:
        raw = (node.raw("acp_permissions") or node.graph.raw("acp_permissions") or "").strip()
        return cls(raw if raw in _KINDS else DEFAULT_POLICY)

    def decide(self, kind: str) -> Decision:
        """The answer to a tool call of ``kind``."""
        kinds = _KINDS[self.name]
        if kinds is None or kind in kinds:
            return "allow"
        return "ask" if self.name == "ask" else "refuse"

    @property
    def writes(self) -> bool:
        return self.decide("edit") == "allow"

    @property
    def commands(self) -> Decision:
        return self.decide("execute")
