from __future__ import annotations

from attractor.linter.base import closed_handler_types, register_known_type
from tests.linter.lintkit import by_rule, lint, lint_body

OK = "w [label=W, prompt=p]\nstart -> w -> exit"


def test_clean_pipeline_has_no_diagnostics() -> None:
    assert lint_body(OK) == []


def test_start_node_missing_and_multiple() -> None:
    missing = by_rule(lint("digraph G {\n a [prompt=p]; e [shape=Msquare]; a -> e }"), "start_node")
    assert [(d.severity, d.line, d.column) for d in missing] == [("error", 1, 1)]
    assert missing[0].fix == "add a node: start [shape=Mdiamond]"
    two = by_rule(lint_body(OK + "\nb [shape=Mdiamond]; b -> w"), "start_node")
    assert [d.node for d in two] == ["b"]


def test_start_found_by_id_when_no_shape() -> None:
    found = lint("digraph G { start; exit; w [prompt=p]; start -> w -> exit }")
    assert by_rule(found, "start_node") == [] and by_rule(found, "terminal_node") == []


def test_terminal_node_missing_is_an_error_and_several_exits_are_fine() -> None:
    none = lint("digraph G { start [shape=Mdiamond]; w [prompt=p]; start -> w }")
    assert len(by_rule(none, "terminal_node")) == 1
    two = lint_body(OK + '\nend2 [shape=Msquare]; w -> end2 [condition="outcome=fail"]')
    assert by_rule(two, "terminal_node") == [] and by_rule(two, "exit_reachable") == []


def test_start_no_incoming_and_exit_no_outgoing_point_at_the_edge() -> None:
    found = lint_body(OK + '\nw -> start [condition="outcome=fail"]\nexit -> w')
    (incoming,) = by_rule(found, "start_no_incoming")
    assert (incoming.edge, incoming.line, incoming.column) == (("w", "start"), 6, 1)
    (outgoing,) = by_rule(found, "exit_no_outgoing")
    assert outgoing.edge == ("exit", "w") and outgoing.line == 7


def test_edge_target_exists_warns_for_undeclared_and_errors_for_typos() -> None:
    found = by_rule(
        lint_body("implement [prompt=p]\nstart -> implment -> exit\nstart -> implement -> side"),
        "edge_target_exists",
    )
    typo, undeclared = found
    assert (typo.severity, typo.node, typo.edge) == ("error", "implment", ("start", "implment"))
    assert "did you mean 'implement'" in typo.message
    assert (undeclared.severity, undeclared.node) == ("warning", "side")
    assert undeclared.fix is not None and undeclared.fix.startswith("declare it: side")


def test_duplicate_node_warns_at_the_repeat() -> None:
    (dup,) = by_rule(lint_body(OK + "\nw [timeout=5m]"), "duplicate_node")
    assert (dup.severity, dup.node, dup.line) == ("warning", "w", 6)
    assert "first at line 4" in dup.message


def test_retry_targets_must_exist() -> None:
    found = by_rule(
        lint(
            "digraph G { retry_target=nowhere\n start [shape=Mdiamond]; exit [shape=Msquare]\n"
            " w [prompt=p, fallback_retry_target=w2]; start -> w -> exit }"
        ),
        "retry_target_exists",
    )
    assert [(d.node, d.line, d.severity) for d in found] == [
        (None, 1, "warning"),
        ("w", 3, "warning"),
    ]
    assert found[1].fix == "use fallback_retry_target=w"


def test_goal_gate_has_retry() -> None:
    body = "w [prompt=p, goal_gate=true]\nstart -> w -> exit"
    (warning,) = by_rule(lint_body(body), "goal_gate_has_retry")
    assert (warning.node, warning.severity) == ("w", "warning")
    assert (
        by_rule(lint_body(body.replace("true]", "true, retry_target=w]")), "goal_gate_has_retry")
        == []
    )
    assert by_rule(lint_body("retry_target=w\n" + body), "goal_gate_has_retry") == []


def test_type_known_and_registering_a_type() -> None:
    body = "w [prompt=p, type=my.custom]\nstart -> w -> exit"
    # The library: the program may still register a handler, so a warning.
    (warning,) = by_rule(lint_body(body), "type_known")
    assert warning.severity == "warning" and warning.column == 14
    assert "register a handler for it before the run" in warning.message
    # Where no handler can be registered (the command line): an error.
    with closed_handler_types():
        (error,) = by_rule(lint_body(body), "type_known")
    assert error.severity == "error"
    assert "no handler can be registered for it from the command line" in error.message
    register_known_type("my.custom")
    assert by_rule(lint_body(body), "type_known") == []
    with closed_handler_types():
        assert by_rule(lint_body(body), "type_known") == []
