"""Aliases of other engines' dialects resolve to our names; what we cannot honour is refused."""

from __future__ import annotations

from attractor.linter.prepare import prepare
from tests.linter.lintkit import HEAD, by_rule, lint, lint_body

ALIASED = """digraph T {
    goal="ship it"
    start [shape=Mdiamond]
    exit  [shape=Msquare]
    work [model="m-1", provider="openai", max_agent_turns=7, llm_prompt="Plan $goal"]
    gate [shape=hexagon, default_choice="yes"]
    start -> work -> gate
    gate -> exit [label="yes"]
    gate -> work [label="no"]
    work -> exit [condition="outcome=SUCCEEDED"]
}
"""


def test_aliases_are_read_as_the_canonical_attributes() -> None:
    graph, found = prepare(ALIASED, file="t.dot")
    assert graph is not None
    work, gate = graph.node("work"), graph.node("gate")
    assert work.get("llm_model") == "m-1"
    assert work.get("llm_provider") == "openai"
    assert work.get("max_turns") == 7
    assert work.prompt == "Plan ship it"  # $goal expanded in the aliased prompt
    assert gate.get("human.default_choice") == "yes"
    edge = next(e for e in graph.outgoing("work") if e.target == "exit")
    assert edge.condition == "outcome=success"
    notes = by_rule(found, "alias")
    assert {d.severity for d in notes} == {"style"}
    assert {d.fix for d in notes} == {
        "rename model to llm_model",
        "rename provider to llm_provider",
        "rename max_agent_turns to max_turns",
        "rename llm_prompt to prompt",
        "rename default_choice to human.default_choice",
        "write outcome=success",
    }
    assert not by_rule(found, "unknown_attribute")
    assert (notes[0].file, notes[0].line) == ("t.dot", 5)


def test_an_alias_in_a_node_default_is_reported_once() -> None:
    found = lint_body('node [model="m-1"]\n a\n b\n start -> a -> b -> exit')
    notes = by_rule(found, "alias")
    assert len(notes) == 1 and notes[0].line == 4


def test_the_canonical_attribute_wins_over_its_alias_and_says_so() -> None:
    text = (
        'digraph T { start [shape=Mdiamond]; w [llm_model="a", model="b"];'
        " e [shape=Msquare]; start -> w -> e }"
    )
    graph, found = prepare(text, file="t.dot")
    assert graph is not None and graph.node("w").get("llm_model") == "a"
    (note,) = by_rule(found, "alias")
    assert note.severity == "warning" and "llm_model wins" in note.message


def test_stylesheet_model_property_sets_the_model() -> None:
    text = (
        'digraph T { model_stylesheet="* { model: m-2; }"; start [shape=Mdiamond];'
        " w; e [shape=Msquare]; start -> w -> e }"
    )
    graph, found = prepare(text, file="t.dot")
    assert graph is not None and graph.node("w").get("llm_model") == "m-2"
    assert not by_rule(found, "stylesheet_syntax")
    (note,) = by_rule(found, "alias")
    assert note.severity == "style" and note.fix == "write llm_model: in the stylesheet"


def test_an_attribute_we_cannot_honour_is_an_error_with_a_fix() -> None:
    found = lint_body('w [allowed_tools="Read,Grep"]\n start -> w -> exit')
    (error,) = by_rule(found, "dialect_attribute")
    assert error.severity == "error"
    assert "limits the tools the agent may call" in error.message
    assert "tool_profile" in (error.fix or "")
    assert not by_rule(found, "unknown_attribute")


def test_metadata_keys_are_silent_and_unknown_keys_still_warn() -> None:
    found = lint_body(
        'w [x_owner="me", ui_color="red", "meta.ticket"="T-1", flavour="x"]\n start -> w -> exit'
    )
    unknown = by_rule(found, "unknown_attribute")
    assert [d.message for d in unknown] == ["unknown attribute 'flavour' is ignored"]


def test_outcome_aliases_in_any_case_and_quoted() -> None:
    found = lint_body(
        "w\n start -> w\n"
        ' w -> exit [condition="outcome=Partially_Succeeded"]\n'
        ' w -> exit [condition="outcome = \\"skip\\" && context.outcome=failed"]'
    )
    assert not by_rule(found, "condition_syntax")
    fixes = sorted(d.fix or "" for d in by_rule(found, "alias"))
    # context.outcome is a context key, not the status: left as written.
    assert fixes == ["write outcome=partial_success", "write outcome=skipped"]


def test_unknown_outcome_values_stay_errors() -> None:
    found = lint(
        "digraph T { s [shape=Mdiamond]; e [shape=Msquare];"
        ' s -> e [condition="outcome=needs_dod"] }'
    )
    assert by_rule(found, "condition_syntax")


def test_node_type_is_type_only_for_our_handler_types() -> None:
    found = lint_body(
        'c [node_type="conditional"]; w [is_codergen="true", node_type="stack.observe"]\n'
        "start -> c -> w -> exit\n"
        't [shape=parallelogram, tool_command="true", is_codergen="true"]\n'
        "w -> t -> exit"
    )
    graph, _ = prepare(HEAD + 'c [node_type="conditional"]\nstart -> c -> exit\n}\n')
    assert graph is not None and graph.node("c").handler_type == "conditional"
    assert not by_rule(found, "type_known")
    unknown = {(d.node, d.message) for d in by_rule(found, "unknown_attribute")}
    # is_codergen="true" says what an LLM stage is anyway; on a tool node it does not.
    assert unknown == {
        ("w", "unknown attribute 'node_type' is ignored"),
        ("t", "unknown attribute 'is_codergen' is ignored"),
    }


