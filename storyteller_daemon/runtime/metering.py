"""Counting every model request, its tokens and its cost, at the model seam."""

from __future__ import annotations

from collections.abc import Mapping

from storyteller_daemon.agent.model import Model, ModelRequest, ModelResponse
from storyteller_daemon.config import ModelPrice
from storyteller_daemon.runtime.costs import cost_usd
from storyteller_daemon.runtime.stats import RuntimeStats


class MeteredModel:
    """Wraps a `Model`; every request made through it (attention or tool loop) is counted."""

    def __init__(self, inner: Model, stats: RuntimeStats, prices: Mapping[str, ModelPrice]) -> None:
        self._inner = inner
        self._stats = stats
        self._prices = prices

    @property
    def name(self) -> str:
        """The wrapped endpoint's name."""
        return self._inner.name

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Forward the request and account for what it cost."""
        self._stats.requests += 1
        response = await self._inner.respond(request)
        self._stats.usage = self._stats.usage + response.usage
        self._stats.cost_usd += cost_usd(self._prices, request.model, response.usage)
        return response
