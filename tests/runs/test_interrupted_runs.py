"""A run cut off by a crash still leaves its paid requests in the ledger, and is recorded."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from storyteller_daemon.agent.models.interface import ModelRequest, Usage
from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import ModelPrice
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ModelTransientError
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.spending.budgets import worst_case
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, text
from storyteller_daemon.testing.steps import hang
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, tzinfo=UTC)
WATCH = Storyteller(name="Watch", id=4)
DIRECT = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="ring the bell")
PRICES = {"gpt-x": ModelPrice(input=1.0, cached_input=0.1, output=10.0)}


USAGE = Usage(1000, 0, 100)


async def test_a_paid_request_is_in_the_ledger_before_its_run_ends(sqlite_store: Store) -> None:
    clock = FakeClock(T0)
    ledger = LedgerRepository(sqlite_store.db)
    recorder = RunRecorder(RunRepository(sqlite_store.db), ledger, clock)
    # The second request never comes back: the process dies while it waits.
    inner = ScriptedModel(text("", USAGE), hang())
    model = metered_model(inner, RuntimeStats(), PRICES, clock=clock)
    request = ModelRequest(model="gpt-x", input=[])
    services = TurnServices(
        SimWorld.harbour_town(),
        sqlite_store.situations,
        sqlite_store.memories,
        sqlite_store.references,
    )

    async def turn() -> None:
        async with recorder.turn(WATCH, DIRECT, "st4:direct:1", services):
            await model.respond(request)
            await model.respond(request)  # hangs

    task = asyncio.create_task(turn())
    await asyncio.wait_for(inner.wait_for_requests(2), 5)
    spend = await ledger.spend_on(T0.date())
    answered = (1000 * 1.0 + 100 * 10.0) / 1e6
    in_flight = worst_case(PRICES, request)[2]  # the second request, out when the process dies
    assert spend.by_storyteller == {4: pytest.approx(answered + in_flight)}  # before the run ended
    task.cancel()  # the crash: the run is never stored
    await asyncio.gather(task, return_exceptions=True)
    assert await RunRepository(sqlite_store.db).list() == []
    assert (await ledger.spend_on(T0.date())).total == spend.total  # counted, at worst, not lost


async def test_a_request_refused_with_a_status_is_a_row_without_cost(sqlite_store: Store) -> None:
    clock = FakeClock(T0)
    ledger = LedgerRepository(sqlite_store.db)
    recorder = RunRecorder(RunRepository(sqlite_store.db), ledger, clock)
    failing = ScriptedModel(ModelTransientError("HTTP 503", status=503))
    model = metered_model(failing, RuntimeStats(), PRICES, clock=clock)
    services = TurnServices(
        SimWorld.harbour_town(),
        sqlite_store.situations,
        sqlite_store.memories,
        sqlite_store.references,
    )
    with pytest.raises(ModelTransientError):
        async with recorder.turn(WATCH, DIRECT, "st4:direct:9", services):
            await model.respond(ModelRequest(model="gpt-x", input=[]))
    assert (await ledger.spend_on(T0.date())).total == 0
    [line] = await ledger.totals("status")
    assert (line.key, line.requests, line.failed, line.input_tokens) == ("http_503", 1, 1, 0)


async def test_a_finished_run_links_the_ledger_rows_written_on_the_way(sqlite_store: Store) -> None:
    clock = FakeClock(T0)
    ledger = LedgerRepository(sqlite_store.db)
    runs = RunRepository(sqlite_store.db)
    recorder = RunRecorder(runs, ledger, clock)
    model = metered_model(ScriptedModel(text("", USAGE)), RuntimeStats(), PRICES, clock=clock)
    services = TurnServices(
        SimWorld.harbour_town(),
        sqlite_store.situations,
        sqlite_store.memories,
        sqlite_store.references,
    )
    async with recorder.turn(WATCH, DIRECT, "st4:direct:2", services):
        await model.respond(ModelRequest(model="gpt-x", input=[]))
    [summary] = await runs.list()
    stored = await runs.get(summary.id)
    assert len(stored.record["charges"]) == 1
    lines = await ledger.totals("storyteller")
    assert [line.requests for line in lines] == [1]  # written once, not again with the run


async def test_an_interrupted_turn_is_recorded_as_such(sqlite_store: Store) -> None:
    runs = RunRepository(sqlite_store.db)
    recorder = RunRecorder(runs, LedgerRepository(sqlite_store.db), FakeClock(T0))
    await recorder.interrupted(WATCH, DIRECT, "st4:direct:3", 2)
    [summary] = await runs.list(outcome="interrupted")
    assert summary.turn_key == "st4:direct:3"
    assert (
        summary.error
        == "interrupted by a stop or crash; run again under the same key (attempt 2), "
        "resuming from its journal"
    )
    await recorder.interrupted(WATCH, DIRECT, "st4:direct:3", 5, given_up=True)
    given_up = (await runs.list(outcome="interrupted"))[0]
    assert "given up after 4 interruptions" in (given_up.error or "")
