"""Budgets: reservations, refusals, alerts, the UTC day, the turn cap, and the pipeline's checks."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import pytest

from storyteller_daemon.agent.models.interface import ModelRequest, Usage
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import BudgetsConfig, ModelPrice
from storyteller_daemon.domain.storytellers import Heartbeat, Storyteller
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.errors import BudgetExceeded
from storyteller_daemon.runs import RunContext, attributed
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.spending.admission import Admission
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper, worst_case
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock, settle
from storyteller_daemon.testing.model import ScriptedModel, text
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
from storyteller_daemon.testing.world import InstrumentedWorld
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 23, 0, tzinfo=UTC)
PRICES = {"gpt-5": ModelPrice(input=1.0, cached_input=0.1, output=10.0)}
WATCH = Storyteller(name="Harbour Watch", id=1, paused=False)
CRIER = Storyteller(name="Crier", id=2, paused=False)


def request(max_output: int = 1000, model: str = "gpt-5") -> ModelRequest:
    return ModelRequest(
        model=model, input=[{"role": "user", "content": "x"}], max_output_tokens=max_output
    )


def cost_of(usage: Usage) -> float:
    return (usage.input_tokens * 1.0 + usage.output_tokens * 10.0) / 1_000_000


def keeper(
    clock: FakeClock, alerts: list[tuple[str, str]] | None = None, **caps: Any
) -> BudgetKeeper:
    alert = None if alerts is None else (lambda level, message: alerts.append((level, message)))
    return BudgetKeeper(BudgetsConfig(**caps), PRICES, clock, alert=alert)


def run_of(storyteller: Storyteller, purpose: str = "turn") -> RunContext:
    return RunContext(storyteller.id, storyteller.name, purpose)


def test_the_worst_case_counts_a_token_per_byte_plus_the_output_cap() -> None:
    req = request(max_output=500)
    tokens_in, tokens_out, usd, priced = worst_case(PRICES, req)
    assert tokens_out == 500 and priced
    assert tokens_in > len("x")  # the whole body, not just the prompt
    assert usd == pytest.approx((tokens_in * 1.0 + 500 * 10.0) / 1_000_000)
    assert worst_case(PRICES, request(model="unknown-model"))[2:] == (0.0, False)


async def test_a_request_waits_while_requests_in_flight_hold_the_room_it_needs() -> None:
    clock = FakeClock(T0)
    worst = worst_case(PRICES, request())[2]
    budget = keeper(clock, daily_usd=worst * 2.5)
    with attributed(run_of(WATCH)):
        first, second = budget.reserve(request()), budget.reserve(request())
        with pytest.raises(BudgetExceeded, match="no room for this request while others"):
            budget.reserve(request())  # the synchronous check refuses...
        third = asyncio.create_task(budget.admit(request()))  # ...the hook waits
    await settle()
    assert not third.done() and budget.waiting == 1
    budget.settle(first, Usage(100, 0, 10, 0), cost_of(Usage(100, 0, 10, 0)))
    await settle()
    assert third.done() and third.exception() is None and budget.waiting == 0
    # not reached: it only waited for requests in flight
    assert budget.blocked(1, "Harbour Watch") is None
    budget.release(second)
    assert budget.spent() == pytest.approx(cost_of(Usage(100, 0, 10, 0)))


async def test_a_waiting_request_is_refused_once_the_cap_is_reached() -> None:
    worst = worst_case(PRICES, request())[2]
    budget = keeper(FakeClock(T0), daily_usd=worst * 1.5)
    with attributed(run_of(WATCH)):
        held = budget.reserve(request())
        waiting = asyncio.create_task(budget.admit(request()))
    await settle()
    budget.settle(held, Usage(), worst)  # billed its worst case: no room for another today
    await settle()
    with pytest.raises(BudgetExceeded, match="is spent"):
        await waiting


async def test_a_cap_that_cannot_fit_another_request_is_reached_until_the_utc_day_ends() -> None:
    clock = FakeClock(T0)
    alerts: list[tuple[str, str]] = []
    worst = worst_case(PRICES, request())[2]
    budget = keeper(clock, alerts, daily_usd=worst * 1.5)
    with attributed(run_of(WATCH)):
        held = budget.reserve(request())
    budget.settle(held, Usage(100, 0, 60, 0), worst)  # the whole worst case was billed
    with attributed(run_of(CRIER)), pytest.raises(BudgetExceeded, match="is spent"):
        budget.reserve(request())
    assert budget.blocked(2, "Crier") == "the global daily budget of $0.02 is spent"
    assert budget.blocked(1, "Harbour Watch") is not None
    assert [level for level, _ in alerts] == ["warning", "error"]  # 50 %, then reached
    assert "reached its daily budget" in alerts[-1][1]
    await clock.advance(3600)  # 00:00 UTC: a new window
    assert budget.blocked(1, "Harbour Watch") is None
    assert budget.spent() == 0
    with attributed(run_of(WATCH)):
        budget.reserve(request())


def test_each_threshold_alerts_once_per_scope_and_day(caplog: pytest.LogCaptureFixture) -> None:
    clock = FakeClock(T0)
    budget = keeper(clock, storyteller_daily_usd=1.0, daily_usd=0)
    caplog.set_level(logging.WARNING, "storyteller_daemon.runtime.spending.budgets")
    with attributed(run_of(WATCH)):
        for billed in (0.3, 0.25, 0.1, 0.2, 0.05):  # 30, 55, 65, 85, 90 %
            budget.settle(budget.reserve(request(max_output=1)), Usage(), billed)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "budget: storyteller Harbour Watch (#1) has spent $0.55 of its $1.00 daily budget (50 %)",
        "budget: storyteller Harbour Watch (#1) has spent $0.85 of its $1.00 daily budget (80 %)",
    ]
    assert budget.blocked(2, "Crier") is None  # another storyteller is not affected


def test_overrides_name_a_storyteller_in_any_case() -> None:
    budget = keeper(
        FakeClock(T0), storyteller_daily_usd=5.0, storyteller_overrides={"harbour WATCH": 0.5}
    )
    assert budget.cap_for(1, "Harbour Watch") == 0.5
    assert budget.cap_for(2, "Crier") == 5.0
    assert budget.cap_for(None, "") == 0.0


def test_the_turn_token_cap_counts_what_the_turn_already_used() -> None:
    budget = keeper(FakeClock(T0), turn_tokens=3000, daily_usd=0)
    turn = run_of(WATCH)
    with attributed(turn):
        budget.settle(budget.reserve(request(max_output=100)), Usage(1500, 0, 100, 0), 0.0)
        assert turn.tokens_used == 1600
        budget.reserve(request(max_output=1000))  # 1600 + body + 1000 fits
        with pytest.raises(BudgetExceeded, match="token cap of 3000"):
            budget.reserve(request(max_output=1400))
    with attributed(run_of(WATCH, "attention")):
        budget.reserve(request(max_output=1400))  # attention calls are not part of a turn


async def test_todays_spend_is_reloaded_at_start_up() -> None:
    @dataclass
    class Spend:
        total: float
        by_storyteller: dict[int, float]

    class Ledger:
        async def spend_on(self, day: date) -> Spend:
            assert day == date(2026, 3, 1)
            return Spend(0.995, {1: 0.995})

    budget = keeper(FakeClock(T0), storyteller_daily_usd=1.0, daily_usd=0)
    await budget.load(Ledger())
    assert budget.spent(1) == 0.995
    with attributed(run_of(WATCH)), pytest.raises(BudgetExceeded, match="is spent"):
        budget.reserve(request())


async def test_the_metered_model_settles_a_reservation_or_releases_it() -> None:
    clock = FakeClock(T0)
    budget = keeper(clock, daily_usd=10.0)
    answering = ScriptedModel(then=text("", Usage(2000, 0, 100, 0)))
    model = metered_model(answering, RuntimeStats(), PRICES, budget=budget, clock=clock)
    turn = run_of(WATCH)
    with attributed(turn):
        req = request()
        await budget.admit(req)
        await model.respond(req)
    assert budget.spent(1) == pytest.approx(cost_of(Usage(2000, 0, 100, 0)))
    assert [c.cost_usd for c in turn.charges] == [pytest.approx(0.003)]
    down = ScriptedModel(then=ConnectionError("down"))
    broken = metered_model(down, RuntimeStats(), PRICES, budget=budget, clock=SystemClock())
    with attributed(turn), pytest.raises(ConnectionError):
        await broken.respond(request())  # no hook: the meter reserves itself, then releases
    assert turn.exchanges[-1].error == "ConnectionError: down"
    with attributed(turn):
        for _ in range(3):  # nothing stayed reserved by the failed request
            await model.respond(request())


async def test_the_meter_refuses_a_request_no_hook_checked() -> None:
    budget = keeper(FakeClock(T0), daily_usd=0.000001)
    inner = ScriptedModel(then=text(""))
    with pytest.raises(BudgetExceeded):
        await metered_model(
            inner, RuntimeStats(), PRICES, budget=budget, clock=SystemClock()
        ).respond(request())
    assert inner.requests == []


# ---------------------------------------------------------------------- admission


def heartbeat() -> Trigger:
    return Trigger(TriggerKind.HEARTBEAT, occurred_at=T0, heartbeat=Heartbeat.TEN_MINUTES)


async def test_heartbeats_are_skipped_while_nobody_is_in_the_watched_rooms() -> None:
    world = SimWorld.harbour_town()
    admission = Admission(None, world)
    occupied = frozenset(p.location_id for p in await world.online_players() if p.location_id)
    assert await admission.admit(WATCH, heartbeat(), occupied) is None
    assert await admission.admit(WATCH, heartbeat(), frozenset({999_999})) == (
        "idle",
        "no player is online in its watched rooms",
    )
    assert await admission.admit(WATCH, heartbeat(), frozenset()) is None  # watches no room
    nobody_online = InstrumentedWorld(world).answer("online_players", [])
    empty = Admission(None, nobody_online)
    assert await empty.admit(WATCH, heartbeat(), frozenset())
    direct = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="the bells")
    assert await empty.admit(WATCH, direct, frozenset()) is None  # only heartbeats idle
    assert (
        await Admission(None, world, skip_idle_heartbeats=False).admit(
            WATCH, heartbeat(), frozenset({999_999})
        )
        is None
    )


async def test_a_storyteller_at_its_cap_is_not_admitted() -> None:
    budget = keeper(FakeClock(T0), storyteller_daily_usd=0.000001, daily_usd=0)
    with attributed(run_of(WATCH)), pytest.raises(BudgetExceeded):
        budget.reserve(request())
    admission = Admission(budget, None)
    stage, reason = await admission.admit(WATCH, heartbeat(), frozenset()) or ("", "")
    assert (stage, reason) == ("budget", "its daily budget of $0.00 is spent")
    assert await admission.admit(CRIER, heartbeat(), frozenset()) is None


class Drops:
    def __init__(self) -> None:
        self.drops: list[tuple[str, str]] = []

    def dropped(self, storyteller: Storyteller, trigger: Trigger, stage: str, reason: str) -> None:
        self.drops.append((stage, reason))

    def judged(self, *args: object) -> None:
        pass

    def turn_started(self, *args: object) -> None:
        pass

    def turn_finished(self, *args: object) -> None:
        pass


class Refuse:
    def __init__(self) -> None:
        self.refusal: tuple[str, str] | None = None

    async def admit(
        self, storyteller: Storyteller, trigger: Trigger, watched: frozenset[int]
    ) -> tuple[str, str] | None:
        return self.refusal


@pytest.fixture
async def rig(
    sqlite_store: Store,
) -> AsyncIterator[tuple[Pipeline, ScriptedTurnRunner, Drops, Refuse]]:
    st = Storyteller(
        name="Watch",
        id=1,
        paused=False,
        heartbeats=frozenset({Heartbeat.TEN_MINUTES}),
        surveillance=Surveillance(zones=frozenset({1})),
    )
    runner = ScriptedTurnRunner(release=asyncio.Event())  # every turn is held
    drops, refuse = Drops(), Refuse()
    pipeline = wired_pipeline(
        sqlite_store,
        runner=runner,
        clock=FakeClock(T0),
        storytellers=[st],
        zones={1: frozenset({101})},
        observer=drops,
        queue_size=5,
        admission=refuse,
    ).pipeline
    task = asyncio.create_task(pipeline.run())
    await settle()
    try:
        yield pipeline, runner, drops, refuse
    finally:
        runner.release.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_heartbeat_is_dropped_while_a_turn_of_its_storyteller_runs(rig: tuple) -> None:
    pipeline, runner, drops, _ = rig
    st = pipeline.router.storyteller(1)
    assert await pipeline.direct(st, "the bells ring")
    await asyncio.wait_for(runner.started.wait(), 5)
    assert len(runner.begun) == 1  # running, held
    assert await pipeline.heartbeat(1, Heartbeat.TEN_MINUTES) is False
    assert drops.drops == [("busy", "a turn of this storyteller is running")]
    runner.release.set()
    await pipeline.wait_idle()
    assert await pipeline.heartbeat(1, Heartbeat.TEN_MINUTES)
    await pipeline.wait_idle()
    assert [t.kind for t, _ in runner.begun] == [TriggerKind.DIRECT, TriggerKind.HEARTBEAT]


async def test_admission_drops_before_the_turn_and_before_attention(rig: tuple) -> None:
    from world_adapter.events import Cursor, RoomEcho

    pipeline, runner, drops, refuse = rig
    runner.release.set()
    refuse.refusal = ("budget", "its daily budget of $1.00 is spent")
    st = pipeline.router.storyteller(1)
    assert not await pipeline.direct(st, "the bells ring")  # refused at once: the game is told
    echo = RoomEcho(cursor=Cursor("e", 1), cell_id=101, zone_id=1, occurred_at=T0, text="x")
    await pipeline.ingest(echo)
    await pipeline.wait_idle()
    assert runner.begun == []
    assert drops.drops == [("budget", "its daily budget of $1.00 is spent")] * 2
    assert pipeline.stats.attention_calls == 0


async def test_a_cap_reached_while_judging_drops_the_batch_quietly(
    rig: tuple, caplog: pytest.LogCaptureFixture
) -> None:
    from world_adapter.events import Cursor, RoomEcho

    pipeline, runner, drops, _ = rig
    runner.judge_error = BudgetExceeded("its daily budget of $1.00 is spent")
    echo = RoomEcho(cursor=Cursor("e", 1), cell_id=101, zone_id=1, occurred_at=T0, text="x")
    await pipeline.ingest(echo)
    await pipeline.wait_idle()
    assert drops.drops == [("budget", "its daily budget of $1.00 is spent")]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
