"""``attractor fmt``: a pipeline rewritten in canonical form, nothing else changed.

The printer works on the text's tokens, not on the parsed graph, so that what
the author wrote survives: comments, blank lines, the order of statements, and
every string byte for byte (prompts above all). What it changes:

- indentation: four spaces per ``{`` or ``[`` level; no trailing blanks;
- attribute lists: ``key=value`` items separated by ``, `` (a ``;`` or a bare
  space between items becomes a comma; a line break stays a line break, with
  the comma at the end of the line);
- aliases (:mod:`attractor.dot.dialects`) written in our canonical form: the
  attribute names (``model`` -> ``llm_model``; ``prompt_file="p.md"`` ->
  ``prompt="@p.md"``), ``type=sub_pipeline`` -> ``type=subgraph``, outcome
  values in conditions (``outcome=succeeded`` -> ``outcome=success``) and
  stylesheet properties (``model:`` -> ``llm_model:``). An alias next to the
  canonical attribute it shadows is left for lint to report;
- order: in an attribute list on one line with no comment, ``shape`` and then
  ``type`` come first (what the node is), the others keep their order;
- a Graphviz keyword written as a key or value (``type=subgraph``) is quoted
  (``type="subgraph"``): attractor reads it either way, Graphviz only quoted.

The result is a fixed point: formatting it again changes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from attractor.dot.dialects import (
    PROPERTY_ALIASES,
    TYPE_ALIASES,
    VALUE_PREFIXES,
    canonical_attribute,
    canonical_condition,
)
from attractor.dot.parser import parse_dot, read_source
from attractor.dot.schema import Scope
from attractor.errors import PipelineError, PipelineSyntaxError
from attractor.valueclass import mutable

_TOKEN = re.compile(
    r'(?P<string>"(?:[^"\\]|\\.)*"?)'
    r"|(?P<comment>//[^\n]*|/\*[\s\S]*?(?:\*/|$)|(?m:^[ \t]*#[^\n]*))"
    r"|(?P<newline>\n)|(?P<space>[ \t\r\f\v]+)|(?P<open>[{\[])|(?P<close>[}\]])"
    r"|(?P<arrow>->)|(?P<punct>[=,;])|(?P<word>[^\s\"{}\[\]=,;]+?(?=->|[\s\"{}\[\]=,;]|$))"
)
INDENT = "    "
#: Attributes that say what a node is: first in a one-line list.
_FIRST = ("shape", "type")
_KEYWORDS = {"node": "node", "edge": "edge", "graph": "graph"}


@mutable
class Tok:
    """One token: its kind (as in :data:`_TOKEN`) and its text."""

    kind: str
    text: str


def tokens(text: str) -> list[Tok]:
    """Every character of ``text`` in a token (joining them gives ``text`` back)."""
    return [Tok(m.lastgroup or "word", m.group()) for m in _TOKEN.finditer(text)]


def format_source(text: str) -> str:
    """``text`` in canonical form (see the module docstring)."""
    toks = _quoted_keywords(_canonical(_joined(tokens(text.replace("\r\n", "\n")))))
    out = _layout(toks)
    return out if out.endswith("\n") else out + "\n"


#: Graphviz's keywords (any letter case): never a bare ID there, so
#: ``type=subgraph`` is a syntax error for Graphviz, though not for attractor.
GRAPHVIZ_KEYWORDS = frozenset({"node", "edge", "graph", "digraph", "subgraph", "strict"})


#: What Graphviz reads as a bare ID: a name (letters, digits, underscores, not starting
#: with a digit) or a number. Anything else must be quoted for it.
_GRAPHVIZ_ID = re.compile(r"[A-Za-z_\x80-\U0010ffff][\w\x80-\U0010ffff]*|-?(?:\.\d+|\d+(?:\.\d*)?)")


def graphviz_text(text: str) -> str:
    """``text`` as Graphviz reads it: a keyword written as an attribute's key or
    value (``type=subgraph``) quoted, and a bare word Graphviz would not take for an
    ID (a dotted key, ``human.default_choice``) quoted; everything else as written.
    A word holding ``:`` (a node's port) or starting with ``<`` (an HTML label) is left
    as it is."""
    out = _quoted_keywords(tokens(text))
    for i, tok in enumerate(out):
        bare = tok.kind == "word" and ":" not in tok.text and not tok.text.startswith("<")
        if bare and not _GRAPHVIZ_ID.fullmatch(tok.text):
            out[i] = Tok("string", f'"{tok.text}"')
    return "".join(t.text for t in out)


def _quoted_keywords(toks: list[Tok]) -> list[Tok]:
    """Keywords in an attribute list, or beside an ``=``, as quoted strings."""
    out = list(toks)
    brackets = 0
    for i, tok in enumerate(out):
        if tok.kind == "open" and tok.text == "[":
            brackets += 1
        elif tok.kind == "close" and tok.text == "]":
            brackets = max(0, brackets - 1)
        elif (
            tok.kind == "word"
            and tok.text.lower() in GRAPHVIZ_KEYWORDS
            and (brackets or _beside_equals(out, i))
        ):
            out[i] = Tok("string", f'"{tok.text}"')
    return out


def _beside_equals(toks: list[Tok], i: int) -> bool:
    before = i - 1
    while before >= 0 and toks[before].kind in ("space", "newline"):
        before -= 1
    return (before >= 0 and toks[before].text == "=") or _next_is_equals(toks, i)


def _joined(toks: list[Tok]) -> list[Tok]:
    """A concatenation of strings (``"a" + "b"``) as one value token, kept as written."""
    out: list[Tok] = []
    i = 0
    while i < len(toks):
        tok, i = toks[i], i + 1
        while tok.kind in ("string", "concat"):
            plus = _skip_blank(toks, i)
            if plus >= len(toks) or toks[plus].text != "+":
                break
            second = _skip_blank(toks, plus + 1)
            if second >= len(toks) or toks[second].kind != "string":
                break
            tok = Tok("concat", "".join(t.text for t in [tok, *toks[i : second + 1]]))
            i = second + 1
        out.append(tok)
    return out


def _skip_blank(toks: list[Tok], i: int) -> int:
    while i < len(toks) and toks[i].kind in ("space", "newline"):
        i += 1
    return i


# -- canonical names -------------------------------------------------------------


def _plain(tok: Tok) -> str | None:
    """The text of a word, or of a string without escapes; None otherwise."""
    if tok.kind == "word":
        return tok.text
    if tok.kind == "string" and len(tok.text) >= 2 and "\\" not in tok.text:
        return tok.text[1:-1]
    return None


def _like(tok: Tok, value: str) -> Tok:
    """``value`` written as ``tok`` was: quoted when it was, or when it must be."""
    bare = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", value) is not None
    if tok.kind == "word" and bare and value.lower() not in GRAPHVIZ_KEYWORDS:
        return Tok("word", value)
    return Tok("string", '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"')


def _canonical(toks: list[Tok]) -> list[Tok]:
    out: list[Tok] = []
    stmt: list[Tok] = []  # the significant tokens of the statement so far
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok.kind == "open" and tok.text == "[":
            end = _closing(toks, i)
            out += [tok, *_attr_list(toks[i + 1 : end], _scope(stmt))]
            if end < len(toks):
                out.append(toks[end])
            stmt = []
            i = end + 1
            continue
        if tok.kind in ("word", "string") and _next_is_equals(toks, i):
            key = _plain(tok)
            j = _after_equals(toks, i)
            if key is not None and j < len(toks) and toks[j].kind in ("word", "string", "concat"):
                new_key, value = _graph_attribute(key, toks[j])
                out += [Tok("word", new_key) if new_key != key else tok, *toks[i + 1 : j], value]
                stmt = []
                i = j + 1
                continue
        if tok.kind in ("punct", "open", "close") and tok.text in ";{}":
            stmt = []
        elif tok.kind in ("word", "string", "arrow"):
            if tok.kind != "arrow" and stmt and stmt[-1].kind != "arrow":
                stmt = []  # an id after an id: a new statement
            stmt.append(tok)
        out.append(tok)
        i += 1
    return out


def _closing(toks: list[Tok], start: int) -> int:
    depth = 0
    for j in range(start, len(toks)):
        if toks[j].kind == "open" and toks[j].text == "[":
            depth += 1
        elif toks[j].kind == "close" and toks[j].text == "]":
            depth -= 1
            if depth == 0:
                return j
    return len(toks)


def _next_is_equals(toks: list[Tok], i: int) -> bool:
    j = i + 1
    while j < len(toks) and toks[j].kind in ("space", "newline"):
        j += 1
    return j < len(toks) and toks[j].text == "="


def _after_equals(toks: list[Tok], i: int) -> int:
    j = i + 1
    while toks[j].text != "=":
        j += 1
    j += 1
    while j < len(toks) and toks[j].kind in ("space", "newline"):
        j += 1
    return j


def _scope(stmt: list[Tok]) -> Scope:
    if len(stmt) == 1 and stmt[0].kind == "word" and stmt[0].text in _KEYWORDS:
        return _KEYWORDS[stmt[0].text]  # type: ignore[return-value]
    return "edge" if any(t.kind == "arrow" for t in stmt) else "node"


def _graph_attribute(key: str, value: Tok) -> tuple[str, Tok]:
    """A ``key = value`` statement of a graph: its canonical key and value."""
    text = _plain(value)
    canonical = canonical_attribute("graph", key, text or "") or key
    if canonical == "model_stylesheet" and value.kind == "string" and "\\" not in value.text:
        return canonical, Tok("string", _stylesheet(value.text))
    return canonical, value


_PROPERTY = re.compile(r"([{;]\s*)(" + "|".join(map(re.escape, PROPERTY_ALIASES)) + r")(\s*:)")


def _stylesheet(text: str) -> str:
    return _PROPERTY.sub(lambda m: m.group(1) + PROPERTY_ALIASES[m.group(2)] + m.group(3), text)


@mutable
class _Item:
    key: Tok
    between: list[Tok]  # from the key to the value: spaces and '='
    value: Tok | None


def _attr_list(inner: list[Tok], scope: Scope) -> list[Tok]:
    """The tokens of one attribute list (between ``[`` and ``]``), canonical."""
    parts = list(_parts(inner))
    items = [p for p in parts if isinstance(p, _Item)]
    keys = {_plain(it.key) for it in items}
    kind = _node_kind(items)
    for item in items:
        _rename(item, scope, keys, kind)
    simple = all(isinstance(p, _Item) or p.kind in ("space", "punct") for p in parts) and len(
        keys
    ) == len(items)
    if simple and len(items) > 1:
        ranked = sorted(items, key=lambda it: _rank(_plain(it.key)))
        parts = _interleave(parts, ranked)
    flat: list[Tok] = []
    for part in parts:
        if isinstance(part, _Item):
            flat += [part.key, *part.between, *([part.value] if part.value else [])]
        elif part.kind == "punct" and part.text == ";":
            flat.append(Tok("punct", ","))
        else:
            flat.append(part)
    return flat


def _parts(inner: list[Tok]) -> Iterator[_Item | Tok]:
    i = 0
    while i < len(inner):
        tok = inner[i]
        if tok.kind in ("word", "string"):
            j = i + 1
            while j < len(inner) and inner[j].kind in ("space", "newline"):
                j += 1
            if j < len(inner) and inner[j].text == "=":
                k = j + 1
                while k < len(inner) and inner[k].kind in ("space", "newline"):
                    k += 1
                if k < len(inner) and inner[k].kind in ("word", "string", "concat"):
                    yield _Item(tok, inner[i + 1 : k], inner[k])
                    i = k + 1
                    continue
            yield _Item(tok, [], None)
            i += 1
            continue
        yield tok
        i += 1


def _node_kind(items: list[_Item]) -> str:
    """``subgraph`` when the list makes a sub-pipeline node (``path`` names its file)."""
    values = {_plain(it.key): _plain(it.value) for it in items if it.value is not None}
    kind = values.get("type") or values.get("node_type") or ""
    kind = TYPE_ALIASES.get(kind, kind)
    return "subgraph" if kind == "subgraph" or values.get("shape") == "folder" else kind


def _rename(item: _Item, scope: Scope, keys: set[str | None], kind: str) -> None:
    key = _plain(item.key)
    if key is None or item.value is None:
        return
    # None when the value holds an escape or is a concatenation: the key is
    # renamed all the same (only ``node_type`` depends on its value).
    value = _plain(item.value)
    canonical = canonical_attribute(scope, key, value or "")
    if canonical is None and scope == "node" and key == "path" and kind == "subgraph":
        canonical = "dot_file"
    if canonical is not None and canonical not in keys:
        item.key = Tok("word", canonical)
        prefix = VALUE_PREFIXES.get((scope, key), "")
        if prefix:
            item.value = _prefixed(item.value, value, prefix)
        key = canonical
    if value is None:
        return
    if key == "type" and value in TYPE_ALIASES:
        item.value = _like(item.value, TYPE_ALIASES[value])
    elif key == "condition" and item.value.kind == "string":
        new, found = canonical_condition(value)
        if found:
            item.value = Tok("string", '"' + new + '"')
    elif key == "model_stylesheet" and item.value.kind == "string":
        item.value = Tok("string", _stylesheet(item.value.text))


def _prefixed(tok: Tok, value: str | None, prefix: str) -> Tok:
    """``tok``'s value with ``prefix`` in front (once), its escapes kept as written."""
    if value is not None:
        return tok if value.startswith(prefix) else _like(Tok("string", ""), prefix + value)
    # A quoted string (or the first of a concatenation): the prefix goes after
    # its opening quote, which leaves every escape as the author wrote it.
    if tok.text[1:].startswith(prefix):
        return tok
    return Tok(tok.kind, tok.text[0] + prefix + tok.text[1:])


def _rank(key: str | None) -> int:
    return _FIRST.index(key) if key in _FIRST else len(_FIRST)


def _interleave(parts: list[_Item | Tok], ranked: list[_Item]) -> list[_Item | Tok]:
    """``parts`` with its items replaced, in order, by ``ranked``."""
    queue = iter(ranked)
    return [next(queue) if isinstance(p, _Item) else p for p in parts]


# -- layout ----------------------------------------------------------------------


def _layout(toks: list[Tok]) -> str:
    """Indentation by nesting, ``key=value`` and ``, `` inside attribute lists."""
    printer = _Printer()
    for tok in toks:
        if tok.kind == "newline":
            printer.newline()
        elif tok.kind == "space":
            printer.space(tok.text.replace("\r", ""))
        else:
            printer.token(tok.kind, tok.text)
    return "\n".join(_indented(printer.lines, printer.starts, printer.closes, printer.aligned))


class _Printer:
    """The output lines, as token texts, and what the indentation needs to know."""

    def __init__(self) -> None:
        self.lines: list[list[str]] = [[]]
        self.starts: list[int] = [0]  # nesting depth at the start of each line
        self.closes: list[bool] = [False]  # the line starts with a closer
        #: The indentation a line inside an attribute list was written with ("" else).
        self.aligned: list[str] = [""]
        self.depth = self.brackets = 0
        self.value_at: tuple[int, int] | None = None  # where a list item's value ended
        self.after_equals = False

    def newline(self) -> None:
        self.lines.append([])
        self.starts.append(self.depth)
        self.closes.append(False)
        self.aligned.append("")

    def space(self, text: str) -> None:
        line = self.lines[-1]
        if not line and self.brackets:
            self.aligned[-1] = text
        if line and not self.brackets:  # leading blanks are the indentation
            line.append(text)
        elif line and line[-1] not in ("=", "[", " "):
            line.append(" ")

    def token(self, kind: str, text: str) -> None:
        line = self.lines[-1]
        if self.brackets and kind == "punct" or kind == "close" and text == "]":
            while line and line[-1] == " ":
                line.pop()  # no blank before '=', ',' or ']' ('a }' keeps its blank)
        if kind == "comment" and not line:
            text = text.lstrip()
        if not line and kind == "close":
            self.closes[-1] = True
        self._nest(kind, text)
        if self.brackets and kind in ("word", "string", "concat"):
            if self.after_equals:
                self.after_equals = False
                line.append(text)
                self.value_at = (len(self.lines) - 1, len(line))
                return
            self._comma_before_key()
        elif kind == "punct" and text in ",;":
            self.value_at = None
        self.after_equals = kind == "punct" and text == "="
        line.append(text)
        if self.brackets and kind == "punct" and text == ",":
            line.append(" ")

    def _nest(self, kind: str, text: str) -> None:
        if kind == "open":
            self.depth += 1
            self.brackets += text == "["
        elif kind == "close":
            self.depth = max(0, self.depth - 1)
            self.brackets = max(0, self.brackets - (text == "]"))
            self.value_at = None

    def _comma_before_key(self) -> None:
        """A key right after a value: a comma goes between them."""
        if self.value_at is not None:
            row, col = self.value_at
            self.lines[row].insert(col, ",")
            line = self.lines[-1]
            if row == len(self.lines) - 1 and (not line or line[-1] != " "):
                line.insert(col + 1, " ")
        self.value_at = None


def _indented(
    lines: list[list[str]], starts: list[int], closes: list[bool], aligned: list[str]
) -> Iterator[str]:
    """Each line indented by its nesting; a line inside an attribute list keeps
    the deeper indentation it was written with (aligned under its ``[``)."""
    for parts, depth_at, closing, written in zip(lines, starts, closes, aligned, strict=True):
        body = "".join(parts).rstrip()
        indent = INDENT * max(0, depth_at - closing)
        if len(written.expandtabs(4)) > len(indent) and not closing:
            indent = written
        yield indent + body if body else ""


def format_file(path: str | Path) -> tuple[str, str]:
    """The text of the pipeline file ``path`` and its canonical form.

    Raises:
        PipelineError: the file cannot be read, or does not parse (a file is
            formatted only once it parses: ``attractor lint`` says where).
    """
    text = read_source(path)
    parse_dot(text, file=str(path))  # raises PipelineSyntaxError with file:line
    formatted = format_source(text)
    try:
        parse_dot(formatted, file=str(path))
    except PipelineSyntaxError as error:  # a bug of this printer: never write it
        raise PipelineError(
            f"{path}: the formatted text would not parse ({error.message} at line "
            f"{error.line}); the file is left as it is, please report this"
        ) from None
    return text, formatted
