"""Daemon lifecycle with a fake clock: hot reload, zone changes, deletion, drain on stop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace

import pytest

from storyteller_daemon.domain.storytellers import EventKind, Storyteller
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.alerts import RecordedAlerts
from storyteller_daemon.testing.clock import FakeClock, settle
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
from world_adapter.sim import SimWorld

RELOAD = 5.0


@dataclass
class Rig:
    store: Store
    world: SimWorld
    clock: FakeClock
    runner: ScriptedTurnRunner
    daemon: Daemon
    stop: asyncio.Event
    task: asyncio.Task[None]
    storyteller: Storyteller

    async def reload_tick(self) -> None:
        polls = self.daemon.polls
        await self.clock.advance(RELOAD)
        await asyncio.wait_for(self.daemon.wait_polls(polls + 1), 5)
        await settle()


def _pipeline(store: Store, clock: FakeClock, runner: ScriptedTurnRunner) -> Pipeline:
    """A pipeline that judges at once (no burst window)."""
    return wired_pipeline(store, runner=runner, clock=clock).pipeline


@pytest.fixture
async def rig(sqlite_store: Store) -> AsyncIterator[Rig]:
    st = await sqlite_store.storytellers.create("Watcher")
    st = await sqlite_store.storytellers.save(
        replace(st, paused=False, subscriptions=frozenset({EventKind.ROOM}))
    )
    world = SimWorld.harbour_town()
    clock = FakeClock()
    runner = ScriptedTurnRunner()
    pipeline = _pipeline(sqlite_store, clock, runner)
    daemon = Daemon(
        settings=sqlite_store.storytellers,
        world=world,
        pipeline=pipeline,
        clock=clock,
        reload_seconds=RELOAD,
        drain_seconds=5,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    await asyncio.wait_for(daemon.ready.wait(), 5)
    await settle()
    rig = Rig(sqlite_store, world, clock, runner, daemon, stop, task, st)
    try:
        yield rig
    finally:
        runner.release.set()
        stop.set()
        await asyncio.wait_for(task, 5)


async def _wait(runner: ScriptedTurnRunner, predicate: Callable[[], bool]) -> None:
    """Wait until a finished turn makes `predicate` true."""
    await asyncio.wait_for(runner.wait_until(predicate), 5)


async def test_cli_changes_take_effect_without_restart(rig: Rig) -> None:
    rig.world.emote(1001, "waves.")  # room 101: not watched yet
    await settle()
    assert rig.runner.judged_triggers == []
    watching = replace(
        rig.storyteller, surveillance=rig.storyteller.surveillance.toggled("include", 101)
    )
    await rig.store.storytellers.save(watching)  # what `ais set … surveillance include 101` does
    await rig.reload_tick()
    assert rig.daemon.pipeline.router.cells_of(rig.storyteller.id or 0) == {101}
    rig.world.emote(1001, "waves again.")
    await _wait(rig.runner, lambda: len(rig.runner.turn_triggers) == 1)
    assert rig.runner.turn_triggers[0].event.text.endswith("waves again.")  # type: ignore[union-attr]

    # pausing through the store stops the next event at the pause stage
    paused = await rig.store.storytellers.get(rig.storyteller.id or 0)
    await rig.store.storytellers.save(replace(paused, paused=True))
    await rig.reload_tick()
    rig.world.emote(1001, "waves a third time.")
    await settle()
    assert len(rig.runner.judged_triggers) == 1
    assert rig.daemon.pipeline.stats.dropped["pause"] == 1


async def test_zone_membership_changes_are_picked_up(rig: Rig) -> None:
    zoned = replace(rig.storyteller, surveillance=rig.storyteller.surveillance.toggled("zone", 1))
    await rig.store.storytellers.save(zoned)
    await rig.reload_tick()
    assert 201 not in rig.daemon.pipeline.router.cells_of(rig.storyteller.id or 0)
    rig.world.add_zone_cell(1, 201)
    await rig.reload_tick()
    assert 201 in rig.daemon.pipeline.router.cells_of(rig.storyteller.id or 0)
    rig.world.emote(1003, "stumbles out of the temple.")  # Ilsa is in 202; move her to 201
    rig.world.move(1003, 201)
    await _wait(rig.runner, lambda: any(t.room_id == 201 for t in rig.runner.turn_triggers))


async def test_a_deleted_storyteller_is_forgotten(rig: Rig) -> None:
    await rig.store.storytellers.delete(rig.storyteller.id or 0)
    await rig.reload_tick()
    assert rig.daemon.pipeline.router.storytellers == []
    assert rig.daemon.heartbeats.job_ids() == []


async def test_stop_drains_a_turn_in_flight(rig: Rig) -> None:
    rig.runner.release.clear()
    st = await rig.store.storytellers.get(rig.storyteller.id or 0)
    assert await rig.daemon.pipeline.direct(st, "a bell tolls")
    await asyncio.wait_for(rig.runner.started.wait(), 5)
    rig.stop.set()
    await settle()
    assert not rig.task.done()  # waiting for the turn, not cutting it off
    assert await rig.daemon.pipeline.direct(st, "too late") is False  # intake is closed
    rig.runner.release.set()
    await asyncio.wait_for(rig.task, 5)
    assert [t.text for t in rig.runner.turn_triggers] == ["a bell tolls"]
    assert rig.daemon.pipeline.stats.turns["completed"] == 1


async def test_drain_deadline_cancels_what_is_left(sqlite_store: Store) -> None:
    st = await sqlite_store.storytellers.create("Stuck")
    st = await sqlite_store.storytellers.save(replace(st, paused=False))
    runner = ScriptedTurnRunner()
    runner.release.clear()
    clock = FakeClock()
    pipeline = _pipeline(sqlite_store, clock, runner)
    daemon = Daemon(
        settings=sqlite_store.storytellers,
        world=SimWorld.harbour_town(),
        pipeline=pipeline,
        clock=clock,
        drain_seconds=0.01,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    await asyncio.wait_for(daemon.ready.wait(), 5)
    await pipeline.direct(st, "never finishes")
    await asyncio.wait_for(runner.started.wait(), 5)
    stop.set()
    await asyncio.wait_for(task, 5)  # returns although the turn never finished
    assert runner.turns == []
    assert pipeline.stats.turns["crashed"] == 0


async def test_the_daemon_goes_red_and_alerts_on_a_stalled_intake_and_recovers(
    sqlite_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """The game sends (its activity grows) while nothing is stored: health goes red once."""
    stall = 120.0
    st = await sqlite_store.storytellers.create("Watcher")
    await sqlite_store.storytellers.save(
        replace(st, subscriptions=frozenset({EventKind.ROOM}),
                surveillance=st.surveillance.toggled("include", 101))
    )  # fmt: skip
    world, clock, alerts, activity = SimWorld.harbour_town(), FakeClock(), RecordedAlerts(), [0]
    daemon = Daemon(
        settings=sqlite_store.storytellers,
        world=world,
        pipeline=_pipeline(sqlite_store, clock, ScriptedTurnRunner()),
        clock=clock,
        alerts=alerts,
        intake_activity=lambda: activity[0],
        stall_seconds=stall,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    try:
        await asyncio.wait_for(daemon.ready.wait(), 5)
        await settle()
        assert daemon.world_status == "subscribed"
        await clock.advance(stall * 2)  # quiet: no activity, no stall
        assert daemon.world_status == "subscribed" and alerts.kinds == []

        activity[0] += 40  # the game sends, nothing gets stored
        await clock.advance(stall * 2)
        assert daemon.world_status == "stalled"
        assert alerts.kinds == ["intake_stalled"]
        assert any("world intake stalled" in r.getMessage() for r in caplog.records)
        await clock.advance(stall * 2)
        assert alerts.kinds == ["intake_stalled"]  # once per stall

        echo = world.emote(1001, "waves.")  # an event is stored: intake moves again
        await asyncio.wait_for(daemon.wait_cursor(echo.cursor), 5)
        assert daemon.world_status == "subscribed"
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)
