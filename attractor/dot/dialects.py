"""What other Attractor-style engines write, and what it means here.

Pipelines written for a peer engine spell some of our attributes differently.
Three tables say what attractor does with them, in one place:

- :data:`ATTRIBUTE_ALIASES`: exact synonyms of one of our attributes. The
  alias transform (:class:`attractor.dot.transforms.AliasResolution`) renames
  them to the canonical name before anything else reads the graph, so no
  handler ever sees an alias; lint reports each with a ``style`` note whose
  fix is the canonical spelling.
- :data:`OUTCOME_ALIASES`: other spellings of a stage status in an edge
  condition (``outcome=succeeded``, ``outcome=FAIL``), rewritten the same way.
- :data:`FOREIGN_ATTRIBUTES`: attributes that change behaviour in the engine
  that reads them and that attractor cannot honour. Ignoring one would run the
  pipeline differently from what its author meant, so each is a lint error
  (rule ``dialect_attribute``) that names what it meant there and what to
  write here.

Keys in a metadata namespace (:data:`METADATA_PREFIXES`) are the author's
notes: never read, never reported.
"""

from __future__ import annotations

import re
from typing import Literal

from attractor.dot.conditions import OUTCOME_VALUES
from attractor.dot.schema import SHAPE_TO_TYPE, Scope
from attractor.dot.source import SourcePos
from attractor.valueclass import frozen

#: (scope, alias) -> our attribute name.
ATTRIBUTE_ALIASES: dict[tuple[Scope, str], str] = {
    ("node", "model"): "llm_model",
    ("node", "provider"): "llm_provider",
    ("node", "reasoning"): "reasoning_effort",
    ("node", "max_agent_turns"): "max_turns",
    ("node", "llm_prompt"): "prompt",
    ("node", "command"): "tool_command",
    ("node", "cmd"): "tool_command",
    ("node", "tool.command"): "tool_command",
    ("node", "default_choice"): "human.default_choice",
    ("node", "node_type"): "type",
    ("node", "prompt_file"): "prompt",
    ("node", "graph"): "dot_file",
    ("node", "graph_ref"): "dot_file",
    ("node", "sub_pipeline"): "dot_file",
    ("node", "question"): "label",
    ("node", "thread-id"): "thread_id",
    ("graph", "context_fidelity_default"): "default_fidelity",
    ("graph", "model"): "llm_model",
    ("graph", "provider"): "llm_provider",
    ("graph", "max_node_visits"): "default_max_visits",
}

#: Aliases that apply only to these values: ``node_type="conditional"`` is
#: ``type="conditional"``, but one project's editor also writes
#: ``node_type="stack.observe"`` on LLM stages (with ``is_codergen="true"``),
#: where it names no handler: left alone, it is an unknown attribute.
ALIAS_VALUES: dict[tuple[Scope, str], frozenset[str]] = {
    ("node", "node_type"): frozenset(SHAPE_TO_TYPE.values()),
}

#: Keys another engine writes that say what attractor already does: silent
#: when the value and the node's handler type agree (key -> value, types).
AGREEING: dict[str, tuple[str, frozenset[str]]] = {
    "is_codergen": ("true", frozenset({"codergen", "start", "exit"})),
}

#: Aliases whose value gains a prefix on the way: ``prompt_file="p.md"`` is
#: ``prompt="@p.md"`` (a prompt file, see :mod:`attractor.dot.prompts`).
VALUE_PREFIXES: dict[tuple[Scope, str], str] = {("node", "prompt_file"): "@"}

#: Other names of a handler type in ``type=`` -> our type.
TYPE_ALIASES: dict[str, str] = {
    "sub_pipeline": "subgraph",
    "include": "subgraph",
    "fan_out": "parallel",
    "fan_in": "parallel.fan_in",
}

