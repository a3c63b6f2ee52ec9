"""Hard spending caps, checked before every model request, and who each request is for.

Caps (``[budgets]``, 0 turns one off): all storytellers together per UTC day (``daily_usd``),
each storyteller per UTC day (its own ``daily_budget_usd`` setting when an admin set one, else
``storyteller_daily_usd`` or its entry in ``storyteller_overrides``), and the tokens of one turn
(``turn_tokens``). The keeper learns the settings whenever the daemon (re)loads the
storytellers (`BudgetKeeper.learn`), so a changed budget applies without a restart.

Every request first *reserves* its worst case: the request body's UTF-8 size as input tokens
(no token is shorter than a byte) at the uncached input price, plus ``max_output_tokens`` at
the output price. It is sent only if what was spent, plus what in-flight requests reserved, plus
its own worst case fits under every cap that applies; after the answer the reservation is
replaced by the real cost. So however many storytellers call at once, a cap is not crossed (a
provider would have to bill more input tokens than the bytes it was sent); the price is that
the last few cents of a cap go unused.

A request that would fit once the requests in flight have settled waits for them. One that
could not fit even then is refused with `BudgetExceeded` (the turn ends with outcome
``budget_exceeded``) and its daily cap is *reached*: the storyteller (or, for the global cap,
every storyteller) calls no model until 00:00 UTC, and the pipeline drops its triggers at the
``budget`` stage. Admins are alerted once per day at 50 %, 80 % and 100 % of each daily cap.
The ledger in the database is the durable truth; `BudgetKeeper.load` re-reads today's spend at
start-up, so a restart does not reset a cap. In a cluster, where the other daemons spend from
the same caps, each request is also checked against the shared ledger (`spending.shared`).

Which storyteller, trigger and room a request is for comes from `attribution.current_run`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Protocol

from storyteller_daemon.agent.models.interface import ModelRequest, Usage
from storyteller_daemon.agent.models.pricing import price_for
from storyteller_daemon.agent.models.tokens import input_estimate
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import BudgetsConfig, ModelPrice
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import BudgetExceeded
from storyteller_daemon.runs import RunContext, current_run

log = logging.getLogger(__name__)

ALERT_PERCENTS = (50, 80, 100)
DEFAULT_MAX_OUTPUT_TOKENS = 8192
"""Assumed for a request that sets no ``max_output_tokens`` (the loop and the gate always do)."""

Alert = Callable[[str, str], None]
"""``(severity, message)``, severity ``warning`` or ``error`` (`Alerts.reporter("budget")`)."""


@dataclass
class Reservation:
    """A request's worst case, held from the check until the answer."""

    request: ModelRequest
    run: RunContext | None
    usd: float


class _NoRoomYet(BudgetExceeded):
    """The request would fit if the requests in flight cost less than their worst case."""


class SpendSource(Protocol):
    """Where today's spend is read at start-up (the ledger repository)."""

    async def spend_on(self, day: date) -> _DaySpend:
        """USD spent on a UTC day."""
        ...


class _DaySpend(Protocol):
    @property
    def total(self) -> float: ...

    @property
    def by_storyteller(self) -> dict[int, float]: ...


def worst_case(
    prices: Mapping[str, ModelPrice], request: ModelRequest
) -> tuple[int, int, float, bool]:
    """Input and output tokens, USD, and whether the model has a price, at worst."""
    input_tokens = input_estimate(request)
    output_tokens = request.max_output_tokens or DEFAULT_MAX_OUTPUT_TOKENS
    price = price_for(prices, request.model)
    if price is None:
        return input_tokens, output_tokens, 0.0, False
    usd = (input_tokens * price.input + output_tokens * price.output) / 1_000_000
    return input_tokens, output_tokens, usd, True


def storyteller_cap(cfg: BudgetsConfig, name: str) -> float:
    """The daily USD cap of the storyteller called `name` (0: none): its override, else the
    per-storyteller default."""
    wanted = name.casefold()
    return next(
        (usd for key, usd in cfg.storyteller_overrides.items() if key.casefold() == wanted),
        cfg.storyteller_daily_usd,
    )


def daily_cap(cfg: BudgetsConfig, st: Storyteller) -> float:
    """The daily USD cap that applies to a storyteller (0: none): its own setting, else the
    configuration's (`storyteller_cap`)."""
    if st.daily_budget_usd is not None:
        return st.daily_budget_usd
    return storyteller_cap(cfg, st.name)


