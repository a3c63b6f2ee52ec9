"""The accounting of every model request: budgets, statistics and the cost ledger.

The model seam's `MeteredModel` (`agent.models.metering`) times each request and works out its
bill; `SpendingMeter` is the `Meter` it hands them to. With a `BudgetKeeper`, this is the one
place that decides whether a request may go: each request is admitted (its worst case
reserved, after waiting for room if requests in flight hold it) or refused with
`BudgetExceeded` before it is sent; the reservation is settled with the real cost once the
answer is in, or with what the provider may bill when none comes.

Every request sent is a cost-ledger row: written at its worst case (status ``sent``) before it
goes, then settled with the answer's bill (``ok``) or with its failure (``timeout``,
``connection_error``, ``http_503``...): a request whose body reached the provider keeps its
input-token estimate and that input's price, one refused with a status bills nothing and
still keeps its row. A request a paused model never sent leaves no row. In a cluster the
worst-case row is written only once the shared ledger has room for it (`shared`).
The run the request belongs to (`attribution.current_run`) gets the request, answer and bill.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from storyteller_daemon.agent.models.interface import Model, ModelRequest, ModelResponse, Usage
from storyteller_daemon.agent.models.metering import Bill, MeteredModel
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import ModelPrice
from storyteller_daemon.errors import BudgetExceeded, ModelTransientError
from storyteller_daemon.runs import Charge, Exchange, RunContext, current_run
from storyteller_daemon.runs.attribution import REQUEST_OK, REQUEST_SENT
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper, Reservation, worst_case
from storyteller_daemon.runtime.spending.shared import SharedLedger, send_within_caps
from storyteller_daemon.runtime.stats import RuntimeStats


def metered_model(
    inner: Model,
    stats: RuntimeStats,
    prices: Mapping[str, ModelPrice],
    *,
    budget: BudgetKeeper | None = None,
    shared: SharedLedger | None = None,
    clock: Clock,
) -> MeteredModel:
    """`inner`, with every request made through it (attention or tool loop) counted in `stats`,
    admitted by `budget` (and, in a cluster, the `shared` ledger) and billed to its run at
    `prices`."""
    meter = SpendingMeter(stats, prices, budget=budget, shared=shared, clock=clock)
    return MeteredModel(inner, meter, prices, clock=clock)


class SpendingMeter:
    """The `Meter` of the daemon's model requests: see the module."""

    def __init__(
        self,
        stats: RuntimeStats,
        prices: Mapping[str, ModelPrice],
        *,
        budget: BudgetKeeper | None = None,
        shared: SharedLedger | None = None,
        clock: Clock,
    ) -> None:
        self._stats = stats
        self._prices = prices
        self._budget = budget
        self._shared = shared
        self._clock = clock

    async def open(self, request: ModelRequest) -> _Account:
        """Admit the request (or refuse it), count it and write its worst-case ledger row.

        Raises:
            BudgetExceeded: a budget refused it.
            ModelTransientError: its ledger row could not be written, so it was not sent.
        """
        reservation = await self._budget.admit(request) if self._budget is not None else None
        run = current_run()
        account = _Account(self, request, reservation, run, Exchange(request))
        if run is not None:
            _, _, worst_usd, _ = worst_case(self._prices, request)
            worst = Charge(
                self._clock.now(), run.purpose, request.model, Usage(), worst_usd, REQUEST_SENT
            )
            try:
                account.provisional = await self._send(run, worst)
            except BudgetExceeded:
                self.release(reservation)
                raise
            except Exception as exc:  # no row, no request: a kill would leave it unbilled
                self.release(reservation)
                raise ModelTransientError(
                    "the request was not sent: its cost could not be noted in the ledger "
                    f"first ({type(exc).__name__}: {exc})"
                ) from exc
            run.exchanges.append(account.exchange)
        self._stats.requests += 1
        return account

    async def _send(self, run: RunContext, worst: Charge) -> int | None:
        """Write the request's worst-case row: in a cluster, once the shared ledger has room."""
        if self._budget is None or self._shared is None:
            return await run.sending(worst)
        return await send_within_caps(self._budget, self._shared, self._clock, run, worst)

    def release(self, reservation: Reservation | None) -> None:
        """Give back a reservation whose request was not sent, or whose bill is unknown."""
        if reservation is not None and self._budget is not None:
            self._budget.release(reservation)

    async def settle(self, account: _Account, bill: Bill) -> None:
        """Count a request's bill in the statistics, the budget and its run's ledger."""
        self._stats.usage = self._stats.usage + bill.usage
        self._stats.cost_usd += bill.cost_usd
        if account.reservation is not None and self._budget is not None:
            self._budget.settle(account.reservation, bill.usage, bill.cost_usd)
        run = account.run
        if run is not None:
            self._stats.spend(run.storyteller_name, bill.cost_usd)
            charge = Charge(
                self._clock.now(),
                run.purpose,
                account.request.model,
                bill.usage,
                bill.cost_usd,
                bill.status,
            )
            await run.charge(charge, account.provisional)


@dataclass
class _Account:
    """One request's account (`agent.models.metering.MeterEntry`)."""

    meter: SpendingMeter
    request: ModelRequest
    reservation: Reservation | None
    run: RunContext | None
    exchange: Exchange
    provisional: int | None = None
    """The id of its worst-case ledger row, when one was written."""

    async def answered(self, response: ModelResponse, usage: Usage, cost: float) -> None:
        """Settle the request with the answer's bill."""
        self.exchange.response = response
        await self.meter.settle(self, Bill(usage, cost, REQUEST_OK))

    async def failed(self, error: str, bill: Bill) -> None:
        """Settle the request with what the provider may bill for it."""
        self.exchange.error = error
        await self.meter.settle(self, bill)

    async def unsent(self, error: str) -> None:
        """The request was held back: no bill, and its provisional row goes."""
        self.exchange.error = error
        self.meter.release(self.reservation)
        if self.run is not None:
            await self.run.not_sent(self.provisional)

    def abandoned(self, error: str) -> None:
        """Cancelled: the request may still be billed, so its worst-case row stays."""
        self.exchange.error = error
        self.meter.release(self.reservation)