#: What each handler type a ``type=`` alias names is, for the alias note.
TYPE_MEANINGS: dict[str, str] = {
    "subgraph": "a sub-pipeline",
    "parallel": "a parallel fan-out",
    "parallel.fan_in": "a fan-in",
}

#: Stylesheet property alias -> our property.
PROPERTY_ALIASES: dict[str, str] = {"model": "llm_model", "provider": "llm_provider"}

#: Other spellings of a stage status (compared lowercased) -> our status.
OUTCOME_ALIASES: dict[str, str] = {
    "succeeded": "success",
    "failed": "fail",
    "failure": "fail",
    "partially_succeeded": "partial_success",
    "skip": "skipped",
}

#: Key prefixes of pure metadata: accepted anywhere, never read, never reported.
METADATA_PREFIXES = ("x_", "ui_", "meta.")


@frozen
class Foreign:
    """An attribute another engine gives behaviour to, and attractor cannot honour."""

    meant: str
    write: str


#: (scope, key) -> what it meant in the engine that reads it, what to write here.
#: Built from pipelines published for peer engines (docs/corpus.md).
FOREIGN_ATTRIBUTES: dict[tuple[Scope, str], Foreign] = {
    ("node", "allowed_tools"): Foreign(
        "limits the tools the agent may call at this stage",
        "remove it and pick a tool set with tool_profile (the agent's tools are not "
        "limited per stage here), or make the stage a tool node with a tool_command",
    ),
    ("node", "system_prompt"): Foreign(
        "replaces the system prompt of the stage's model",
        "move these instructions into prompt (the system prompt is attractor's own)",
    ),
    ("node", "agent_tool"): Foreign(
        "picks the coding-agent CLI that runs the stage",
        "write backend=claude-code, backend=codex or backend=gemini-cli",
    ),
    ("node", "shell"): Foreign(
        "runs this shell command as the stage",
        "write the command as tool_command on a shape=parallelogram node",
    ),
    ("node", "max_tokens"): Foreign(
        "caps the tokens the model may write at this stage",
        "remove it; bound the stage with max_turns, or the run with --max-total-tokens",
    ),
    ("node", "retry_max"): Foreign(
        "the number of retries of the stage",
        "write max_retries=N (extra attempts after the first)",
    ),
    ("node", "agent"): Foreign(
        "runs the stage as a named agent (its own model, instructions and tools)",
        "remove it: pick the model with llm_model (or the model_stylesheet) and put the "
        "agent's instructions in prompt",
    ),
    ("node", "ask"): Foreign(
        "makes the node a human gate that asks this question",
        'write shape=hexagon and the question as its label: label="QUESTION"',
    ),
    ("node", "child_graph"): Foreign(
        "names a child pipeline that this node runs and supervises",
        "to run it inline write type=subgraph, dot_file=FILE; to supervise it write "
        "shape=house, stack.child_dotfile=FILE (a hexagon is a human gate here)",
    ),
    ("node", "check_cmd"): Foreign(
        "runs this shell command after the stage and retries the stage while it fails",
        "add a tool node after the stage (shape=parallelogram, tool_command=COMMAND) "
        'with an edge back to the stage on condition="outcome=fail"',
    ),
    ("node", "workflow"): Foreign(
        "runs a named workflow inline at this node",
        "write the workflow as a pipeline file and name it: type=subgraph, "
        "dot_file=FILE (a sub-pipeline, run inline)",
    ),
}


