"""``attractor migrate FILE --from kilroy``: a pipeline of another engine's dialect, converted.

Aliases (:mod:`attractor.dot.dialects`) carry most of what other engines
write: they are read as they are, and ``attractor fmt`` spells them our way.
What they cannot carry is a *value* that means something else there, or a
construct we have no equivalent for. Measured on the collection of pipelines
docs/corpus.md describes, one dialect needs it: kilroy's (the engine of the
``danshapiro/kilroy`` project; fabro's test suite holds copies of its
pipelines). The conversion:

- ``timeout=300``: a bare number of seconds there; a duration with a unit here
  (``timeout=300s``, ``timeout=1.5`` -> ``1500ms``), which is what lint asks
  for. Converted; ``timeout=0`` has no duration here and is listed.
- ``condition="outcome=needs_dod"``: a stage status of the author's choosing,
  which the stage writes to kilroy's status file. Here a stage ends with one of
  our statuses, and a stage's own choice of route is its preferred label. Not
  converted: the prompt that asks for that status must change too, and prompts
  are the author's text. Listed, with what to write.
- ``$KILROY_STAGE_STATUS_PATH`` and other ``$KILROY_`` variables in a prompt:
  kilroy sets them for the stage; attractor does not. Listed.
- A fan-out whose branches meet at the first common node with no fan-in node:
  kilroy joins them there. Listed: where the join goes is the author's call.

Then the whole file is put in canonical form (:func:`format_source`), so the
aliases it uses are spelled our way. Strings and comments are kept as written.
"""

from __future__ import annotations

import re
from dataclasses import field
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

from attractor.dot.conditions import OUTCOME_VALUES
from attractor.dot.dialects import canonical_outcome
from attractor.dot.formatter import Tok, format_source, tokens
from attractor.dot.graph import Graph
from attractor.dot.parser import parse_dot, read_source
from attractor.dot.source import SourcePos
from attractor.dot.transforms import AliasResolution
from attractor.errors import PipelineError
from attractor.valueclass import frozen, mutable

#: The dialects ``migrate`` converts, by the name ``--from`` takes.
DIALECTS = ("kilroy",)


@frozen
class Unconverted:
    """Something the dialect means that attractor cannot be made to mean by rewriting."""

    pos: SourcePos
    what: str
    write: str

    def format_text(self) -> str:
        return f"{self.pos.file}:{self.pos.line}:{self.pos.column}: {self.what}; {self.write}"


@mutable
class Migration:
    """The converted text, what was converted, and what could not be."""

    text: str
    converted: list[str] = field(default_factory=list)
    unconverted: list[Unconverted] = field(default_factory=list)


def migrate_file(path: str | Path, dialect: str) -> Migration:
    """The pipeline file ``path``, written in ``dialect``, converted.

    Raises:
        PipelineError: the file cannot be read or does not parse, or
            ``dialect`` is not one of :data:`DIALECTS`.
    """
    if dialect not in DIALECTS:
        raise PipelineError(f"unknown dialect {dialect!r}; migrate converts: {', '.join(DIALECTS)}")
    text = read_source(path)
    graph = AliasResolution().apply(parse_dot(text, file=str(path)))
    toks, seconds, zeros = _timeouts(tokens(text.replace("\r\n", "\n")), str(path))
    migration = Migration(format_source("".join(t.text for t in toks)))
    if seconds:
        migration.converted.append(
            f"{seconds} timeout(s) in bare seconds written with a unit (timeout=300 -> 300s)"
        )
    migration.unconverted += [
        Unconverted(
            pos,
            "timeout=0 has no duration here (a timeout is longer than zero)",
            "remove it for no timeout, or write the longest the stage may take (timeout=15m)",
        )
        for pos in zeros
    ]
    migration.unconverted += _custom_outcomes(graph)
    migration.unconverted += _status_variables(graph)
    migration.unconverted += _implicit_joins(graph)
    migration.unconverted.sort(key=lambda u: (u.pos.line, u.pos.column))
    return migration


