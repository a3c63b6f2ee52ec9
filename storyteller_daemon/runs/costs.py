"""Turning token counts into money with the configured price table."""

from __future__ import annotations

from collections.abc import Mapping

from storyteller_daemon.agent.model import Usage
from storyteller_daemon.config import ModelPrice


def price_for(prices: Mapping[str, ModelPrice], model: str) -> ModelPrice | None:
    """The price of `model`: an exact entry, else the longest matching prefix (dated names)."""
    if model in prices:
        return prices[model]
    candidates = [name for name in prices if model.startswith(name)]
    return prices[max(candidates, key=len)] if candidates else None


def cost_usd(prices: Mapping[str, ModelPrice], model: str, usage: Usage) -> float:
    """USD for one request; 0 for a model with no configured price."""
    price = price_for(prices, model)
    if price is None:
        return 0.0
    uncached = max(usage.input_tokens - usage.cached_tokens, 0)
    return (
        uncached * price.input
        + usage.cached_tokens * price.cached_input
        + usage.output_tokens * price.output
    ) / 1_000_000
