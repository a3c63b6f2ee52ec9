"""Counting every model request, its tokens and its cost, at the model seam.

With a `BudgetKeeper`, this is the one place that decides whether a request may go: each
request is admitted (its worst case reserved, after waiting for room if requests in flight hold
it) or refused with `BudgetExceeded` before it is sent; the reservation is settled with the real
cost once the answer is in, or with what the provider may bill when none comes.

Every request sent is a cost-ledger row: written at its worst case (status ``sent``) before it
goes, then settled with the answer's bill (``ok``) or with its failure (``timeout``,
``connection_error``, ``http_503``...): a request whose body reached the provider keeps its
input-token estimate and that input's price, one refused with a status bills nothing and
still keeps its row. A request a paused model never sent leaves no row.
The run the request belongs to (`attribution.current_run`) gets the request, answer and bill.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from storyteller_daemon.agent.model import Model, ModelRequest, ModelResponse, Usage
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import ModelPrice
from storyteller_daemon.errors import REQUEST_NOT_SENT, ModelError
from storyteller_daemon.runs import Charge, Exchange, RunContext, cost_usd, current_run
from storyteller_daemon.runs.attribution import REQUEST_OK, REQUEST_SENT
from storyteller_daemon.runtime.spending.budgets import (
    BudgetKeeper,
    Reservation,
    input_estimate,
    worst_case,
)
from storyteller_daemon.runtime.stats import RuntimeStats

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


class MeteredModel:
    """Wraps a `Model`; every request made through it (attention or tool loop) is counted."""

    def __init__(
        self,
        inner: Model,
        stats: RuntimeStats,
        prices: Mapping[str, ModelPrice],
        *,
        budget: BudgetKeeper | None = None,
        clock: Clock,
    ) -> None:
        self._inner = inner
        self._stats = stats
        self._prices = prices
        self._budget = budget
        self._clock = clock
        self.latency: dict[str, LatencyHistogram] = {}
        """Model name → latency of its requests, failed ones included."""

    @property
    def name(self) -> str:
        """The wrapped endpoint's name."""
        return self._inner.name

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """Forward the request and account for what it cost."""
        reservation = await self._budget.admit(request) if self._budget is not None else None
        self._stats.requests += 1
        run = current_run()
        exchange = Exchange(request)
        provisional: int | None = None
        if run is not None:
            run.exchanges.append(exchange)
            _, _, worst_usd, _ = worst_case(self._prices, request)
            worst = Charge(
                self._clock.now(), run.purpose, request.model, Usage(), worst_usd, REQUEST_SENT
            )
            provisional = await run.sending(worst)
        try:
            response = await self._timed(request)
        except BaseException as exc:
            exchange.error = f"{type(exc).__name__}: {exc}"
            if not isinstance(exc, Exception):
                # Cancelled: the request may still be billed, so its worst-case row stays.
                if reservation is not None and self._budget is not None:
                    self._budget.release(reservation)
                raise
            if isinstance(exc, ModelError) and exc.request_status == REQUEST_NOT_SENT:
                if reservation is not None and self._budget is not None:
                    self._budget.release(reservation)
                if run is not None:
                    await run.not_sent(provisional)
                raise
            usage, cost, status = self._failure_bill(request, exc)
            await self._account(request, reservation, run, usage, cost, status, provisional)
            raise
        exchange.response = response
        # Priced at the tier that served it; a provider that does not say served the asked one.
        tier = response.service_tier or request.service_tier
        cost = cost_usd(self._prices, request.model, response.usage, tier)
        await self._account(
            request, reservation, run, response.usage, cost, REQUEST_OK, provisional
        )
        return response

    def _failure_bill(self, request: ModelRequest, exc: Exception) -> tuple[Usage, float, str]:
        """What a request that got no answer may be billed, and its ledger status.

        One whose body reached the provider (a timeout, a dropped connection, an unreadable
        answer) may be billed for its input: the request's input estimate at the input price,
        once per HTTP attempt that went out and got no status (retries included).
        One refused with a status, or never connected, bills nothing.
        """
        if not isinstance(exc, ModelError):
            return Usage(), 0.0, "error"
        if not exc.input_billed:
            return Usage(), 0.0, exc.request_status
        input_tokens = input_estimate(request) * max(exc.billed_attempts, 1)
        usage = Usage(input_tokens=input_tokens)
        return usage, cost_usd(self._prices, request.model, usage), exc.request_status

    async def _account(
        self,
        request: ModelRequest,
        reservation: Reservation | None,
        run: RunContext | None,
        usage: Usage,
        cost: float,
        status: str,
        provisional: int | None,
    ) -> None:
        """Count a request's bill in the statistics, the budget and its run's ledger."""
        self._stats.usage = self._stats.usage + usage
        self._stats.cost_usd += cost
        if reservation is not None and self._budget is not None:
            self._budget.settle(reservation, usage, cost)
        if run is not None:
            self._stats.spend(run.storyteller_name, cost)
            charge = Charge(self._clock.now(), run.purpose, request.model, usage, cost, status)
            await run.charge(charge, provisional)

    async def _timed(self, request: ModelRequest) -> ModelResponse:
        """The inner model's answer, with the request's latency recorded."""
        began = self._clock.monotonic()
        try:
            return await self._inner.respond(request)
        finally:
            histogram = self.latency.setdefault(request.model, LatencyHistogram())
            histogram.observe(self._clock.monotonic() - began)