def test_a_command_on_a_node_that_is_no_tool_node_says_it_never_runs() -> None:
    found = lint_body(
        'w [command="make test"]\nt [shape=parallelogram, command="make"]\nstart -> w -> t -> exit'
    )
    (unused,) = by_rule(found, "tool_command_unused")
    assert unused.node == "w" and unused.severity == "warning"
    assert unused.message == "tool_command on w never runs: its type is codergen, not tool"


def test_a_graph_model_is_every_nodes_default_below_the_stylesheet() -> None:
    text = HEAD + (
        '    model="m-graph"\n    provider="anthropic"\n    max_node_visits=4\n'
        '    model_stylesheet=".big { llm_model: m-big; }"\n'
        '    a [prompt="a"]\n    b [prompt="b", class="big"]\n'
        '    c [prompt="c", llm_model="m-own"]\n'
        "    start -> a -> b -> c -> exit\n}\n"
    )
    graph, found = prepare(text, file="t.dot")
    assert graph is not None
    models = {n: graph.node(n).get("llm_model") for n in "abc"}
    assert models == {"a": "m-graph", "b": "m-big", "c": "m-own"}
    assert graph.node("a").get("llm_provider") == "anthropic"
    assert graph.get("default_max_visits") == 4
    assert {d.fix for d in by_rule(found, "alias")} == {
        "rename model to llm_model",
        "rename provider to llm_provider",
        "rename max_node_visits to default_max_visits",
    }
    assert not by_rule(found, "unknown_attribute")


def test_keys_that_change_the_run_elsewhere_are_errors_naming_the_fix() -> None:
    found = lint(
        HEAD
        + '    g [agent="general", prompt="p"]\n'
        + '    h [ask="Deploy?"]\n'
        + '    s [shape=hexagon, child_graph="child.dot"]\n'
        + '    k [prompt="p", check_cmd="make test"]\n'
        + "    start -> g -> h -> s -> k -> exit\n}\n"
    )
    errors = {d.message.split("'")[1]: d for d in by_rule(found, "dialect_attribute")}
    assert set(errors) == {"agent", "ask", "child_graph", "check_cmd"}
    assert "shape=hexagon" in str(errors["ask"].fix)
    assert "stack.child_dotfile=FILE" in str(errors["child_graph"].fix)
    assert "type=subgraph, dot_file=FILE" in str(errors["child_graph"].fix)
    assert "tool_command" in str(errors["check_cmd"].fix)
    assert errors["child_graph"].line == 6


def test_a_gate_question_is_its_label() -> None:
    text = HEAD + (
        '    r [shape=hexagon, question="Approve?"]\n'
        '    start -> r\n    r -> exit [label="Yes"]\n    r -> start [label="No"]\n}\n'
    )
    graph, found = prepare(text, file="t.dot")
    assert graph is not None and graph.node("r").label == "Approve?"
    assert [d.fix for d in by_rule(found, "alias")] == ["rename question to label"]


def test_fan_out_and_fan_in_types_are_the_parallel_handlers() -> None:
    text = HEAD + (
        "    f [type=fan_out]\n    a [prompt=a]\n    b [prompt=b]\n    j [type=fan_in]\n"
        "    start -> f\n    f -> a -> j\n    f -> b -> j\n    j -> exit\n}\n"
    )
    graph, found = prepare(text, file="t.dot")
    assert graph is not None
    assert (graph.node("f").handler_type, graph.node("j").handler_type) == (
        "parallel",
        "parallel.fan_in",
    )
    notes = {d.message for d in by_rule(found, "alias")}
    assert notes == {
        "'type=fan_out' is read as type=parallel (a parallel fan-out)",
        "'type=fan_in' is read as type=parallel.fan_in (a fan-in)",
    }
    assert not by_rule(found, "type_known")


def test_a_hyphenated_key_must_be_quoted_and_then_says_what_it_meant() -> None:
    (error,) = lint(HEAD + '    a [prompt-ref="#plan"]\n    start -> a -> exit\n}\n')
    assert (error.rule, error.line) == ("syntax", 4)
    assert "a name with '-' must be quoted (Graphviz refuses it unquoted too)" in error.message
    assert error.fix == 'quote it: "prompt-ref"=...'
    text = (
        HEAD
        + '    a ["prompt-ref"="#plan", "max-session-turns"=5]\n'
        + '    b [prompt="p", "thread-id"="t1"]\n    start -> a -> b -> exit\n}\n'
    )
    graph, found = prepare(text, file="t.dot")
    assert graph is not None and graph.node("b").attrs["thread_id"] == "t1"
    errors = {d.message.split("'")[1]: d.fix for d in by_rule(found, "dialect_attribute")}
    assert set(errors) == {"prompt-ref", "max-session-turns"}
    assert 'prompt="@FILE"' in str(errors["prompt-ref"])
    assert "max_turns=N" in str(errors["max-session-turns"])
