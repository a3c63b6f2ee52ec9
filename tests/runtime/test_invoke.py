"""Direct invocation (`Daemon.invoke`): resolving the storyteller, and every refusal with its
reason, including a full queue (FutureMUD reported success even then, §9.15)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from storyteller_daemon.agent.models.interface import ModelRequest
from storyteller_daemon.agent.trigger import TriggerKind
from storyteller_daemon.config import BudgetsConfig, ModelPrice
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import BudgetExceeded
from storyteller_daemon.runs import RunContext, attributed
from storyteller_daemon.runtime.daemon import Daemon, InvocationResult
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.spending.admission import Admission
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock, settle
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
from world_adapter.sim import SimWorld

QUEUE = 3


def held_runner() -> ScriptedTurnRunner:
    """Runs turns only while `release` is set; a direct invocation never passes the gate."""
    return ScriptedTurnRunner(
        judge_error=AssertionError("a direct invocation never passes the attention gate")
    )


@dataclass
class Rig:
    daemon: Daemon
    runner: ScriptedTurnRunner
    watch: Storyteller
    bell: Storyteller

    @property
    def pipeline(self) -> Pipeline:
        return self.daemon.pipeline


def build(store: Store, runner: ScriptedTurnRunner, admission: Admission | None = None) -> Daemon:
    wired = wired_pipeline(store, runner=runner, queue_size=QUEUE, admission=admission)
    return Daemon(
        settings=store.storytellers,
        world=SimWorld.harbour_town(),
        pipeline=wired.pipeline,
        clock=wired.clock,
        drain_seconds=5,
    )


@pytest.fixture
async def rig(sqlite_store: Store) -> AsyncIterator[Rig]:
    watch = await sqlite_store.storytellers.create("Harbour Watch")
    watch = await sqlite_store.storytellers.save(replace(watch, paused=False))
    bell = await sqlite_store.storytellers.create("Temple Bell")  # new storytellers are paused
    runner = held_runner()
    daemon = build(sqlite_store, runner)
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    await asyncio.wait_for(daemon.ready.wait(), 5)
    try:
        yield Rig(daemon, runner, watch, bell)
    finally:
        runner.release.set()
        stop.set()
        await asyncio.wait_for(task, 5)


async def test_a_storyteller_is_found_by_id_digits_or_name_in_any_case(rig: Rig) -> None:
    sid = rig.watch.id
    assert sid is not None
    for ref in (sid, str(sid), f" {sid} ", "harbour WATCH", "  Harbour Watch "):
        result = await rig.daemon.invoke(ref, f"  The tide turns ({ref!r}).  ")
        assert result == InvocationResult(True, "queued", sid), ref
        await rig.pipeline.wait_idle()
    assert [t.kind for t in rig.runner.turn_triggers] == [TriggerKind.DIRECT] * 5
    assert rig.runner.turn_triggers[0].text == f"The tide turns ({sid!r})."
    assert {t.label for t in rig.runner.turn_triggers} == {"Direct Invocation"}


@pytest.mark.parametrize("ref", ["Harbour", "Harbour Watch Two", "999", 999, True, ""])
async def test_an_unknown_storyteller_is_refused(rig: Rig, ref: str | int) -> None:
    result = await rig.daemon.invoke(ref, "Anything.")
    assert result == InvocationResult(False, f"no storyteller '{ref}'", stage="unknown")
    await rig.pipeline.wait_idle()
    assert rig.runner.turns == []


async def test_a_paused_storyteller_refuses(rig: Rig) -> None:
    result = await rig.daemon.invoke("Temple Bell", "Ring the bell.")
    assert result == InvocationResult(False, "storyteller is paused", rig.bell.id, "pause")
    assert rig.pipeline.stats.dropped["pause"] == 1


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
async def test_blank_text_is_refused(rig: Rig, text: str) -> None:
    result = await rig.daemon.invoke("Harbour Watch", text)
    assert result == InvocationResult(False, "blank text", rig.watch.id, "text")


async def test_without_a_model_key_nothing_is_queued(rig: Rig) -> None:
    rig.pipeline.model_available = False
    result = await rig.daemon.invoke("Harbour Watch", "Hello.")
    assert result == InvocationResult(False, "no model API key configured", rig.watch.id, "api_key")
    assert rig.pipeline.queue_depth(rig.watch.id or 0) == 0


async def test_a_full_queue_refuses_and_counts_the_overflow(rig: Rig) -> None:
    rig.runner.release.clear()
    results = [await rig.daemon.invoke("Harbour Watch", f"Call {n}.") for n in range(QUEUE + 1)]
    await settle()
    assert [r.accepted for r in results] == [True] * QUEUE + [False]
    assert results[-1].reason == f"queue full ({QUEUE} turns waiting or running)"
    assert rig.pipeline.stats.queue_overflow == {"Harbour Watch": 1}
    rig.runner.release.set()
    await rig.pipeline.wait_idle()
    assert [t.text for t in rig.runner.turn_triggers] == [f"Call {n}." for n in range(QUEUE)]
    assert (await rig.daemon.invoke("Harbour Watch", "Room again.")).accepted


async def test_the_routing_table_is_the_current_one(rig: Rig, sqlite_store: Store) -> None:
    renamed = await sqlite_store.storytellers.save(replace(rig.watch, name="Quay Watch"))
    await rig.daemon.reload()
    assert not (await rig.daemon.invoke("Harbour Watch", "Old name.")).accepted
    assert await rig.daemon.invoke("quay watch", "New name.") == InvocationResult(
        True, "queued", renamed.id
    )


async def test_only_a_running_daemon_accepts(sqlite_store: Store) -> None:
    watch = await sqlite_store.storytellers.create("Harbour Watch")
    await sqlite_store.storytellers.save(replace(watch, paused=False))
    runner = held_runner()
    daemon = build(sqlite_store, runner)
    assert await daemon.invoke("Harbour Watch", "Too early.") == InvocationResult(
        False, "the daemon is not running", stage="not_running"
    )
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    await asyncio.wait_for(daemon.ready.wait(), 5)
    assert (await daemon.invoke("Harbour Watch", "On time.")).accepted
    await daemon.pipeline.wait_idle()
    stop.set()
    await asyncio.wait_for(task, 5)
    assert not (await daemon.invoke("Harbour Watch", "Too late.")).accepted
    assert [t.text for t in runner.turn_triggers] == ["On time."]


async def running(store: Store, admission: Admission) -> tuple[Daemon, asyncio.Event, Any]:
    watch = await store.storytellers.create("Harbour Watch")
    await store.storytellers.save(replace(watch, paused=False))
    daemon = build(store, held_runner(), admission)
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    await asyncio.wait_for(daemon.ready.wait(), 5)
    return daemon, stop, task


async def test_the_kill_switch_refuses_an_invocation_while_it_is_on(sqlite_store: Store) -> None:
    switch = [True]
    daemon, stop, task = await running(
        sqlite_store, Admission(None, None, kill_switch=lambda: switch[0])
    )
    try:
        refused = await daemon.invoke("Harbour Watch", "Act now.")
        assert (refused.accepted, refused.stage) == (False, "kill_switch")
        assert refused.reason == "the kill switch is on"
        switch[0] = False
        assert (await daemon.invoke("Harbour Watch", "Act now.")).accepted
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)


async def test_a_spent_budget_refuses_an_invocation(sqlite_store: Store) -> None:
    prices = {"gpt-5": ModelPrice(input=1.0, cached_input=0.1, output=10.0)}
    budget = BudgetKeeper(
        BudgetsConfig(storyteller_daily_usd=0.000001, daily_usd=0), prices, FakeClock()
    )
    daemon, stop, task = await running(sqlite_store, Admission(budget, None))
    try:
        watch = daemon.find_storyteller("Harbour Watch")
        assert watch is not None and watch.id is not None
        request = ModelRequest(model="gpt-5", input=[{"role": "user", "content": "x"}])
        with attributed(RunContext(watch.id, watch.name, "turn")), pytest.raises(BudgetExceeded):
            budget.reserve(request)
        refused = await daemon.invoke("Harbour Watch", "Act now.")
        assert (refused.accepted, refused.stage) == (False, "budget")
        assert "daily budget" in refused.reason
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)
