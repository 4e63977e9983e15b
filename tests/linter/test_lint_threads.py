"""thread_without_full: a thread id that the node's fidelity makes meaningless."""

from __future__ import annotations

from tests.linter.lintkit import by_rule, lint_body


def test_a_thread_id_without_full_fidelity_is_flagged_at_the_attribute() -> None:
    (warning,) = by_rule(
        lint_body('w [prompt=p, thread_id="main"]\nstart -> w -> exit'), "thread_without_full"
    )
    assert warning.severity == "warning" and warning.node == "w"
    assert "has no effect" in warning.message and warning.fix and 'fidelity="full"' in warning.fix


def test_full_from_the_node_the_graph_or_an_incoming_edge_is_enough() -> None:
    for body in (
        'w [prompt=p, thread_id="main", fidelity="full"]\nstart -> w -> exit',
        'default_fidelity="full"\nw [prompt=p, thread_id="main"]\nstart -> w -> exit',
        'w [prompt=p, thread_id="main"]\nstart -> w [fidelity="full"]\nw -> exit',
    ):
        assert by_rule(lint_body(body), "thread_without_full") == []


def test_an_edge_that_overrides_every_way_in_is_flagged() -> None:
    body = (
        'w [prompt=p, thread_id="t", fidelity="full"]\nstart -> w [fidelity="compact"]\nw -> exit'
    )
    assert len(by_rule(lint_body(body), "thread_without_full")) == 1


def test_a_thread_default_is_reported_once() -> None:
    body = 'node [thread_id="t"]\na [prompt=p]\nb [prompt=q]\nstart -> a -> b -> exit'
    assert len(by_rule(lint_body(body), "thread_without_full")) == 1
