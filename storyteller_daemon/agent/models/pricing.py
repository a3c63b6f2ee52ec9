"""Turning token counts into money with the configured price table."""

from __future__ import annotations

from collections.abc import Mapping

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.config import ModelPrice


def price_for(prices: Mapping[str, ModelPrice], model: str) -> ModelPrice | None:
    """The price of `model`: an exact entry, else the longest matching prefix (dated names)."""
    if model in prices:
        return prices[model]
    candidates = [name for name in prices if model.startswith(name)]
    return prices[max(candidates, key=len)] if candidates else None


TIER_PRICE_SHARES = {"flex": 0.5}
"""What a service tier costs as a share of the list price (the others cost the list price)."""


def cost_usd(
    prices: Mapping[str, ModelPrice], model: str, usage: Usage, tier: str | None = None
) -> float:
    """USD for one request, at the price of the service `tier` that served it; 0 for a model
    with no configured price."""
    price = price_for(prices, model)
    if price is None:
        return 0.0
    uncached = max(usage.input_tokens - usage.cached_tokens, 0)
    share = TIER_PRICE_SHARES.get(tier or "", 1.0)
    return (
        share
        * (
            uncached * price.input
            + usage.cached_tokens * price.cached_input
            + usage.output_tokens * price.output
        )
        / 1_000_000
    )
