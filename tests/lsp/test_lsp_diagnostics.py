"""Diagnostics as you type: the same findings as ``attractor lint``, over LSP."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp

from attractor.linter.base import closed_handler_types
from attractor.linter.prepare import prepare
from tests.lsp.lspkit import session

pytestmark = pytest.mark.anyio

BROKEN = """\
digraph p {
    start [shape=Mdiamond]
    exit [shape=Msquare]
    plan [prompt="plan it", max_retrys=2, shape=boxx]
    start -> plan -> exit
}
"""
FIXED = BROKEN.replace("max_retrys", "max_retries").replace("boxx", "box")


def _lint(path: Path) -> list[tuple[str, int, int, str | None]]:
    with closed_handler_types():
        found = prepare(path, file=str(path))[1]
    return [(d.rule, d.line - 1, d.column - 1, d.fix) for d in found]


async def test_diagnostics_are_lints_findings_with_code_range_fix_and_link(tmp_path: Path) -> None:
    path = tmp_path / "p.dot"
    path.write_text(BROKEN, encoding="utf-8")
    async with session() as s:
        found = await s.diagnostics_for(s.open(path))
    got = [(str(d.code), d.range.start.line, d.range.start.character, _fix(d)) for d in found]
    assert sorted(got) == sorted(_lint(path))
    shape = next(d for d in found if d.code == "shape_known")
    assert shape.severity == lsp.DiagnosticSeverity.Error
    # The range covers what is wrong, not one character.
    line = BROKEN.splitlines()[shape.range.start.line]
    assert line[shape.range.start.character : shape.range.end.character] == "shape=boxx"
    assert shape.code_description is not None
    assert shape.code_description.href.endswith("rules.md#shape_known")
    assert shape.source == "attractor"


def _fix(diagnostic: lsp.Diagnostic) -> str | None:
    for related in diagnostic.related_information or ():
        if related.message.startswith("fix: "):
            return related.message.removeprefix("fix: ")
    return None


async def test_diagnostics_follow_the_text_being_typed(tmp_path: Path) -> None:
    path = tmp_path / "p.dot"
    path.write_text(BROKEN, encoding="utf-8")
    async with session() as s:
        uri = s.open(path)
        assert {d.code for d in await s.diagnostics_for(uri)} >= {"shape_known"}
        # Keystrokes in a burst: the last text is what gets linted (the file on disk
        # still has the mistakes).
        for end in range(len("max_retries"), 0, -3):
            s.change(uri, FIXED.replace("max_retries", "max_retries"[:end]))
        version = s.change(uri, FIXED)
        assert await s.diagnostics_for(uri, version) == []
        version = s.change(uri, FIXED.replace("{", "{\n    a [label=", 1))
        syntax = await s.diagnostics_for(uri, version)
    assert [d.code for d in syntax] == ["syntax"]


CHILD_BROKEN = """\
digraph child {
    start [shape=Mdiamond]
    exit [shape=Msquare]
    work [prompt="w", shape=boxx]
    start -> work -> exit
}
"""
PARENT = """\
digraph parent {
    start [shape=Mdiamond]
    exit [shape=Msquare]
    manage [shape=house, stack.child_dotfile="child.dot"]
    start -> manage -> exit
}
"""


async def test_a_child_pipelines_errors_show_on_the_attribute_naming_it(tmp_path: Path) -> None:
    (tmp_path / "child.dot").write_text(CHILD_BROKEN, encoding="utf-8")
    parent = tmp_path / "parent.dot"
    parent.write_text(PARENT, encoding="utf-8")
    async with session() as s:
        parent_uri = s.open(parent)
        found = await s.diagnostics_for(parent_uri)
        child = [d for d in found if "child.dot" in d.message]
        assert [d.code for d in child] == ["shape_known"]
        line = PARENT.splitlines()[child[0].range.start.line]
        written = line[child[0].range.start.character : child[0].range.end.character]
        assert written == 'stack.child_dotfile="child.dot"'
        related = child[0].related_information or []
        assert related[0].location.uri == (tmp_path / "child.dot").resolve().as_uri()
        column = CHILD_BROKEN.splitlines()[3].index("shape=boxx")
        assert related[0].location.range.start == lsp.Position(3, column)
        # The child open in the editor and fixed (not saved): the parent sees the buffer.
        child_uri = s.open(tmp_path / "child.dot", CHILD_BROKEN.replace("boxx", "box"))
        await s.diagnostics_for(child_uri)
        version = s.change(parent_uri, PARENT + "\n")
        found = await s.diagnostics_for(parent_uri, version)
    assert not [d for d in found if "child.dot" in d.message]
