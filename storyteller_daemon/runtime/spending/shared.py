"""A cluster's budgets: each request checked against the shared ledger as its row is written.

A daemon's `BudgetKeeper` sees only its own requests in flight, and the others' spend as of its
last re-read. In a cluster the worst-case ledger row every request gets before it goes
(`metering`) is therefore written only if today's shared ledger has room for it under the
caps, checked and written in one transaction serialised per cap across the daemons
(`storage.spend_guard`): the rows of the day, the requests in flight at their worst case
included, stay under every cap however many daemons send at once.

A request the ledger has no room for because of requests in flight (of this daemon or another)
waits for them: until this daemon's next request ends, or `poll_seconds`, whichever is first,
then checks again. One that would not fit even once they are answered is refused with
`BudgetExceeded`, and its cap counts as reached on this daemon until 00:00 UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from storyteller_daemon.clock import Clock, sleep_or_wake
from storyteller_daemon.config import ClusterConfig, ModelConfig
from storyteller_daemon.errors import BudgetExceeded
from storyteller_daemon.runs import Charge, RunContext
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper
from storyteller_daemon.storage.ledger import DaySpend, LedgerRepository
from storyteller_daemon.storage.spend_guard import OverCap, SpendCaps


@dataclass(frozen=True)
class SharedLedger:
    """How a daemon of a cluster checks its requests against the shared ledger.

    Attributes:
        poll_seconds: how long a request without room waits before it checks again.
        settled_after_seconds: a request row still ``sent`` after this long counts as spent
            at its worst case (its daemon died before the answer), no longer as in flight.
    """

    poll_seconds: float
    settled_after_seconds: float

    @classmethod
    def of(cls, cluster: ClusterConfig, model: ModelConfig) -> SharedLedger:
        """Checking again every renewal interval; a request counts as in flight for as long
        as its tries may take (timeout × tries) and a lease span more."""
        tries = model.max_retries + 1
        return cls(
            poll_seconds=cluster.renew_seconds,
            settled_after_seconds=model.request_timeout_seconds * tries + cluster.lease_seconds,
        )


class SettledSpend:
    """Today's spend as a daemon of a cluster re-reads it (`BudgetKeeper.follow`): the
    requests in flight left out, since the keeper holds its own as reservations and the shared
    check counts the others'."""

    def __init__(self, ledger: LedgerRepository, shared: SharedLedger, clock: Clock) -> None:
        self._ledger = ledger
        self._shared = shared
        self._clock = clock

    async def spend_on(self, day: date) -> DaySpend:
        """USD settled on a UTC day (rows left ``sent`` by a dead daemon count)."""
        since = self._clock.now() - timedelta(seconds=self._shared.settled_after_seconds)
        return await self._ledger.spend_on(day, in_flight_since=since)


async def send_within_caps(
    budget: BudgetKeeper, shared: SharedLedger, clock: Clock, run: RunContext, worst: Charge
) -> int | None:
    """Write the request's worst-case row once the shared ledger has room for it; its id.

    Raises:
        BudgetExceeded: it would not fit even once the requests in flight are answered.
    """
    while True:
        daily, own = budget.caps(run.storyteller_id, run.storyteller_name)
        settled_before = clock.now() - timedelta(seconds=shared.settled_after_seconds)
        try:
            return await run.sending(worst, SpendCaps(daily, own, settled_before))
        except OverCap as over:
            if over.reached:
                budget.reach(over.storyteller_id, over.cap)
                raise BudgetExceeded(f"{over}; no model calls until 00:00 UTC") from over
            freed = budget.freed
            budget.waiting += 1
            try:
                await sleep_or_wake(clock, freed, shared.poll_seconds)
            finally:
                budget.waiting -= 1
