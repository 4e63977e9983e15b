"""What a request costs: a price table per model, and the cost of one :class:`Usage`.

Prices are US dollars per million tokens. The built-in table holds the providers'
published list prices for common models at the time of writing; nothing is ever
fetched. A user adds or corrects models in the config file (``[prices.MODEL]``),
and a model found in neither has no cost (``Usage.cost`` stays None).

A model id matches its own entry, else the longest entry it starts with followed
by ``-`` (``gpt-5-mini-2025-08-07`` takes the ``gpt-5-mini`` price).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from attractor.llm.types import Model, ModelRequest, ModelResponse, Usage
from attractor.valueclass import frozen

PER = 1_000_000
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")


@frozen
class ModelPrice:
    """US dollars per million tokens; cache prices default to the input price."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage`` at this price."""
        read = usage.cache_read_tokens
        written = usage.cache_write_tokens
        fresh = max(0, usage.input_tokens - read - written)
        cache_read = self.input if self.cache_read is None else self.cache_read
        cache_write = self.input if self.cache_write is None else self.cache_write
        dollars = (
            fresh * self.input
            + read * cache_read
            + written * cache_write
            + usage.output_tokens * self.output
        )
        return dollars / PER


def _p(inp: float, out: float, read: float, write: float | None = None) -> ModelPrice:
    return ModelPrice(inp, out, read, inp if write is None else write)


#: List prices (USD per million tokens) as published by the providers in late 2025.
BUILTIN_PRICES: dict[str, ModelPrice] = {
    # Anthropic: cache writes (5-minute) cost 1.25x input, cache reads 0.1x.
    "claude-opus-4-5": _p(5.0, 25.0, 0.5, 6.25),
    "claude-opus-4-1": _p(15.0, 75.0, 1.5, 18.75),
    "claude-opus-4": _p(15.0, 75.0, 1.5, 18.75),
    "claude-sonnet-4-5": _p(3.0, 15.0, 0.3, 3.75),
    "claude-sonnet-4": _p(3.0, 15.0, 0.3, 3.75),
    "claude-3-7-sonnet": _p(3.0, 15.0, 0.3, 3.75),
    "claude-haiku-4-5": _p(1.0, 5.0, 0.1, 1.25),
    "claude-3-5-haiku": _p(0.8, 4.0, 0.08, 1.0),
    # OpenAI: caching is automatic; writes cost nothing extra.
    "gpt-5": _p(1.25, 10.0, 0.125),
    "gpt-5-mini": _p(0.25, 2.0, 0.025),
    "gpt-5-nano": _p(0.05, 0.4, 0.005),
    "gpt-4.1": _p(2.0, 8.0, 0.5),
    "gpt-4.1-mini": _p(0.4, 1.6, 0.1),
    "gpt-4.1-nano": _p(0.1, 0.4, 0.025),
    "gpt-4o": _p(2.5, 10.0, 1.25),
    "gpt-4o-mini": _p(0.15, 0.6, 0.075),
    "o3": _p(2.0, 8.0, 0.5),
    "o4-mini": _p(1.1, 4.4, 0.275),
    # Google: prompts up to 200k tokens; implicit cache hits are discounted.
    "gemini-2.5-pro": _p(1.25, 10.0, 0.125),
    "gemini-2.5-flash": _p(0.3, 2.5, 0.03),
    "gemini-2.5-flash-lite": _p(0.1, 0.4, 0.01),
}


class PriceTable:
    """Prices by model id: the built-in table overlaid with the user's entries."""

    def __init__(self, extra: Mapping[str, ModelPrice] | None = None) -> None:
        self.prices = {**BUILTIN_PRICES, **(extra or {})}

    def price_of(self, model: str) -> ModelPrice | None:
        """The price of ``model``: its own entry, else the longest matching prefix."""
        name = model.strip()
        if name in self.prices:
            return self.prices[name]
        # A dated or suffixed id ("claude-sonnet-4-5-20250929") takes its family's price.
        matches = [key for key in self.prices if name.startswith(key + "-")]
        return self.prices[max(matches, key=len)] if matches else None

    def priced(self, usage: Usage | None, model: str) -> Usage | None:
        """``usage`` with its cost filled in, when the model has a price."""
        if usage is None:
            return None
        price = self.price_of(model)
        return usage if price is None else replace(usage, cost=price.cost(usage))


def parse_price(raw: Any, where: str) -> ModelPrice:
    """One ``[prices.MODEL]`` table; raises ValueError naming ``where`` and the key."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where} must be a table like {{input = 3.0, output = 15.0}}")
    unknown = sorted(set(raw) - set(PRICE_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(PRICE_KEYS)})")
    values: dict[str, float] = {}
    for key in PRICE_KEYS:
        value = raw.get(key)
        if value is None:
            if key in ("input", "output"):
                raise ValueError(f"{where}: {key} is missing (US dollars per million tokens)")
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"{where}.{key}: expected a number of US dollars per million tokens")
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{where}.{key}: expected a price of zero or more")
        values[key] = float(value)
    return ModelPrice(**values)


class PricedModel:
    """A :class:`~attractor.llm.types.Model` whose answers carry their cost.

    Wraps another model; every response's usage gets its cost from ``prices``
    (by the model id the provider reports, else the id asked for).
    """

    def __init__(self, model: Model, prices: PriceTable) -> None:
        self.model = model
        self.prices = prices

    @property
    def provider(self) -> str:
        return self.model.provider

    @property
    def name(self) -> str:
        return self.model.name

    def price(self) -> ModelPrice | None:
        """The price of the wrapped model, None when the table has none."""
        return self.prices.price_of(self.model.name)

    async def request(self, request: ModelRequest) -> ModelResponse:
        response = await self.model.request(request)
        if response.usage is None:
            return response
        usage = self.prices.priced(response.usage, self.model.name)
        if usage is not None and usage.cost is None and response.model:
            usage = self.prices.priced(response.usage, response.model)
        return replace(response, usage=usage)

    async def aclose(self) -> None:
        await self.model.aclose()
