from __future__ import annotations

from tests.linter.lintkit import by_rule, lint_body


def test_reachability_reports_each_unreachable_node() -> None:
    found = by_rule(
        lint_body("w [prompt=p]; a [prompt=p]; b [prompt=p]\nstart -> w -> exit\na -> b -> exit"),
        "reachability",
    )
    assert [(d.node, d.severity) for d in found] == [("a", "error"), ("b", "error")]


def test_exit_reachable_finds_traps() -> None:
    found = by_rule(
        lint_body(
            "w [prompt=p]; trap [prompt=p, max_visits=2]\nstart -> w\n"
            'w -> exit [condition="outcome=success"]\n'
            'w -> trap [condition="outcome=fail"]\ntrap -> trap [condition="outcome=fail"]'
        ),
        "exit_reachable",
    )
    assert [(d.node, d.severity) for d in found] == [("trap", "error")]
    assert "can never finish" in found[0].message


def test_fan_in_reachable() -> None:
    body = (
        "fork [shape=component]; a [prompt=p]; b [prompt=p]\nstart -> fork\nfork -> a\nfork -> b\n"
    )
    (missing,) = by_rule(lint_body(body + "a -> exit\nb -> exit"), "fan_in_reachable")
    assert missing.message == 'fan-out node "fork" has no reachable fan-in node'
    joined = body + "join [shape=tripleoctagon]\na -> join\nb -> join\njoin -> exit"
    assert by_rule(lint_body(joined), "fan_in_reachable") == []
    typed = lint_body("fork [type=parallel]\nstart -> fork -> exit")
    assert len(by_rule(typed, "fan_in_reachable")) == 1


def test_unbounded_loop_and_what_bounds_it() -> None:
    loop = (
        'a [prompt=p]; b [prompt=p]\nstart -> a -> b -> a\nb -> exit [condition="outcome=success"]'
    )
    (warning,) = by_rule(lint_body(loop.replace("b -> a", "b -> b")), "unbounded_loop")
    assert warning.node == "b" and warning.severity == "warning"
    unconditional = "a [prompt=p]; b [prompt=p]\nstart -> a -> b -> a\nb -> exit"
    (warning,) = by_rule(lint_body(unconditional), "unbounded_loop")
    assert warning.node == "a" and "a, b" in warning.message
    bounded = [
        unconditional.replace("a [prompt=p]", "a [prompt=p, max_visits=3]"),
        unconditional.replace("a [prompt=p]", "a [prompt=p, goal_gate=true, retry_target=a]"),
        unconditional.replace("a [prompt=p]", "a [shape=hexagon, label=Ask]"),
        "default_max_visits=5\n" + unconditional,
    ]
    for body in bounded:
        assert by_rule(lint_body(body), "unbounded_loop") == [], body
