"""The conversation's size as compaction counts it, kept from one request to the next."""

from __future__ import annotations

from dataclasses import replace

from attractor.agent.compaction import MARK, SizeTally, compact, estimate_tokens
from attractor.llm.types import Message, ToolCall


def _turn(n: int) -> list[Message]:
    call = ToolCall(id=f"call_{n}", name="list_dir", arguments={"path": "." * n})
    return [Message.assistant(f"turn {n}", (call,)), Message.tool(call, "x" * (40 * n))]


def test_a_kept_tally_says_what_a_fresh_count_says_however_the_list_changed() -> None:
    tally = SizeTally()
    talk = [Message.system("be brief"), Message.user("list the folder")]
    for n in range(1, 30):
        talk += _turn(n)
        assert tally.tokens(talk) == estimate_tokens(talk)
    talk[5] = replace(talk[5], content="short")  # replaced in place, as compaction does
    assert tally.tokens(talk) == estimate_tokens(talk)
    assert tally.tokens(talk[:7]) == estimate_tokens(talk[:7])  # another, shorter list
    assert tally.tokens(talk) == estimate_tokens(talk)


def test_compaction_with_a_kept_tally_compacts_as_without_one() -> None:
    talk = [Message.system("be brief"), Message.user("list the folder")]
    tally = SizeTally()
    kept, fresh = [], []
    for n in range(1, 40):
        talk += _turn(n)
        alone = list(talk)
        kept.append(compact(talk, 6_000, tally))
        fresh.append(compact(alone, 6_000))
        assert talk == alone
    assert kept == fresh
    assert any(done is not None for done in kept)
    assert any(m.content.startswith(MARK) for m in talk)
