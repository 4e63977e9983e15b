from __future__ import annotations

from pathlib import Path

from tests.linter.lintkit import by_rule, lint, lint_body

ROOT = Path(__file__).resolve().parents[2]


def test_reachability_reports_each_island_once_at_its_entry() -> None:
    found = by_rule(
        lint_body("w [prompt=p]; a [prompt=p]; b [prompt=p]\nstart -> w -> exit\na -> b -> exit"),
        "reachability",
    )
    assert [(d.node, d.severity) for d in found] == [("a", "error")]
    assert found[0].message == (
        "node 'a' cannot be reached from the start node, nor can the nodes after it (b)"
    )


def test_separate_islands_and_unreachable_loops_are_one_error_each() -> None:
    body = (
        "w [prompt=p]; a [prompt=p]; b [prompt=p]; c [prompt=p, max_visits=2]; d [prompt=p]\n"
        "start -> w -> exit\na -> exit\nb -> exit\nc -> d -> c\nd -> exit"
    )
    found = by_rule(lint_body(body), "reachability")
    assert [d.node for d in found] == ["a", "b", "c"]
    assert found[2].message.startswith("nodes c, d cannot be reached")


def test_a_dead_end_is_a_terminal_with_a_warning_not_an_error() -> None:
    body = (
        "w [prompt=p]; a [prompt=p]; b [prompt=p]\nstart -> w\n"
        'w -> exit [condition="outcome=success"]\nw -> a [condition="outcome=fail"]\na -> b'
    )
    found = lint_body(body)
    assert by_rule(found, "exit_reachable") == []
    (end,) = by_rule(found, "dead_end")
    assert (end.node, end.severity) == ("b", "warning")
    assert end.message == (
        "node 'b' has no outgoing edge, so the run ends here: "
        "the run succeeds if b succeeds and fails if it fails"
    )


def test_a_closed_loop_is_one_error_naming_the_nodes_before_it() -> None:
    body = (
        "w [prompt=p]; a [prompt=p]; b [prompt=p]; c [prompt=p]\nstart -> w\n"
        'w -> exit [condition="outcome=success"]\nw -> a [condition="outcome=fail"]\n'
        "a -> b -> c -> b"
    )
    (found,) = by_rule(lint_body(body), "exit_reachable")
    assert found.node == "b"
    assert found.message == (
        "nodes b, c loop with no way out to an exit or a dead end, nor have the nodes "
        "before it that lead only here (a); a run that gets here can never finish"
    )


def test_a_dead_end_says_where_a_failure_goes_and_that_goal_gates_wait_for_an_exit() -> None:
    body = (
        "w [prompt=p, goal_gate=true, retry_target=w]; b [prompt=p, retry_target=w]\n"
        'start -> w\nw -> exit [condition="outcome=success"]\nw -> b [condition="outcome=fail"]'
    )
    (end,) = by_rule(lint_body(body), "dead_end")
    assert end.message.endswith(
        "fails if it fails (a failure goes to w instead); "
        "goal gates are checked only at an exit node, not here"
    )
    gate = lint_body('h [shape=hexagon]\nstart -> h\nh -> exit [label="go"]\nh2 [shape=hexagon]\n')
    assert by_rule(gate, "dead_end") == []  # h2 is not reached from the start


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
    # b -> exit on success is a way out: the loop does end, when that condition holds.
    assert "no condition on its edges" not in warning.message
    assert "leaves only when a condition or a chosen label sends it out" in warning.message
    assert 'b -> exit [condition="outcome=success"]' in warning.message
    # A labelled edge out is a way out too: the stage's outcome may name its label.
    labelled = "a [prompt=p]; b [prompt=p]\nstart -> a -> b -> b\nb -> exit [label=Done]"
    (warning,) = by_rule(lint_body(labelled), "unbounded_loop")
    assert 'b -> exit [label="Done"]' in warning.message
    closed = "a [prompt=p]; b [prompt=p]\nstart -> a -> b -> b\na -> exit"
    (warning,) = by_rule(lint_body(closed), "unbounded_loop")
    assert "no condition on its edges, so it never ends by itself" in warning.message
    unconditional = "a [prompt=p]; b [prompt=p]\nstart -> a -> b -> a\nb -> exit"
    (warning,) = by_rule(lint_body(unconditional), "unbounded_loop")
    assert warning.node == "a" and "a, b" in warning.message
    bounded = [
        unconditional.replace("a [prompt=p]", "a [prompt=p, max_visits=3]"),
        unconditional.replace("a [prompt=p]", "a [shape=hexagon, label=Ask]"),
        "default_max_visits=5\n" + unconditional,
        "max_steps=500\n" + unconditional,
    ]
    for body in bounded:
        assert by_rule(lint_body(body), "unbounded_loop") == [], body


def test_a_loop_that_only_conditions_end_is_unbounded() -> None:
    # implement -> tests -> implement on failure: repeats for as long as the tests fail.
    fix_loop = (
        "implement [prompt=p]; tests [shape=parallelogram, tool_command=true]\n"
        "start -> implement -> tests\n"
        'tests -> implement [condition="outcome=fail"]\n'
        'tests -> exit [condition="outcome=success"]'
    )
    (warning,) = by_rule(lint_body(fix_loop), "unbounded_loop")
    assert warning.node == "implement"
    assert "so it repeats for as long as none does" in warning.message
    # Conditions inside the loop, none on the way out: it repeats while they hold.
    inner = fix_loop.replace('tests -> exit [condition="outcome=success"]', "tests -> exit")
    (warning,) = by_rule(lint_body(inner), "unbounded_loop")
    assert "repeats for as long as its edge conditions hold" in warning.message
    assert "max_visits=N to implement" in (warning.fix or "")
    # A goal gate says the run may not exit without it; it does not end the loop.
    gated = fix_loop.replace("tool_command=true", "tool_command=true, goal_gate=true")
    assert len(by_rule(lint_body(gated), "unbounded_loop")) == 1
    limited = fix_loop.replace("implement [prompt=p]", "implement [prompt=p, max_visits=5]")
    assert by_rule(lint_body(limited), "unbounded_loop") == []


def test_a_loop_restart_loop_is_unbounded_until_a_visit_limit_bounds_it() -> None:
    restart = (
        "a [prompt=p]\nstart -> a\n"
        'a -> a [condition="outcome=success", loop_restart=true]\n'
        'a -> exit [condition="outcome=fail"]'
    )
    assert len(by_rule(lint_body(restart), "unbounded_loop")) == 1
    bounded = restart.replace("a [prompt=p]", "a [prompt=p, max_visits=3]")
    assert by_rule(lint_body(bounded), "unbounded_loop") == []


def test_the_readme_example_pipeline_is_bounded_and_lints_clean() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    example = readme.split("```dot\n", 1)[1].split("```", 1)[0]
    found = lint(example)
    assert found == [], found
    unbounded = example.replace("max_visits=5", "")
    assert [d.rule for d in lint(unbounded)] == ["unbounded_loop"]
