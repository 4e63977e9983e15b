"""Quick fixes, completion, hover, navigation, symbols and formatting over LSP."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types as lsp

from attractor.dot.schema import FIDELITY_MODES, SHAPE_TO_TYPE
from attractor.linter.catalog import explain, find_rule
from attractor.llm.pricing import BUILTIN_PRICES
from attractor.lsp.analysis import lint_text
from tests.lsp.lspkit import Session, session

pytestmark = pytest.mark.anyio


def _apply(text: str, edits: list[lsp.TextEdit]) -> str:
    """``text`` with ``edits`` applied (as an editor does: from the last one back)."""
    lines = text.split("\n")
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)

    def at(pos: lsp.Position) -> int:
        return starts[pos.line] + pos.character

    for edit in sorted(edits, key=lambda e: at(e.range.start), reverse=True):
        text = text[: at(edit.range.start)] + edit.new_text + text[at(edit.range.end) :]
    return text


def _rules(text: str, file: str) -> set[str]:
    return {d.rule for d in lint_text(text, file)[1]}


FIXABLE = """\
digraph p {
    start [shape=Mdiamond]
    exit [shape=Msquare]
    plan [prompt="plan it", max_retrys=2, shape=boxx, fidelity=ful]
    work [prompt="do the work"]
    check [prompt="check it"]
    start -> plan -> work -> check -> plan
    check -> exit [condition="outcome=success"]
    work -> revew -> exit
    revew -> reviews
}
"""


async def _fix_all(s: Session, uri: str, text: str, rule: str) -> str:
    found = [d for d in await s.diagnostics_for(uri) if d.code == rule]
    assert found, rule
    actions = await s.client.text_document_code_action_async(
        lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(uri), found[0].range, lsp.CodeActionContext(found[:1])
        )
    )
    assert actions is not None and len(actions) == 1
    action = actions[0]
    assert isinstance(action, lsp.CodeAction)
    assert action.kind == lsp.CodeActionKind.QuickFix
    assert action.edit is not None and action.edit.changes is not None
    return _apply(text, list(action.edit.changes[uri]))


@pytest.mark.parametrize(
    "rule",
    ["unknown_attribute", "shape_known", "fidelity_valid", "unbounded_loop", "edge_target_exists"],
)
async def test_a_quick_fix_removes_its_finding(tmp_path: Path, rule: str) -> None:
    path = tmp_path / "p.dot"
    path.write_text(FIXABLE, encoding="utf-8")
    async with session() as s:
        fixed = await _fix_all(s, s.open(path), FIXABLE, rule)
    before = [d for d in lint_text(FIXABLE, str(path))[1] if d.rule == rule]
    after = [d for d in lint_text(fixed, str(path))[1] if d.rule == rule]
    assert len(after) == len(before) - 1
    assert lint_text(fixed, str(path))[0] is not None  # still parses


async def test_quick_fix_renames_a_misspelt_node_id_everywhere(tmp_path: Path) -> None:
    text = FIXABLE.replace("    work -> revew -> exit\n    revew -> reviews\n", "") + ""
    text = text.replace("check -> exit [", 'check -> exitt [label="done", ')
    path = tmp_path / "p.dot"
    path.write_text(text, encoding="utf-8")
    async with session() as s:
        uri = s.open(path)
        fixed = await _fix_all(s, uri, text, "edge_target_exists")
    assert "exitt" not in fixed and "check -> exit [" in fixed


ALIASED = """\
digraph p {
    start [shape=Mdiamond]
    exit [shape=Msquare]
    work [prompt="x", model="gpt-5", max_visits=3]
    both [prompt="y", provider="openai", llm_provider="anthropic"]
    start -> work -> both
    both -> exit [condition="outcome=succeeded"]
    both -> work [condition="outcome!=succeeded"]
}
"""


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ('model="gpt-5"', 'llm_model="gpt-5"'),
        ('condition="outcome=succeeded"', 'condition="outcome=success"'),
        ('provider="openai", llm_provider', "llm_provider"),
    ],
)
async def test_a_quick_fix_writes_an_alias_in_our_spelling(
    tmp_path: Path, written: str, expected: str
) -> None:
    path = tmp_path / "p.dot"
    path.write_text(ALIASED, encoding="utf-8")
    line = next(i for i, row in enumerate(ALIASED.split("\n")) if written in row)
    async with session() as s:
        uri = s.open(path)
        found = [
            d
            for d in await s.diagnostics_for(uri)
            if d.code == "alias" and d.range.start.line == line
        ]
        assert len(found) == 1, found
        actions = await s.client.text_document_code_action_async(
            lsp.CodeActionParams(
                lsp.TextDocumentIdentifier(uri), found[0].range, lsp.CodeActionContext(found)
            )
        )
    assert actions is not None and len(actions) == 1
    action = actions[0]
    assert isinstance(action, lsp.CodeAction) and action.edit and action.edit.changes
    fixed = _apply(ALIASED, list(action.edit.changes[uri]))
    assert fixed.split("\n")[line] == ALIASED.split("\n")[line].replace(written, expected, 1)
    alias_lines = [d.line - 1 for d in lint_text(fixed, str(path))[1] if d.rule == "alias"]
    assert alias_lines.count(line) < [
        d.line - 1 for d in lint_text(ALIASED, str(path))[1] if d.rule == "alias"
    ].count(line)


async def _complete(s: Session, uri: str, text: str, marker: str = "|") -> set[str]:
    line = next(i for i, row in enumerate(text.split("\n")) if marker in row)
    character = text.split("\n")[line].index(marker)
    version = s.change(uri, text.replace(marker, ""))
    await s.diagnostics_for(uri, version)
    result = await s.client.text_document_completion_async(
        lsp.CompletionParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line, character))
    )
    assert isinstance(result, lsp.CompletionList)
    return {item.label for item in result.items}


BASE = """\
digraph p {
    model_stylesheet="* { llm_model: gpt-5-mini; }"
    start [shape=Mdiamond]
    exit [shape=Msquare]
    gate [shape=hexagon, label="Review"]
    build [prompt="build", max_visits=3]
    start -> build -> gate
    gate -> exit [label="Approve"]
    gate -> build [label="Fix", condition="context.tests_passed=false"]
    %s
}
"""


async def test_completion_offers_what_may_be_written_at_the_cursor(tmp_path: Path) -> None:
    path = tmp_path / "p.dot"
    path.write_text(BASE % "", encoding="utf-8")
    async with session() as s:
        uri = s.open(path)
        node_names = await _complete(s, uri, BASE % "extra [|]")
        edge_names = await _complete(s, uri, BASE % "build -> exit [|]")
        graph_names = await _complete(s, uri, BASE % "graph [|]")
        shapes = await _complete(s, uri, BASE % "extra [shape=|]")
        fidelity = await _complete(s, uri, BASE % 'extra [fidelity="|"]')
        booleans = await _complete(s, uri, BASE % "extra [goal_gate=|]")
        models = await _complete(s, uri, BASE % "extra [llm_model=|]")
        providers = await _complete(s, uri, BASE % "extra [llm_provider=|]")
        targets = await _complete(s, uri, BASE % 'extra [retry_target="|"]')
        ends = await _complete(s, uri, BASE % "build -> |")
        keys = await _complete(s, uri, BASE % 'build -> exit [condition="|"]')
        outcomes = await _complete(s, uri, BASE % 'build -> exit [condition="outcome=|"]')
    assert {"max_visits", "prompt", "shape", "timeout"} <= node_names
    assert "condition" not in node_names and "goal" not in node_names
    assert {"condition", "weight", "loop_restart", "label"} <= edge_names
    assert "prompt" not in edge_names
    assert {"goal", "default_max_retries", "model_stylesheet"} <= graph_names
    assert shapes == set(SHAPE_TO_TYPE)
    assert fidelity == set(FIDELITY_MODES)
    assert booleans == {"true", "false"}
    assert models == set(BUILTIN_PRICES)
    assert providers == {"openai", "anthropic", "gemini"}
    assert {"start", "exit", "gate", "build"} <= targets
    assert {"start", "exit", "gate", "build"} <= ends
    assert {"outcome=success", "outcome=fail", "preferred_label=Approve"} <= keys
    assert "context.tests_passed" in keys
    assert {"success", "fail", "partial_success", "retry", "skipped"} == outcomes


async def _hover(s: Session, uri: str, line: int, needle: str) -> str:
    character = (BASE % "").split("\n")[line].index(needle) + 1
    result = await s.client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line, character))
    )
    assert result is not None and isinstance(result.contents, lsp.MarkupContent)
    return result.contents.value


async def test_hover_explains_attributes_rules_and_a_nodes_settings(tmp_path: Path) -> None:
    text = (BASE % "").replace("max_visits=3", 'max_visits=3, timeout="5m"')
    text = text.replace("gate -> exit", "gate -> exit_", 1).replace(
        "}\n", "exit_ [shape=boxx]\n}\n"
    )
    path = tmp_path / "p.dot"
    path.write_text(text, encoding="utf-8")
    async with session() as s:
        uri = s.open(path)
        await s.diagnostics_for(uri)
        lines = text.split("\n")

        async def hover(line_of: str, needle: str) -> str:
            line = next(i for i, row in enumerate(lines) if line_of in row)
            result = await s.client.text_document_hover_async(
                lsp.HoverParams(
                    lsp.TextDocumentIdentifier(uri),
                    lsp.Position(line, lines[line].index(needle) + 1),
                )
            )
            assert result is not None and isinstance(result.contents, lsp.MarkupContent)
            return result.contents.value

        attribute = await hover("build [", "max_visits")
        node = await hover("start -> build", "build")
        rule = await hover("exit_ [shape", "shape=boxx")
    assert "**max_visits** (node)" in attribute and "how often the node may be entered" in attribute
    assert "**build** [codergen]" in node
    assert "model: gpt-5-mini (openai" in node  # from the stylesheet
    assert "turns: " in node and "timeout: 5m" in node and "max visits: 3" in node
    shape_known = find_rule("shape_known")
    assert shape_known is not None
    assert explain(shape_known).splitlines()[2] in rule


CHILD = """\
digraph child {
    start [shape=Mdiamond]
    exit [shape=Msquare]
    start -> exit
}
"""
NAVIGATE = """\
digraph p {
    retry_target="build"
    start [shape=Mdiamond]
    exit [shape=Msquare]
    subgraph cluster_work {
        build [prompt="build", max_visits=3]
        test [prompt="test"]
    }
    manage [shape=house, stack.child_dotfile="child.dot"]
    start -> build -> test -> manage -> exit
    test -> build [condition="outcome=fail"]
}
"""


def _pos(text: str, line_of: str, needle: str) -> lsp.Position:
    lines = text.split("\n")
    line = next(i for i, row in enumerate(lines) if line_of in row)
    return lsp.Position(line, lines[line].index(needle) + 1)


async def test_definition_references_and_child_files(tmp_path: Path) -> None:
    (tmp_path / "child.dot").write_text(CHILD, encoding="utf-8")
    path = tmp_path / "p.dot"
    path.write_text(NAVIGATE, encoding="utf-8")
    doc = lsp.TextDocumentIdentifier
    async with session() as s:
        uri = s.open(path)
        await s.diagnostics_for(uri)
        defined = await s.client.text_document_definition_async(
            lsp.DefinitionParams(doc(uri), _pos(NAVIGATE, "test -> build [", "build"))
        )
        child = await s.client.text_document_definition_async(
            lsp.DefinitionParams(doc(uri), _pos(NAVIGATE, "manage [", "child.dot"))
        )
        refs = await s.client.text_document_references_async(
            lsp.ReferenceParams(
                text_document=doc(uri),
                position=_pos(NAVIGATE, "build [prompt", "build"),
                context=lsp.ReferenceContext(include_declaration=True),
            )
        )
    assert isinstance(defined, lsp.Location)
    assert defined.range.start == lsp.Position(5, 8) and defined.range.end == lsp.Position(5, 13)
    assert isinstance(child, lsp.Location)
    assert child.uri == (tmp_path / "child.dot").resolve().as_uri()
    assert refs is not None
    lines = NAVIGATE.split("\n")
    assert sorted((r.range.start.line, r.range.start.character) for r in refs) == [
        (1, lines[1].index("build")),
        (5, 8),
        (9, lines[9].index("build")),
        (10, lines[10].index("build")),
    ]


async def test_document_symbols_are_nodes_inside_their_subgraph(tmp_path: Path) -> None:
    (tmp_path / "child.dot").write_text(CHILD, encoding="utf-8")
    path = tmp_path / "p.dot"
    path.write_text(NAVIGATE, encoding="utf-8")
    async with session() as s:
        uri = s.open(path)
        symbols = await s.client.text_document_document_symbol_async(
            lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri))
        )
    assert symbols is not None
    tree = {
        sym.name: sorted(c.name for c in sym.children or [])
        for sym in symbols
        if isinstance(sym, lsp.DocumentSymbol)
    }
    assert tree == {"cluster_work": ["build", "test"], "start": [], "exit": [], "manage": []}


MESSY = """\
digraph p {
start [shape=Mdiamond label="Start"]
      exit [shape=Msquare]
  work [
  label="Work"
        prompt="line one
  line two stays as written"   ]
   // a comment
start -> work -> exit
}
"""
TIDY = """\
digraph p {
    start [shape=Mdiamond, label="Start"]
    exit [shape=Msquare]
    work [
        label="Work",
        prompt="line one
  line two stays as written"]
    // a comment
    start -> work -> exit
}
"""


async def test_formatting_indents_and_adds_commas(tmp_path: Path) -> None:
    path = tmp_path / "p.dot"
    path.write_text(MESSY, encoding="utf-8")
    async with session() as s:
        uri = s.open(path)
        edits = await s.client.text_document_formatting_async(
            lsp.DocumentFormattingParams(
                lsp.TextDocumentIdentifier(uri), lsp.FormattingOptions(4, True)
            )
        )
        assert edits is not None
        formatted = _apply(MESSY, list(edits))
        s.change(uri, formatted)
        again = await s.client.text_document_formatting_async(
            lsp.DocumentFormattingParams(
                lsp.TextDocumentIdentifier(uri), lsp.FormattingOptions(4, True)
            )
        )
    assert formatted == TIDY
    assert not again  # formatting is stable
    assert _rules(formatted, str(path)) == _rules(MESSY, str(path))


PROMPTED = """\
digraph p {
    start [shape=Mdiamond]
    exit [shape=Msquare]
    work [prompt="@prompts/work.md", max_visits=2]
    gone [prompt="@prompts/none.md"]
    start -> work -> gone -> exit
}
"""


async def test_prompt_files_are_linted_and_reachable_by_definition(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "work.md").write_text("Do the work.\n", encoding="utf-8")
    path = tmp_path / "p.dot"
    path.write_text(PROMPTED, encoding="utf-8")
    async with session() as s:
        uri = s.open(path)
        found = await s.diagnostics_for(uri)
        defined = await s.client.text_document_definition_async(
            lsp.DefinitionParams(
                lsp.TextDocumentIdentifier(uri), _pos(PROMPTED, "work [", "work.md")
            )
        )
    missing = [d for d in found if d.code == "prompt_file"]
    assert len(missing) == 1 and "prompts/none.md" in missing[0].message
    assert missing[0].range.start.line == 4
    assert isinstance(defined, lsp.Location)
    assert defined.uri == (tmp_path / "prompts" / "work.md").resolve().as_uri()


@pytest.mark.parametrize(
    "text", ["", "digraph", 'digraph p {\n    a [prompt="unclosed\n', "digraph p {\n    a -> \n}\n"]
)
async def test_every_request_answers_on_text_that_does_not_parse(tmp_path: Path, text: str) -> None:
    path = tmp_path / "p.dot"
    path.write_text(text, encoding="utf-8")
    doc = lsp.TextDocumentIdentifier
    async with session() as s:
        uri = s.open(path)
        found = await s.diagnostics_for(uri)
        lines = text.split("\n")
        end = lsp.Position(len(lines) - 1, len(lines[-1]))
        await s.client.text_document_completion_async(lsp.CompletionParams(doc(uri), end))
        await s.client.text_document_hover_async(lsp.HoverParams(doc(uri), lsp.Position(0, 0)))
        await s.client.text_document_definition_async(lsp.DefinitionParams(doc(uri), end))
        await s.client.text_document_document_symbol_async(lsp.DocumentSymbolParams(doc(uri)))
        await s.client.text_document_formatting_async(
            lsp.DocumentFormattingParams(doc(uri), lsp.FormattingOptions(4, True))
        )
        # Still serving: a fixed text gets its (empty) diagnostics.
        version = s.change(uri, "digraph p {\n    start [shape=Mdiamond]\n}\n")
        after = await s.diagnostics_for(uri, version)
    assert [d.code for d in found] == ["syntax"]
    assert "syntax" not in {d.code for d in after}