#: stencila's workflows keep some texts in their WORKFLOW.md, named by a ``-ref``
#: key (``prompt-ref="#plan"``): key -> (scope, what to write here).
_MARKDOWN_REFS: dict[str, tuple[Scope, str]] = {
    "prompt-ref": (
        "node",
        'write the prompt itself: prompt="..." or a prompt file, prompt="@FILE"',
    ),
    "interview-ref": ("node", 'make the node a human gate: shape=hexagon, label="QUESTION"'),
    "ask-ref": ("node", 'make the node a human gate: shape=hexagon, label="QUESTION"'),
    "shell-ref": (
        "node",
        'write the command itself: tool_command="..." on a shape=parallelogram node',
    ),
    "goal-ref": ("graph", 'write the goal itself: goal="..."'),
}
FOREIGN_ATTRIBUTES.update(
    {
        (scope, key): Foreign(
            "takes its text from a section of the workflow's Markdown file (stencila's "
            "WORKFLOW.md)",
            write,
        )
        for key, (scope, write) in _MARKDOWN_REFS.items()
    }
)
_FAN_OUT = Foreign(
    "fans out over a list in the context: one branch per item",
    "write one branch per item after a shape=component node (a list is not expanded here)",
)
FOREIGN_ATTRIBUTES.update(
    {
        ("node", "max-session-turns"): Foreign(
            "caps the turns of the stage's agent session",
            "write max_turns=N (on the node, or default_max_turns=N on the graph)",
        ),
        ("node", "fan-out"): _FAN_OUT,
        ("node", "fan_out"): _FAN_OUT,
    }
)


def canonical_attribute(scope: Scope, key: str, value: str = "") -> str | None:
    """Our name for ``key`` (written with ``value``) when it is an alias in
    ``scope``, else None."""
    values = ALIAS_VALUES.get((scope, key))
    if values is not None and value.strip() not in values:
        return None
    return ATTRIBUTE_ALIASES.get((scope, key))


def agrees(key: str, value: str, handler_type: str) -> bool:
    """Whether ``key=value`` only says what the node's handler type already does."""
    agreeing = AGREEING.get(key)
    return agreeing is not None and (value.strip().lower(), handler_type in agreeing[1]) == (
        agreeing[0],
        True,
    )


def canonical_outcome(value: str) -> str | None:
    """Our status for an outcome spelling (``succeeded``, ``FAIL``), else None.

    None also when ``value`` is already canonical or is no status at all (the
    condition parser reports the latter).
    """
    low = value.lower()
    canonical = OUTCOME_ALIASES.get(low, low)
    if canonical not in OUTCOME_VALUES or canonical == value:
        return None
    return canonical


def is_metadata(key: str) -> bool:
    """Whether ``key`` is in a metadata namespace (never read, never reported)."""
    return key.startswith(METADATA_PREFIXES)


def foreign(scope: Scope, key: str) -> Foreign | None:
    """The dialect meaning of ``key`` in ``scope``, when attractor cannot honour it."""
    return FOREIGN_ATTRIBUTES.get((scope, key))


#: An ``outcome`` comparison in a condition, its value quoted or bare.
_OUTCOME_CLAUSE = re.compile(r'(?<![\w.])outcome\s*!?=\s*("?)([A-Za-z_]+)\1(?![\w.:-])')


def canonical_condition(text: str) -> tuple[str, list[tuple[str, str, int]]]:
    """``text`` with every outcome alias replaced by our status.

    Returns the new text and, per replacement, (written, canonical, 1-based
    column of the value in ``text``).
    """
    found: list[tuple[str, str, int]] = []
    pieces: list[str] = []
    last = 0
    for match in _OUTCOME_CLAUSE.finditer(text):
        canonical = canonical_outcome(match.group(2))
        if canonical is None:
            continue
        start, end = match.span(2)
        found.append((match.group(2), canonical, start + 1))
        pieces += [text[last:start], canonical]
        last = end
    if not found:
        return text, found
    return "".join(pieces) + text[last:], found


AliasKind = Literal["attribute", "outcome", "property", "type"]


@frozen
class AliasUse:
    """One alias the alias transform resolved: what was written, what it became, where.

    ``shadowed`` is true when the item also set the canonical attribute: that
    value won and the alias's value was dropped.
    """

    kind: AliasKind
    written: str
    canonical: str
    pos: SourcePos
    node: str | None = None
    edge: tuple[str, str] | None = None
    shadowed: bool = False
