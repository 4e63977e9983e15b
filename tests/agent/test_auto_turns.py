"""max_turns=auto: matches and, just as important, non-matches."""

from __future__ import annotations

import pytest

from attractor.agent.auto_turns import BASE, CAP, allocate, matched_patterns


def _names(prompt: str) -> list[str]:
    return [name for name, _ in matched_patterns(prompt)]


@pytest.mark.parametrize(
    ("prompt", "pattern"),
    [
        ("Implement a new authentication feature", "major_work"),
        ("implement new feature flags", "major_work"),
        ("Implement the export feature for reports", "major_work"),
        ("Build the payment API", "major_work"),
        ("create a REST API for orders", "major_work"),
        ("Develop a new billing service", "major_work"),
        ("Migrate the database layer to PostgreSQL", "major_work"),
        ("migrate to pydantic v2", "major_work"),
        ("Redesign the notification system", "major_work"),
        ("Refactor the authentication system", "refactoring"),
        ("refactor the whole codebase to use anyio", "refactoring"),
        ("Refactor our public API", "refactoring"),
        ("Fix the bug in auth.js", "debugging"),
        ("fix the login crash", "debugging"),
        ("Debug the error in login", "debugging"),
        ("debug this flaky test failure", "debugging"),
        ("First read the config, then update the parser.", "multi_step"),
        ("Read README.md. First, list the files; then summarise them.", "multi_step"),
        ("Step 1: run the tests. Step 2: fix what fails.", "multi_step"),
        ("Analyze the entire codebase for dead code", "whole_codebase_analysis"),
        ("audit the repository for secrets", "whole_codebase_analysis"),
        ("Review the whole system for race conditions", "whole_codebase_analysis"),
        # Still matched with the stricter patterns.
        ("Implement a new cache layer, then test it", "major_work"),
        ("build a REST API server in Go", "major_work"),
        ("Write the orders service.", "major_work"),
        ("migrate the store to Postgres", "major_work"),
        ("Migrate from Flask to FastAPI", "major_work"),
        ("migrate the frontend to react 18", "major_work"),
        ("migrate the build to the latest version of gradle", "major_work"),
        ("redesign the application (it is too slow)", "major_work"),
        ("refactor the billing service to use queues", "refactoring"),
        ("fix the crash when saving", "debugging"),
        ("Fix the error: KeyError in load()", "debugging"),
        ("audit the repo for leaked secrets", "whole_codebase_analysis"),
    ],
)
def test_pattern_matches(prompt: str, pattern: str) -> None:
    assert pattern in _names(prompt)


@pytest.mark.parametrize(
    "prompt",
    [
        "fix the typo",
        "Fix the typo in the README",
        "fix formatting",
        "refactor",
        "refactor this function",
        "analyze this function",
        "analyze this",
        "build docs",
        "build the docs and publish them",
        "implement fix",
        "implement the fix for the parser",
        "create a note",
        "open file",
        "What time is it?",
        "Explain this function",
        "Add a comment here",
        "Find a test file",
        "Print the first line then stop",  # "first" mid-sentence is not a step list
        "the system prompt is in prompts.py",
        "an error message is shown",
        "migrate",
        "debug",
        "prefix the error codes",  # "fix" inside another word
        "the debugger shows the issue",
        # A system-type noun that does not end its phrase names something else.
        "Build the API docs",
        "write the server log summary",
        "Write a backend summary in README",
        "create an api key",
        "write a server-side function",
        "build the server binary",
        "redesign the system prompt",
        "redesign the application icon",
        "refactor the service name string",
        # "implement a new ..." needs a component, not any new thing.
        "implement a new test",
        "implement new line handling in the parser",
        # "migrate ... to" needs a technology, framework or version.
        "Migrate the comment to a new line",
        "Please migrate users to admin role",
        # Text about a fault is not a fault.
        "fix the error message typo",
        "Fix error handling docs",
        "debug output issue formatting",
        # Not the whole codebase, or nothing much to look for.
        "review the repo README",
        "audit the repo for typos in one file",
        "analyze the whole system prompt",
    ],
)
def test_common_words_do_not_match(prompt: str) -> None:
    assert _names(prompt) == []
    assert allocate(prompt).turns == BASE


def test_bonuses_add_up() -> None:
    allocation = allocate("Fix the bug in the parser")
    assert allocation == allocate("Fix the bug in the parser", visit=1)
    assert (allocation.turns, allocation.patterns) == (20, ("debugging",))
    both = allocate("Implement a new cache layer, then fix the crash in the loader")
    assert both.turns == BASE + 10 + 5


def test_reentry_adds_five_from_the_second_visit_and_five_more_from_the_fourth() -> None:
    assert [allocate("say hi", visit=v).turns for v in (1, 2, 3, 4, 7)] == [15, 20, 20, 25, 25]
    assert allocate("say hi", visit=4).patterns == ("reentry", "repeated_reentry")


def test_total_is_capped() -> None:
    prompt = (
        "First implement a new search feature, then refactor the whole codebase, "
        "fix the crash in the indexer and analyze the entire codebase."
    )
    allocation = allocate(prompt, visit=5)
    assert len(allocation.patterns) == 7
    assert allocation.turns == CAP
