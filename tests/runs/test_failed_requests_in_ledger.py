"""Every model request sent is a cost-ledger row, answered or not, on both backends.

The requests go through the real SDK to the shipped Responses server with injected failures;
each failed one keeps its row with its status and what the provider may bill for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

from storyteller_daemon.agent.models.breaker import CircuitBreaker
from storyteller_daemon.agent.models.interface import ModelRequest, Usage
from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel
from storyteller_daemon.agent.models.tokens import input_estimate
from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import BudgetsConfig, ModelPrice
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ModelError, ModelFatalError, ModelTransientError, StorageError
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper, worst_case
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.responses_answers import Fault, Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, tzinfo=UTC)
WATCH = Storyteller(name="Watch", id=4)
DIRECT = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="ring the bell")
PRICES = {"gpt-x": ModelPrice(input=2.0, cached_input=0.2, output=10.0)}
REQUEST = ModelRequest(
    model="gpt-x",
    input=[{"role": "user", "content": "The bell rings at the quay."}],
    instructions="You are the storyteller.",
    max_output_tokens=500,
)
ANSWERED = Usage(input_tokens=900, cached_tokens=0, output_tokens=40)


@pytest.fixture
async def server() -> AsyncIterator[ScriptedResponsesServer]:
    async with ScriptedResponsesServer() as running:
        yield running


def services(store: Store) -> TurnServices:
    return TurnServices(SimWorld.harbour_town(), store.situations, store.memories, store.references)


def input_usd(tokens: int) -> float:
    return tokens * PRICES["gpt-x"].input / 1e6


async def by_status(ledger: LedgerRepository) -> dict[str | None, tuple[int, int, int, float]]:
    """Status → (requests, input tokens, output tokens, USD)."""
    return {
        line.key: (line.requests, line.input_tokens, line.output_tokens, line.cost_usd)
        for line in await ledger.totals("status")
    }


async def test_each_failure_keeps_its_row_with_its_status_and_what_it_may_cost(
    store: Store, server: ScriptedResponsesServer
) -> None:
    clock = FakeClock(T0)
    ledger = LedgerRepository(store.db)
    runs = RunRepository(store.db)
    recorder = RunRecorder(runs, ledger, clock)
    budget = BudgetKeeper(BudgetsConfig(), PRICES, clock)
    stats = RuntimeStats()
    server.enqueue(
        Fault.status(503),  # refused before processing: nothing billed
        Fault.status(400, message="Unsupported parameter: 'reasoning.effort'."),
        Fault.hang(),  # the body went out and no answer came: its input may be billed
        Fault.drop(),  # the connection reset after the body was sent: likewise
        Reply.text("the bell", usage=ANSWERED),
    )
    endpoint = OpenAIResponsesModel(
        api_key="sk-test", base_url=server.base_url, timeout_seconds=0.2, max_retries=0
    )
    async with endpoint:
        model = metered_model(endpoint, stats, PRICES, budget=budget, clock=clock)
        async with recorder.turn(WATCH, DIRECT, "st4:direct:1", services(store)):
            for expected in (ModelTransientError, ModelFatalError, ModelTransientError):
                with pytest.raises(expected):
                    await model.respond(REQUEST)
            with pytest.raises(ModelTransientError, match="connection failed"):
                await model.respond(REQUEST)
            await model.respond(REQUEST)
    async with ScriptedResponsesServer() as stopped:
        closed_url = stopped.base_url
    async with OpenAIResponsesModel(api_key="k", base_url=closed_url, max_retries=0) as nowhere:
        model = metered_model(nowhere, stats, PRICES, budget=budget, clock=clock)
        with pytest.raises(ModelTransientError, match="could not connect"):
            async with recorder.turn(WATCH, DIRECT, "st4:direct:2", services(store)):
                await model.respond(REQUEST)

    estimate = input_estimate(REQUEST)
    assert 0 < estimate < worst_case(PRICES, REQUEST)[0] + 1
    answered_usd = (900 * 2.0 + 40 * 10.0) / 1e6
    assert await by_status(ledger) == {
        "ok": (1, 900, 40, pytest.approx(answered_usd)),
        "http_503": (1, 0, 0, 0.0),
        "http_400": (1, 0, 0, 0.0),
        "timeout": (1, estimate, 0, pytest.approx(input_usd(estimate))),
        "connection_error": (1, estimate, 0, pytest.approx(input_usd(estimate))),
        "unreachable": (1, 0, 0, 0.0),
    }
    [line] = await ledger.totals("storyteller")
    assert (line.requests, line.failed) == (6, 5)
    # What the budgets reload at start-up is what they counted live.
    spent = answered_usd + 2 * input_usd(estimate)
    assert (await ledger.spend_on(T0.date())).by_storyteller == {4: pytest.approx(spent)}
    assert budget.spent(4) == pytest.approx(spent)
    assert stats.cost_usd == pytest.approx(spent)
    # The run's record lists every request with its status, linked to its ledger rows.
    [second, first] = await runs.list()
    record = (await runs.get(first.id)).record
    assert [c["status"] for c in record["charges"]] == [
        "http_503",
        "http_400",
        "timeout",
        "connection_error",
        "ok",
    ]
    assert first.cost_usd == pytest.approx(spent)
    assert [c["status"] for c in (await runs.get(second.id)).record["charges"]] == ["unreachable"]


async def test_a_request_out_when_the_process_dies_stays_sent_at_its_worst_case(
    store: Store, server: ScriptedResponsesServer
) -> None:
    clock = FakeClock(T0)
    ledger = LedgerRepository(store.db)
    recorder = RunRecorder(RunRepository(store.db), ledger, clock)
    server.enqueue(Fault.hang())
    async with OpenAIResponsesModel(api_key="k", base_url=server.base_url) as endpoint:
        model = metered_model(endpoint, RuntimeStats(), PRICES, clock=clock)

        async def turn() -> None:
            async with recorder.turn(WATCH, DIRECT, "st4:direct:3", services(store)):
                await model.respond(REQUEST)

        task = asyncio.create_task(turn())
        await asyncio.wait_for(server.wait_for_requests(1), 5)
        task.cancel()  # the stop: the run is never stored
        await asyncio.gather(task, return_exceptions=True)
    tokens, _, worst_usd, _ = worst_case(PRICES, REQUEST)
    assert await by_status(ledger) == {"sent": (1, 0, 0, pytest.approx(worst_usd))}
    assert tokens > 0


async def test_a_request_a_paused_model_never_sent_leaves_no_row(
    store: Store, server: ScriptedResponsesServer
) -> None:
    clock = FakeClock(T0)
    ledger = LedgerRepository(store.db)
    recorder = RunRecorder(RunRepository(store.db), ledger, clock)
    server.enqueue(Fault.status(401))
    async with OpenAIResponsesModel(api_key="k", base_url=server.base_url) as endpoint:
        breaker = CircuitBreaker(endpoint, pause_seconds=60, clock=clock)
        model = metered_model(breaker, RuntimeStats(), PRICES, clock=clock)
        for key in ("st4:direct:4", "st4:direct:5"):
            with pytest.raises(ModelError):
                async with recorder.turn(WATCH, DIRECT, key, services(store)):
                    await model.respond(REQUEST)
    assert len(server.requests) == 1  # the second was held back by the breaker
    assert await by_status(ledger) == {"http_401": (1, 0, 0, 0.0)}


async def test_each_retry_that_went_out_unanswered_may_be_billed_again(
    store: Store, server: ScriptedResponsesServer
) -> None:
    clock = FakeClock(T0)
    ledger = LedgerRepository(store.db)
    recorder = RunRecorder(RunRepository(store.db), ledger, clock)
    # The SDK retries twice: a 503 (answered: not billed), then two attempts that time out.
    server.enqueue(Fault.status(503, retry_after=0.01), Fault.hang(), Fault.hang())
    endpoint = OpenAIResponsesModel(
        api_key="k", base_url=server.base_url, timeout_seconds=0.2, max_retries=2
    )
    async with endpoint:
        model = metered_model(endpoint, RuntimeStats(), PRICES, clock=clock)
        with pytest.raises(ModelTransientError, match="no answer within"):
            async with recorder.turn(WATCH, DIRECT, "st4:direct:6", services(store)):
                await model.respond(REQUEST)
    assert len(server.requests) == 3
    twice = 2 * input_estimate(REQUEST)
    assert await by_status(ledger) == {"timeout": (1, twice, 0, pytest.approx(input_usd(twice)))}


class LockedOnce(LedgerRepository):
    """The real ledger, its first write refused as a busy SQLite file refuses it."""

    locked = True

    async def add(self, entries: Any) -> list[int]:
        if self.locked:
            self.locked = False
            raise StorageError("database error: OperationalError: database is locked")
        return await super().add(entries)


async def test_a_request_whose_ledger_row_cannot_be_written_is_not_sent(
    store: Store, server: ScriptedResponsesServer
) -> None:
    """A request goes out only once its worst case is in the ledger: sent without a row, a
    daemon killed before the answer would leave it billed and counted nowhere."""
    clock = FakeClock(T0)
    worst = worst_case(PRICES, REQUEST)[2]
    # Room for one request's worst case, not two: a reservation kept by the refused request
    # would refuse the next.
    budget = BudgetKeeper(BudgetsConfig(daily_usd=1.5 * worst, turn_tokens=0), PRICES, clock)
    ledger = LockedOnce(store.db)
    recorder = RunRecorder(RunRepository(store.db), ledger, clock)
    stats = RuntimeStats()
    server.enqueue(Reply.text("the bell", usage=ANSWERED))
    async with OpenAIResponsesModel(api_key="k", base_url=server.base_url) as endpoint:
        model = metered_model(endpoint, stats, PRICES, budget=budget, clock=clock)
        async with recorder.turn(WATCH, DIRECT, "st4:direct:9", services(store)):
            with pytest.raises(ModelTransientError, match="not sent: its cost could not be noted"):
                await model.respond(REQUEST)
            assert server.requests == [] and stats.requests == 0
            await model.respond(REQUEST)
    assert len(server.requests) == 1 and stats.requests == 1
    assert await by_status(ledger) == {"ok": (1, 900, 40, (900 * 2.0 + 40 * 10.0) / 1e6)}