_SECONDS = re.compile(r"\d+(\.\d*)?|\.\d+")


def _timeouts(toks: list[Tok], file: str) -> tuple[list[Tok], int, list[SourcePos]]:
    """``timeout=300`` -> ``timeout=300s`` (``1.5`` -> ``1500ms``), however it is quoted;
    and where a timeout of zero seconds is, which no duration here writes."""
    out = list(toks)
    count = 0
    zeros: list[SourcePos] = []
    for i, tok in enumerate(out):
        if tok.kind not in ("word", "string") or tok.text.strip('"') != "timeout":
            continue
        j = _next(out, i)
        if j is None or out[j].text != "=":
            continue
        k = _next(out, j)
        if k is None or out[k].kind not in ("word", "string"):
            continue
        bare = out[k].text.strip('"')
        if not _SECONDS.fullmatch(bare):
            continue
        duration = _duration(bare)
        if duration is None:
            zeros.append(_position(out, i, file))
            continue
        quote = '"' if out[k].kind == "string" else ""
        out[k] = Tok(out[k].kind, f"{quote}{duration}{quote}")
        count += 1
    return out, count, zeros


def _duration(seconds: str) -> str | None:
    """A number of seconds as a duration (``300s``, ``1500ms``); None for zero."""
    number = Decimal(seconds)
    if number == 0:
        return None
    if number == number.to_integral_value():
        return f"{int(number)}s"
    return f"{(number * 1000).quantize(Decimal(1), ROUND_HALF_UP) or 1}ms"


def _position(toks: list[Tok], k: int, file: str) -> SourcePos:
    before = "".join(t.text for t in toks[:k])
    return SourcePos(file, before.count("\n") + 1, len(before) - before.rfind("\n"))


def _next(toks: list[Tok], i: int) -> int | None:
    j = i + 1
    while j < len(toks) and toks[j].kind in ("space", "newline"):
        j += 1
    return j if j < len(toks) else None


_OUTCOME = re.compile(r'(?<![\w.])outcome\s*!?=\s*"?([A-Za-z_][\w-]*)')


def _custom_outcomes(graph: Graph) -> list[Unconverted]:
    found = []
    for edge in graph.edges():
        for value in _OUTCOME.findall(edge.condition):
            if value in OUTCOME_VALUES or canonical_outcome(value) is not None:
                continue
            found.append(
                Unconverted(
                    edge.pos_of("condition") or edge.pos,
                    f"{edge.source} -> {edge.target} routes on outcome={value}, a status "
                    f"{edge.source} chooses in kilroy",
                    f"ask {edge.source}'s prompt for preferred_label {value} and write "
                    f'condition="preferred_label={value}"',
                )
            )
    return found


_KILROY_VARIABLE = re.compile(r"\$KILROY_[A-Z_]+")


def _status_variables(graph: Graph) -> list[Unconverted]:
    found = []
    for node in graph.nodes():
        names = sorted(set(_KILROY_VARIABLE.findall(node.attrs.get("prompt", ""))))
        if names:
            found.append(
                Unconverted(
                    node.pos_of("prompt") or node.pos,
                    f"the prompt of {node.id} uses {', '.join(names)}, which kilroy sets and "
                    "attractor does not",
                    "rewrite those lines: the stage reports its outcome itself here "
                    "(docs/agent.md), and the run directory is the stage's folder",
                )
            )
    return found


def _implicit_joins(graph: Graph) -> list[Unconverted]:
    found = []
    for node in graph.nodes():
        if node.handler_type != "parallel":
            continue
        after = graph.descendants(node.id)
        if any(graph.node(n).handler_type == "parallel.fan_in" for n in after):
            continue
        found.append(
            Unconverted(
                node.pos,
                f"the branches of fan-out {node.id} join at their first common node in "
                "kilroy; attractor joins them at a fan-in node",
                "add a node with shape=tripleoctagon where they meet and route every "
                "branch into it",
            )
        )
    return found
