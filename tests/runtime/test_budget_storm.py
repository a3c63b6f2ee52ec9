"""An event storm against a daily cap: many storytellers' turns at once, through the real SDK.

The scripted server bills every request with fixed usage figures; the budget must stop the
storytellers before the cap is crossed, however the concurrent requests interleave, and the
ledger must hold exactly what was spent.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from storyteller_daemon.agent.models.interface import ModelRequest, Usage
from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import BudgetsConfig, ModelPrice
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper, Reservation, worst_case
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.runtime.turns import AgentTurnRunner
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model_responder import request_from_body
from storyteller_daemon.testing.responses_answers import Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
PRICES = {"gpt-5": ModelPrice(input=1.25, cached_input=0.125, output=10.0)}
BILLED_SHARE = 0.8
"""Each request is billed 80 % of its worst case: close enough that letting every storyteller
through whenever the settled spend alone leaves room would cross the cap."""
STORYTELLERS = 6
TURNS_EACH = 5


class Waves:
    """Holds each storyteller at the budget check until every storyteller still storming is
    there too, then lets them all check at once: the worst interleaving for a budget, made
    deterministic without sleeping."""

    def __init__(self, storytellers: int) -> None:
        self.active, self.arrived, self.wave = storytellers, 0, 0
        self.changed = asyncio.Condition()

    async def arrive(self) -> None:
        async with self.changed:
            self.arrived += 1
            wave = self.wave
            self._release_if_all_arrived()
            await self.changed.wait_for(lambda: self.wave != wave)

    async def done(self) -> None:
        """One storyteller has no more turns to run."""
        async with self.changed:
            self.active -= 1
            self._release_if_all_arrived()

    def _release_if_all_arrived(self) -> None:
        if self.arrived and self.arrived >= self.active:
            self.wave += 1
            self.arrived = 0
            self.changed.notify_all()


class StormBudget(BudgetKeeper):
    """The real budget, entered in waves."""

    waves: Waves

    async def admit(self, request: ModelRequest) -> Reservation:
        await self.waves.arrive()
        return await super().admit(request)


def billed(body: dict[str, Any]) -> Reply:
    """Noop, with usage in proportion to the request's size (a token per 1.25 bytes)."""
    size = len(json.dumps(body).encode())
    usage = Usage(
        input_tokens=int(size * BILLED_SHARE),
        output_tokens=int(body["max_output_tokens"] * BILLED_SHARE),
        reasoning_tokens=100,
    )
    return replace(Reply.calls(("Noop", {}), usage=usage), delay_seconds=0.05)


@pytest.mark.parametrize("cap_on", ["global", "storyteller"])
async def test_concurrent_turns_never_cross_a_daily_cap(sqlite_store: Store, cap_on: str) -> None:
    clock = FakeClock(T0)
    alerts: list[tuple[str, str]] = []
    storytellers = []
    for index in range(STORYTELLERS):
        st = await sqlite_store.storytellers.create(f"Teller {index}")
        storytellers.append(await sqlite_store.storytellers.save(replace(st, paused=False)))
    together = asyncio.Event()
    together.set()  # the probe below is alone

    async def respond(body: dict[str, Any]) -> Reply:
        """Bill the request, once a second one is in flight too (the storm's first wave
        admits several): the overlap the test needs, made certain however loaded the machine."""
        if server.in_flight >= 2:
            together.set()
        await asyncio.wait_for(together.wait(), 30)
        return billed(body)

    async with ScriptedResponsesServer(responder=respond) as server:
        sdk = OpenAIResponsesModel(api_key="test-key", base_url=server.base_url, max_retries=0)
        try:
            # One unbudgeted turn first, to price a request of this storm.
            probe = RunRecorder(None, None, clock)
            await _runner(sqlite_store, sdk, None, probe, clock).run_turn(
                storytellers[0], Trigger(TriggerKind.DIRECT, occurred_at=T0, text="probe")
            )
            worst = worst_case(PRICES, request_from_body(server.requests[0]))[2]
            server.requests.clear()
            together.clear()
            # Room for about three requests at once, and for about nine in all.
            cap = 3.2 * worst
            if cap_on == "global":
                caps = BudgetsConfig(daily_usd=cap, turn_tokens=0)
            else:  # only the first storyteller is capped; the others run freely
                caps = BudgetsConfig(
                    daily_usd=0, storyteller_overrides={"Teller 0": cap}, turn_tokens=0
                )
            budget = StormBudget(caps, PRICES, clock, alert=lambda *alert: alerts.append(alert))
            budget.waves = Waves(STORYTELLERS)
            recorder = RunRecorder(
                RunRepository(sqlite_store.db), LedgerRepository(sqlite_store.db), clock
            )
            runner = _runner(sqlite_store, sdk, budget, recorder, clock)

            async def storm(st: Any) -> list[str]:
                outcomes = []
                try:
                    for turn in range(TURNS_EACH):
                        trigger = Trigger(TriggerKind.DIRECT, occurred_at=T0, text=f"event {turn}")
                        outcomes.append((await runner.run_turn(st, trigger)).outcome.value)
                finally:
                    await budget.waves.done()
                return outcomes

            results = await asyncio.wait_for(
                asyncio.gather(*(storm(st) for st in storytellers)), 60
            )
        finally:
            await sdk.close()

    spend = await LedgerRepository(sqlite_store.db).spend_on(T0.date())
    assert server.most_in_flight >= 2  # requests really were in flight together
    capped = spend.total if cap_on == "global" else spend.by_storyteller[storytellers[0].id or 0]
    assert capped <= cap
    assert capped > cap - 1.2 * worst  # and the budget was used, not refused early
    assert budget.spent() == pytest.approx(spend.total)  # every request is on the ledger
    stored = await RunRepository(sqlite_store.db).list(limit=100)
    assert sum(r.cost_usd for r in stored) == pytest.approx(spend.total)
    assert sum(r.rounds for r in stored) == len(server.requests)
    if cap_on == "global":
        outcomes = [o for each in results for o in each]
        assert "budget_exceeded" in outcomes and "noop" in outcomes
        assert all(budget.blocked(st.id or 0, st.name) for st in storytellers)
    else:
        assert "budget_exceeded" in results[0]
        assert all(o == "noop" for each in results[1:] for o in each)
        assert budget.blocked(storytellers[1].id or 0, "Teller 1") is None
    # 50 % once; "reached" once, even when the last requests' worst case came before 80 %
    assert alerts[0][0] == "warning" and "(50 %)" in alerts[0][1]
    assert alerts[-1][0] == "error" and "reached its daily budget" in alerts[-1][1]
    assert len(alerts) <= 3
    refused = [r for r in stored if r.outcome == "budget_exceeded"]
    assert refused and all(r.rounds == 0 and r.cost_usd == 0 for r in refused)


def _runner(
    store: Store, model: Any, budget: BudgetKeeper | None, recorder: RunRecorder, clock: FakeClock
) -> AgentTurnRunner:
    metered = metered_model(model, RuntimeStats(), PRICES, budget=budget, clock=clock)
    return turn_runner(store, SimWorld.harbour_town(), metered, clock=clock, recorder=recorder)
