"""Two daemons spending from one daily cap on PostgreSQL: each request's worst case is written
to the shared ledger only when the ledger has room for it, so the requests the two daemons have
in flight together, and what they spend in all, stay under the cap; the rest wait for room and
are refused once the cap is spent."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import pytest

from storyteller_daemon.agent.models.interface import ModelRequest, ModelResponse, Usage
from storyteller_daemon.agent.models.metering import MeteredModel
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import BudgetsConfig, ModelPrice
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import BudgetExceeded
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper, worst_case
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.spending.shared import SettledSpend, SharedLedger
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.ledger import LedgerEntry, LedgerRepository
from storyteller_daemon.storage.spend_guard import OverCap, SpendCaps
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, text

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PRICES = {"gpt-5": ModelPrice(input=1.25, cached_input=0.125, output=10.0)}
REQUEST = ModelRequest(
    model="gpt-5",
    input=[{"role": "user", "content": "the bell tolls twice"}],
    max_output_tokens=1000,
)
TIN, TOUT, WORST, _ = worst_case(PRICES, REQUEST)
SHARED = SharedLedger(poll_seconds=2.0, settled_after_seconds=600.0)
ASKS_EACH = 4


async def _billed_at_worst(_request: ModelRequest) -> ModelResponse:
    return text("ok", Usage(input_tokens=TIN, output_tokens=TOUT))


@dataclass
class Daemon:
    """One daemon's accounting: its budget keeper, metered model and run recorder."""

    store: Store
    budget: BudgetKeeper
    model: ScriptedModel
    metered: MeteredModel
    recorder: RunRecorder

    async def ask(self, st: Storyteller, n: int) -> str:
        trigger = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="bell")
        async with self.recorder.attention(st, [trigger], f"key-{n}", f"item-{n}"):
            try:
                await self.metered.respond(REQUEST)
            except BudgetExceeded as exc:
                return f"refused: {exc}"
        return "answered"


def _daemon(url: str, clock: FakeClock, caps: BudgetsConfig) -> Daemon:
    store = Store.open(url, clock=clock)
    budget = BudgetKeeper(caps, PRICES, clock)
    model = ScriptedModel(then=_billed_at_worst)
    model.hold()
    metered = metered_model(
        model, RuntimeStats(), PRICES, budget=budget, shared=SHARED, clock=clock
    )
    return Daemon(
        store, budget, model, metered, RunRecorder(None, LedgerRepository(store.db), clock)
    )


async def _until(done: Callable[[], bool]) -> None:
    """Let the daemons work (the database answers; no timed sleep) until `done`."""
    for _ in range(1_000_000):
        if done():
            return
        await asyncio.sleep(0)
    raise AssertionError("the daemons never got there")


@pytest.mark.postgres
@pytest.mark.parametrize("cap_on", ["global", "storyteller"])
async def test_two_daemons_in_flight_together_never_cross_a_daily_cap(
    pg_url: str, cap_on: str
) -> None:
    clock = FakeClock(T0)
    cap = 3.5 * WORST  # room for three requests, and each daemon alone would send three
    if cap_on == "global":  # each daemon runs its own storyteller; the cap is everyone's
        caps = BudgetsConfig(daily_usd=cap, turn_tokens=0)
    else:  # one storyteller asked from both (its turn ran on one daemon, a digest on the other)
        caps = BudgetsConfig(daily_usd=0, storyteller_overrides={"Teller 0": cap}, turn_tokens=0)
    a, b = _daemon(pg_url, clock, caps), _daemon(pg_url, clock, caps)
    try:
        await a.store.db.upgrade()
        tellers = []
        for index in range(2):
            st = await a.store.storytellers.create(f"Teller {index}")
            tellers.append(await a.store.storytellers.save(replace(st, paused=False)))
        mine = {id(a): tellers[0], id(b): tellers[1] if cap_on == "global" else tellers[0]}
        asks = [
            asyncio.create_task(node.ask(mine[id(node)], n))
            for node in (a, b)
            for n in range(ASKS_EACH)
        ]

        def sent() -> int:
            return len(a.model.requests) + len(b.model.requests)

        # Each daemon lets three through its own keeper; together they may send three only.
        await asyncio.wait_for(
            _until(lambda: sent() == 3 and a.budget.waiting + b.budget.waiting == 5), 30
        )
        spend = await LedgerRepository(a.store.db).spend_on(T0.date())
        assert spend.total == pytest.approx(3 * WORST) and spend.total <= cap

        a.model.release()
        b.model.release()
        while not all(task.done() for task in asks):  # the waiting ones check again
            await clock.advance(SHARED.poll_seconds)
            await asyncio.wait(asks, timeout=0.5)
        outcomes = [task.result() for task in asks]
    finally:
        a.model.release()
        b.model.release()
        await a.store.close()
        await b.store.close()

    assert sent() == 3 and outcomes.count("answered") == 3
    refused = [o for o in outcomes if o != "answered"]
    assert len(refused) == 5 and all("no model calls until 00:00 UTC" in o for o in refused)
    check = Store.open(pg_url, clock=clock)
    try:
        spend = await LedgerRepository(check.db).spend_on(T0.date())
    finally:
        await check.close()
    assert spend.total == pytest.approx(3 * WORST) and spend.total <= cap
    scope = tellers[0].id or 0
    for node in (a, b):  # both daemons now hold the cap reached
        assert node.budget.blocked(scope, "Teller 0") is not None