class BudgetKeeper:
    """Checks, reserves and settles every model request against the caps.

    Args:
        cfg: the ``[budgets]`` section.
        prices: the price table.
        clock: decides the UTC day.
        alert: told about 50/80/100 % of a daily cap (besides the log).
    """

    def __init__(
        self,
        cfg: BudgetsConfig,
        prices: Mapping[str, ModelPrice],
        clock: Clock,
        *,
        alert: Alert | None = None,
    ) -> None:
        self._cfg = cfg
        self._prices = prices
        self._clock = clock
        self._alert = alert
        self._day = clock.now().date()
        self._spent: dict[int | None, float] = {}
        self._total = 0.0
        self._reserved: dict[int | None, float] = {}
        self._reserved_total = 0.0
        self._reached: set[int | None] = set()
        """Storyteller ids whose daily cap is reached; None stands for the global cap."""
        self._alerted: set[tuple[int | None, int]] = set()
        self._names: dict[int | None, str] = {}
        self._settings: dict[int, float] = {}
        """Storyteller id → its own daily cap, for those that set one (`learn`)."""
        self._freed = asyncio.Event()
        """Set (and replaced) whenever a reservation ends."""
        self.waiting = 0
        """Requests waiting for in-flight requests to settle."""
        self._unpriced: set[str] = set()

    # ------------------------------------------------------------------ state

    async def follow(self, source: SpendSource, every: float) -> None:
        """Take today's spend from the ledger every `every` seconds until cancelled: a daemon
        of a cluster then counts what the others spent (every request is a ledger row) in
        `blocked` and its alerts; what keeps the cap is the check of each request against the
        shared ledger (`spending.shared`)."""
        while True:
            await self._clock.sleep(every)
            try:
                await self.load(source)
            except Exception as exc:  # the next interval tries again
                log.warning("today's spend could not be re-read: %s", type(exc).__name__)

    async def load(self, source: SpendSource) -> None:
        """Take today's spend from the ledger (at start-up, and in a cluster, all along)."""
        self._roll()
        spend = await source.spend_on(self._day)
        self._total = spend.total
        self._spent = {}
        for storyteller_id, usd in spend.by_storyteller.items():
            self._spent[storyteller_id] = usd

    def learn(self, storytellers: Iterable[Storyteller]) -> None:
        """Take the storytellers' own daily caps (the daemon calls this on every reload).

        A storyteller whose cap changed is judged afresh: a raised cap (or none) lifts a
        reached one, a cap lowered to today's spend or below is reached at once.
        """
        self._roll()
        before = {sid: self.cap_for(sid, self._names.get(sid, "")) for sid in self._names}
        self._settings = {}
        for st in storytellers:
            if st.id is None:
                continue
            self._names[st.id] = st.name
            if st.daily_budget_usd is not None:
                self._settings[st.id] = st.daily_budget_usd
        for sid, name in self._names.items():
            if sid is None:
                continue
            cap = self.cap_for(sid, name)
            if sid in before and before[sid] == cap:
                continue
            self._reached.discard(sid)
            self._alerted = {(scope, p) for scope, p in self._alerted if scope != sid}
            self._crossed(sid, cap, self._spent.get(sid, 0.0))

    def cap_for(self, storyteller_id: int | None, name: str) -> float:
        """The daily USD cap of a storyteller (0: none): its own setting, else the
        configuration's."""
        if storyteller_id is None:
            return 0.0
        if storyteller_id in self._settings:
            return self._settings[storyteller_id]
        return storyteller_cap(self._cfg, name)

    def caps(self, storyteller_id: int | None, name: str) -> tuple[float, float]:
        """The global and the storyteller's daily USD caps a request checks (0: none)."""
        return self._cfg.daily_usd, self.cap_for(storyteller_id, name)

    @property
    def freed(self) -> asyncio.Event:
        """Set when a reservation of this daemon ends next (room may have come free)."""
        return self._freed

    def spent(self, storyteller_id: int | None = None) -> float:
        """USD settled today by one storyteller, or by all with None."""
        self._roll()
        return self._total if storyteller_id is None else self._spent.get(storyteller_id, 0.0)

    def blocked(self, storyteller_id: int, name: str) -> str | None:
        """Why this storyteller may not call a model today, or None."""
        self._roll()
        if None in self._reached:
            return f"the global daily budget of ${self._cfg.daily_usd:.2f} is spent"
        if storyteller_id in self._reached:
            cap = self.cap_for(storyteller_id, name)
            return f"its daily budget of ${cap:.2f} is spent"
        return None

    def _roll(self) -> None:
        """Start a new window when the UTC day changed; in-flight reservations carry over."""
        today = self._clock.now().date()
        if today != self._day:
            self._day = today
            self._spent.clear()
            self._total = 0.0
            self._reached.clear()
            self._alerted.clear()

    # ------------------------------------------------------------------ the request path

    async def admit(self, request: ModelRequest) -> Reservation:
        """The one door every model request passes: reserve its worst case, wait for room, or
        refuse. `SpendingMeter` calls it for every request, attention and turn alike.

        A request that would fit once the requests in flight have settled waits for them
        (each is bounded by the model's timeout); one that cannot fit today is refused.

        Raises:
            BudgetExceeded: a cap is reached, or the turn's token cap would be crossed.
        """
        while True:
            try:
                return self.reserve(request)
            except _NoRoomYet:
                freed = self._freed
                self.waiting += 1
                try:
                    await freed.wait()
                finally:
                    self.waiting -= 1

    def reserve(self, request: ModelRequest) -> Reservation:
        """Check every cap against the request's worst case and hold it.

        Raises:
            BudgetExceeded: a cap would be crossed; daily caps then count as reached.
        """
        self._roll()
        run = current_run()
        tokens_in, tokens_out, usd, priced = worst_case(self._prices, request)
        if not priced and request.model not in self._unpriced:
            self._unpriced.add(request.model)
            log.warning(
                "budgets: model %s has no price in [model.prices]; its requests count as $0",
                request.model,
            )
        if run is not None and run.purpose == "turn" and self._cfg.turn_tokens:
            if run.tokens_used + tokens_in + tokens_out > self._cfg.turn_tokens:
                raise BudgetExceeded(
                    f"the turn's token cap of {self._cfg.turn_tokens} would be crossed "
                    f"({run.tokens_used} used, up to {tokens_in + tokens_out} more)"
                )
        sid = run.storyteller_id if run is not None else None
        name = run.storyteller_name if run is not None else ""
        if sid is not None:
            self._names[sid] = name
        self._check(None, self._cfg.daily_usd, self._total, self._reserved_total, usd)
        if sid is not None:
            spent, held = self._spent.get(sid, 0.0), self._reserved.get(sid, 0.0)
            self._check(sid, self.cap_for(sid, name), spent, held, usd)
        reservation = Reservation(request, run, usd)
        self._reserved_total += usd
        self._reserved[sid] = self._reserved.get(sid, 0.0) + usd
        return reservation

    def _check(self, scope: int | None, cap: float, spent: float, held: float, usd: float) -> None:
        """Refuse a request that does not fit; the cap is reached if it could never fit today."""
        if not cap:
            return
        label = "the global daily budget" if scope is None else "its daily budget"
        if scope in self._reached or spent + usd > cap:
            self.reach(scope, cap)
            raise BudgetExceeded(
                f"{label} of ${cap:.2f} is spent (${spent:.4f}, and this request could cost "
                f"${usd:.4f}); no model calls until 00:00 UTC"
            )
        if spent + held + usd > cap:
            # Requests in flight hold the rest; when they settle there may be room again.
            raise _NoRoomYet(
                f"{label} of ${cap:.2f} has no room for this request while others are in "
                f"flight (${spent:.4f} spent, ${held:.4f} reserved, this request up to "
                f"${usd:.4f})"
            )

    def release(self, reservation: Reservation) -> None:
        """Drop a reservation whose request got no answer (and wake requests waiting for room)."""
        sid = reservation.run.storyteller_id if reservation.run is not None else None
        self._reserved_total = max(self._reserved_total - reservation.usd, 0.0)
        self._reserved[sid] = max(self._reserved.get(sid, 0.0) - reservation.usd, 0.0)
        self._freed.set()
        self._freed = asyncio.Event()

    def settle(self, reservation: Reservation, usage: Usage, cost: float) -> None:
        """Replace a reservation with what the answer really cost."""
        self.release(reservation)
        self._roll()
        run = reservation.run
        if run is not None:
            run.tokens_used += usage.input_tokens + usage.output_tokens
        sid = run.storyteller_id if run is not None else None
        self._total += cost
        if sid is not None:
            self._spent[sid] = self._spent.get(sid, 0.0) + cost
            self._crossed(sid, self.cap_for(sid, self._names.get(sid, "")), self._spent[sid])
        self._crossed(None, self._cfg.daily_usd, self._total)

    # ------------------------------------------------------------------ alerts

    def _crossed(self, scope: int | None, cap: float, spent: float) -> None:
        if not cap:
            return
        if spent >= cap:
            self.reach(scope, cap)
            return
        for percent in ALERT_PERCENTS[:-1]:
            if spent >= cap * percent / 100 and (scope, percent) not in self._alerted:
                self._alerted.add((scope, percent))
                self._emit(
                    "warning",
                    f"{self._label(scope)} has spent ${spent:.2f} of its "
                    f"${cap:.2f} daily budget ({percent} %)",
                )

    def reach(self, scope: int | None, cap: float) -> None:
        """Count a daily cap as reached until 00:00 UTC (None: the global cap), alerting once."""
        self._reached.add(scope)
        if (scope, 100) in self._alerted:
            return
        self._alerted.update((scope, p) for p in ALERT_PERCENTS)
        self._emit(
            "error",
            f"{self._label(scope)} reached its daily budget of ${cap:.2f} (100 %); "
            "no model calls until 00:00 UTC",
        )

    def _label(self, scope: int | None) -> str:
        if scope is None:
            return "budget: all storytellers"
        return f"budget: storyteller {self._names.get(scope, '')} (#{scope})"

    def _emit(self, level: str, message: str) -> None:
        """Alert the admins; without an alert hook, the log is where they look."""
        if self._alert is None:
            log.log(logging.ERROR if level == "error" else logging.WARNING, "%s", message)
            return
        try:
            self._alert(level, message)
        except Exception:  # an alert sink must never break accounting
            log.exception("budget alert could not be delivered: %s", message)
