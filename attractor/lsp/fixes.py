"""Quick fixes: the lint fix applied as an edit, where the fix is mechanical.

Each diagnostic carries its fix text (``data.fix``); the fixes below are those
whose text says exactly what to write: rename an attribute, use another value,
rename a misspelt node id, declare a node, add ``max_visits``, write another
engine's alias (attribute or status) in attractor's spelling, remove an alias
its canonical attribute overrides. Separators in an
attribute list are optional in attractor's DOT, so a missing comma is never a
diagnostic and needs no fix.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lsprotocol import types as lsp

from attractor.lsp.text import id_occurrences, offset_of, position_of, range_of

_ValueRe = r'("(?:[^"\\]|\\.)*"|[^\s,;\]]+)'
#: fix text -> what it says to write.
_RENAME_ATTR = re.compile(r"^rename it to (?P<new>[\w.]+)$")
_USE_VALUE = re.compile(r"^use (?P<key>[\w.]+)=(?P<value>[\w.:\-]+)$")
_RENAME_ID = re.compile(r"^rename '(?P<old>\w+)' to '(?P<new>\w+)'$")
_DECLARE = re.compile(r"^declare it: (?P<decl>\w+ \[.*\])$")
_MAX_VISITS = re.compile(r"^add max_visits=N to (?P<node>\w+)")
#: The alias rule's fixes: our spelling of another engine's attribute or status.
_ALIAS = re.compile(r"^rename (?P<old>[\w.]+) to (?P<new>[\w.]+)$")
_OUTCOME = re.compile(r"^write outcome=(?P<new>\w+)$")
_REMOVE = re.compile(r"^remove (?P<key>[\w.]+)$")

Edits = list[lsp.TextEdit]


def _at(text: str, diagnostic: lsp.Diagnostic) -> int:
    start = diagnostic.range.start
    return offset_of(text, start.line, start.character)


def rename_attribute(text: str, diagnostic: lsp.Diagnostic, match: re.Match[str]) -> Edits:
    start = _at(text, diagnostic)
    key = re.compile(r'"?[\w.]+"?').match(text, start)
    if key is None:
        return []
    return [lsp.TextEdit(range_of(text, start, key.end()), match.group("new"))]


def use_value(text: str, diagnostic: lsp.Diagnostic, match: re.Match[str]) -> Edits:
    key, value = match.group("key"), match.group("value")
    start = _at(text, diagnostic)
    item = re.compile(r'"?' + re.escape(key) + r'"?\s*=\s*' + _ValueRe).match(text, start)
    if item is None:
        return []
    written = value if re.fullmatch(r"\w+", value) else f'"{value}"'
    return [lsp.TextEdit(range_of(text, item.start(1), item.end(1)), written)]


def rename_alias(text: str, diagnostic: lsp.Diagnostic, match: re.Match[str]) -> Edits:
    start = _at(text, diagnostic)
    old = match.group("old")
    key = re.compile(r'"?' + re.escape(old) + r'"?(?=\s*=)').match(text, start)
    if key is None:
        return []
    return [lsp.TextEdit(range_of(text, start, key.end()), match.group("new"))]


def canonical_outcome(text: str, diagnostic: lsp.Diagnostic, match: re.Match[str]) -> Edits:
    written = re.search(r"outcome '([^']+)' is read as", diagnostic.message)
    start = _at(text, diagnostic)
    item = re.compile(r'condition\s*=\s*"((?:[^"\\]|\\.)*)"').match(text, start)
    if written is None or item is None:
        return []
    value = re.compile(r"\boutcome\s*!?=\s*(" + re.escape(written.group(1)) + r")\b")
    found = value.search(text, item.start(1), item.end(1))
    if found is None:
        return []
    return [lsp.TextEdit(range_of(text, found.start(1), found.end(1)), match.group("new"))]


def remove_item(text: str, diagnostic: lsp.Diagnostic, match: re.Match[str]) -> Edits:
    start = _at(text, diagnostic)
    key = re.escape(match.group("key"))
    item = re.compile(r'"?' + key + r'"?\s*=\s*' + _ValueRe + r"[ \t]*[,;]?[ \t]*").match(
        text, start
    )
    if item is None:
        return []
    return [lsp.TextEdit(range_of(text, start, item.end()), "")]


def rename_id(text: str, diagnostic: lsp.Diagnostic, match: re.Match[str]) -> Edits:
    old, new = match.group("old"), match.group("new")
    spans = id_occurrences(text, old)
    return [lsp.TextEdit(range_of(text, at, at + len(old)), new) for at in spans]


def declare(text: str, diagnostic: lsp.Diagnostic, match: re.Match[str]) -> Edits:
    close = text.rfind("}")
    if close < 0:
        return []
    line_start = text.rfind("\n", 0, close) + 1
    indent = re.match(r"[ \t]*", text[line_start:]).group() + "    "  # type: ignore[union-attr]
    where = lsp.Position(*position_of(text, line_start))
    return [lsp.TextEdit(lsp.Range(where, where), f"{indent}{match.group('decl')}\n")]


def add_max_visits(text: str, diagnostic: lsp.Diagnostic, match: re.Match[str]) -> Edits:
    node = match.group("node")
    for at in id_occurrences(text, node):
        after = re.compile(r"[ \t]*(\[)?").match(text, at + len(node))
        assert after is not None
        if text.startswith("->", after.end()) or text[:at].rstrip().endswith("->"):
            continue  # an edge, not the node's statement
        if after.group(1) is None:
            end = at + len(node)
            return [lsp.TextEdit(range_of(text, end, end), " [max_visits=3]")]
        close = _list_end(text, after.end())
        if close < 0:
            return []
        empty = not text[after.end() : close].strip()
        insert = "max_visits=3" if empty else ", max_visits=3"
        body_end = after.end() + len(text[after.end() : close].rstrip())
        return [lsp.TextEdit(range_of(text, body_end, body_end), insert)]
    return []


def _list_end(text: str, start: int) -> int:
    """The offset of the ``]`` closing the list that starts at ``start``."""
    for match in re.compile(r'"(?:[^"\\]|\\.)*"|\]').finditer(text, start):
        if match.group() == "]":
            return match.start()
    return -1


_FIXES: list[tuple[re.Pattern[str], Callable[[str, lsp.Diagnostic, re.Match[str]], Edits], str]] = [
    (_RENAME_ATTR, rename_attribute, "Rename to {new}"),
    (_USE_VALUE, use_value, "Use {key}={value}"),
    (_RENAME_ID, rename_id, "Rename '{old}' to '{new}'"),
    (_DECLARE, declare, "Declare {decl}"),
    (_MAX_VISITS, add_max_visits, "Add max_visits=3 to {node}"),
    (_ALIAS, rename_alias, "Rename {old} to {new}"),
    (_OUTCOME, canonical_outcome, "Write outcome={new}"),
    (_REMOVE, remove_item, "Remove {key}"),
]


def fix_of(diagnostic: lsp.Diagnostic) -> str:
    """The lint fix a diagnostic carries (in ``data``, else its related information)."""
    data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
    if "fix" in data:
        return str(data["fix"] or "")
    for related in diagnostic.related_information or ():
        if related.message.startswith("fix: "):
            return related.message.removeprefix("fix: ")
    return ""


def code_actions(uri: str, text: str, diagnostics: list[lsp.Diagnostic]) -> list[lsp.CodeAction]:
    """A quick fix for each diagnostic whose fix is mechanical."""
    actions = []
    for diagnostic in diagnostics:
        fix = fix_of(diagnostic)
        for pattern, make, title in _FIXES:
            match = pattern.match(fix)
            if match is None:
                continue
            edits = make(text, diagnostic, match)
            if edits:
                actions.append(
                    lsp.CodeAction(
                        title=title.format(**match.groupdict()),
                        kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[diagnostic],
                        edit=lsp.WorkspaceEdit(changes={uri: edits}),
                        is_preferred=True,
                    )
                )
            break
    return actions
