"""Prices and costs: the table, its lookup and the cost of a usage."""

from __future__ import annotations

import pytest

from attractor.llm.pricing import ModelPrice, PricedModel, PriceTable, parse_price
from attractor.llm.scripted import ScriptedModel, ScriptedResponse
from attractor.llm.types import Message, ModelRequest, Usage

pytestmark = pytest.mark.anyio


def test_a_dated_model_id_takes_its_family_price_and_the_longest_match_wins() -> None:
    table = PriceTable()
    assert table.price_of("gpt-5-mini-2025-08-07") == table.prices["gpt-5-mini"]
    assert table.price_of("gpt-5-2025-08-07") == table.prices["gpt-5"]
    assert table.price_of("claude-haiku-4-5-20251001") == table.prices["claude-haiku-4-5"]
    # A newer family is not priced as an older one that merely shares a prefix.
    assert table.price_of("gpt-5.4") is None
    assert table.price_of("my-local-model") is None


def test_user_prices_add_models_and_override_built_in_ones() -> None:
    table = PriceTable({"gpt-5": ModelPrice(2.0, 20.0), "local": ModelPrice(0.0, 0.0)})
    assert table.price_of("gpt-5") == ModelPrice(2.0, 20.0)
    assert table.price_of("local") == ModelPrice(0.0, 0.0)
    assert table.price_of("gpt-5-mini") == PriceTable().prices["gpt-5-mini"]


def test_cost_bills_fresh_cached_written_and_output_tokens_at_their_prices() -> None:
    price = ModelPrice(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    usage = Usage(10_000, 1_000, cache_read_tokens=6_000, cache_write_tokens=2_000)
    expected = (2_000 * 3.0 + 6_000 * 0.3 + 2_000 * 3.75 + 1_000 * 15.0) / 1e6
    assert price.cost(usage) == pytest.approx(expected)
    # Without cache prices, cached tokens cost what input costs.
    assert ModelPrice(1.0, 2.0).cost(usage) == pytest.approx((10_000 + 2_000) / 1e6)


def test_costs_add_up_and_an_unpriced_part_adds_nothing() -> None:
    total = Usage(1, 1, cost=0.25) + Usage(2, 2) + Usage(3, 3, cost=0.5)
    assert total.cost == pytest.approx(0.75) and total.total_tokens == 12
    assert (Usage() + Usage()).cost is None
    assert Usage.from_json(total.to_json()) == total


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"input": 1.0}, "prices.m: output is missing"),
        ({"input": 1.0, "output": -2}, "prices.m.output: expected a price of zero or more"),
        ({"input": True, "output": 1}, "prices.m.input: expected a number"),
        ({"input": 1, "output": 1, "cached": 1}, "prices.m: unknown key 'cached'"),
        ("cheap", "prices.m must be a table"),
    ],
)
def test_bad_price_entries_say_what_is_wrong(raw: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_price(raw, "prices.m")


async def test_a_priced_model_puts_the_cost_on_every_answer() -> None:
    scripted = ScriptedModel([ScriptedResponse("hi", usage=Usage(1_000_000, 0))])
    model = PricedModel(scripted, PriceTable({"scripted": ModelPrice(2.0, 8.0)}))
    response = await model.request(ModelRequest((Message.user("hello"),)))
    assert response.usage is not None and response.usage.cost == pytest.approx(2.0)
    assert (model.provider, model.name) == ("scripted", "scripted")