async def test_a_row_is_written_only_when_the_day_has_room_under_each_cap(store: Store) -> None:
    ledger = LedgerRepository(store.db)
    st = await store.storytellers.create("Teller")

    def worst(usd: float, at: datetime = T0, sid: int | None = st.id) -> LedgerEntry:
        return LedgerEntry(
            occurred_at=at,
            purpose="turn",
            model="gpt-5",
            storyteller_id=sid,
            cost_usd=usd,
            status="sent",
        )

    caps = SpendCaps(daily_usd=1.0, storyteller_usd=0.5)
    first = await ledger.add_within(worst(0.3), caps)
    with pytest.raises(OverCap) as over:  # 0.3 in flight + 0.3 > 0.5, but it may fit later
        await ledger.add_within(worst(0.3), caps)
    assert over.value.storyteller_id == st.id and not over.value.reached
    assert over.value.in_flight == pytest.approx(0.3)
    assert await ledger.settle(first, replace(worst(0.25), status="ok"))
    await ledger.add_within(worst(0.25), caps)  # 0.25 spent + 0.25 = 0.5: fits exactly
    with pytest.raises(OverCap) as over:
        await ledger.add_within(worst(0.6, sid=None), caps)  # the global cap: 0.5 + 0.6 > 1
    assert over.value.storyteller_id is None and over.value.cap == 1.0
    await ledger.add_within(worst(0.3, sid=None), SpendCaps(daily_usd=1.0))
    # A row still "sent" from before `settled_before` is a dead daemon's: spent, not in flight.
    later = SpendCaps(daily_usd=1.0, settled_before=T0.replace(hour=10))
    with pytest.raises(OverCap) as over:
        await ledger.add_within(worst(0.3, sid=None), later)
    assert over.value.reached and over.value.settled == pytest.approx(0.8)


async def test_the_re_read_spend_leaves_out_the_requests_in_flight(store: Store) -> None:
    """A daemon of a cluster holds its own requests in flight as reservations: the spend it
    re-reads must not count them a second time (nor the others', which the shared check
    counts), or a cap would be reached before it is spent."""
    clock = FakeClock(T0)
    st = await store.storytellers.create("Teller")
    budget = BudgetKeeper(BudgetsConfig(daily_usd=1.0, turn_tokens=0), PRICES, clock)
    settled = SettledSpend(store.ledger, SHARED, clock)

    def row(usd: float, status: str) -> LedgerEntry:
        return LedgerEntry(
            clock.now(), "turn", "gpt-5", storyteller_id=st.id, cost_usd=usd, status=status
        )

    await store.ledger.add([row(0.25, "ok"), row(0.5, "sent")])
    await budget.load(settled)
    assert budget.spent() == pytest.approx(0.25) and budget.spent(st.id) == pytest.approx(0.25)
    await clock.advance(SHARED.settled_after_seconds + 1)  # its sender died: it is spent
    await budget.load(settled)
    assert budget.spent() == pytest.approx(0.75)
    await budget.load(store.ledger)  # at start-up every row counts
    assert budget.spent() == pytest.approx(0.75)
