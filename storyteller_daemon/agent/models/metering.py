"""Metering at the model seam: `MeteredModel` times every request and works out its bill; a
`Meter` does the accounting.

The wrapper knows what a request costs: an answer is priced at the tier that served it, a
request whose body reached the provider but got no answer (a timeout, a dropped connection, an
unreadable answer) may be billed for its input (`failure_bill`), one refused with a status or
never connected bills nothing, and one a paused model held back was never sent. Who pays, and
whether a request may go at all, is the meter's: the runtime's `SpendingMeter`
(`runtime.spending.metering`) admits each request against the budgets, counts it in the
statistics and writes its cost-ledger rows into the run it belongs to. Those need the budgets
and the run records, which sit above agent/ in the layers, so the accounting stays there and
reaches the wrapper only through the `Meter` protocol.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from storyteller_daemon.agent.models.interface import Model, ModelRequest, ModelResponse, Usage
from storyteller_daemon.agent.models.pricing import cost_usd
from storyteller_daemon.agent.models.tokens import input_estimate
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import ModelPrice
from storyteller_daemon.errors import REQUEST_NOT_SENT, ModelError

LATENCY_BUCKETS = (0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0)
"""Upper bounds, in seconds, of the model-latency histogram (served on /metrics)."""


@dataclass
class LatencyHistogram:
    """How long model requests took: counts per bucket (not cumulative), sum and count."""

    bounds: tuple[float, ...] = LATENCY_BUCKETS
    counts: list[int] = field(init=False)
    """One count per bound, plus one for slower requests."""
    total_seconds: float = 0.0
    count: int = 0

    def __post_init__(self) -> None:
        self.counts = [0] * (len(self.bounds) + 1)

    @property
    def total(self) -> float:
        """The sum of the observations (what a histogram's ``_sum`` shows)."""
        return self.total_seconds

    def observe(self, seconds: float) -> None:
        """Record one request."""
        index = next((i for i, bound in enumerate(self.bounds) if seconds <= bound), -1)
        self.counts[index] += 1
        self.total_seconds += seconds
        self.count += 1


@dataclass(frozen=True)
class Bill:
    """What a request cost, or may be billed for, and how it ended (its ledger status)."""

    usage: Usage
    cost_usd: float
    status: str


class MeterEntry(Protocol):
    """The account of one request a `Meter` let through; told once how it ended."""

    async def answered(self, response: ModelResponse, usage: Usage, cost: float) -> None:
        """The request was answered and cost `cost` USD."""
        ...

    async def failed(self, error: str, bill: Bill) -> None:
        """The request got no answer (`error`: ``ExceptionType: message``); `bill` is what
        the provider may charge for it."""
        ...

    async def unsent(self, error: str) -> None:
        """The request was held back before it was sent; it costs nothing."""
        ...

    def abandoned(self, error: str) -> None:
        """The request was cancelled while out: it may still be billed, at its worst case."""
        ...


class Meter(Protocol):
    """Admits each metered request and keeps its account."""

    async def open(self, request: ModelRequest) -> MeterEntry:
        """The account of a request about to be sent.

        Raises:
            BudgetExceeded: the request may not be sent.
        """
        ...


def failure_bill(prices: Mapping[str, ModelPrice], request: ModelRequest, exc: Exception) -> Bill:
    """What a request that got no answer may be billed, and its ledger status.

    One whose body reached the provider (a timeout, a dropped connection, an unreadable
    answer) may be billed for its input: the request's input estimate at the input price,
    once per HTTP attempt that went out and got no status (retries included).
    One refused with a status, or never connected, bills nothing.
    """
    if not isinstance(exc, ModelError):
        return Bill(Usage(), 0.0, "error")
    if not exc.input_billed:
        return Bill(Usage(), 0.0, exc.request_status)
    input_tokens = input_estimate(request) * max(exc.billed_attempts, 1)
    usage = Usage(input_tokens=input_tokens)
    return Bill(usage, cost_usd(prices, request.model, usage), exc.request_status)


class MeteredModel:
    """Wraps a `Model`; every request made through it (attention or tool loop) is timed,
    billed and handed to the meter.

    Args:
        inner: the endpoint.
        meter: admits the requests and keeps their accounts.
        prices: the price table the bills are worked out with.
        clock: the daemon's clock (the latency is timed on it).
    """

    def __init__(
        self,
        inner: Model,
        meter: Meter,
        prices: Mapping[str, ModelPrice],
        *,
        clock: Clock,
    ) -> None:
        self._inner = inner
        self._meter = meter
        self._prices = prices
        self._clock = clock
        self.latency: dict[str, LatencyHistogram] = {}
        """Model name → latency of its requests, failed ones included."""

    @property
    def name(self) -> str:
        """The wrapped endpoint's name."""
        return self._inner.name

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Forward the request and account for what it cost.

        Raises:
            BudgetExceeded: the meter did not let the request go.
            ModelTransientError, ModelFatalError: as the endpoint raised them.
        """
        entry = await self._meter.open(request)
        try:
            response = await self._timed(request)
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, Exception):
                entry.abandoned(error)
                raise
            if isinstance(exc, ModelError) and exc.request_status == REQUEST_NOT_SENT:
                await entry.unsent(error)
                raise
            await entry.failed(error, failure_bill(self._prices, request, exc))
            raise
        # Priced at the tier that served it; a provider that does not say served the asked one.
        tier = response.service_tier or request.service_tier
        await entry.answered(
            response, response.usage, cost_usd(self._prices, request.model, response.usage, tier)
        )
        return response

    async def _timed(self, request: ModelRequest) -> ModelResponse:
        """The inner model's answer, with the request's latency recorded."""
        began = self._clock.monotonic()
        try:
            return await self._inner.respond(request)
        finally:
            histogram = self.latency.setdefault(request.model, LatencyHistogram())
            histogram.observe(self._clock.monotonic() - began)
