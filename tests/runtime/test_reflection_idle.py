"""Reflection while idle: only quiet storytellers reflect, at most once per interval, one's
failure does not stop the others, and the daemon's reflection task stops with the daemon."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

import pytest
from reflection_rig import USAGE, Rig, reflection_rig, storyteller

from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import Config, ReflectionConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.work import NewWork, WorkState
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.reflection import ReflectionScheduler
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, text
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
from world_adapter.sim import SimWorld

CFG = ReflectionConfig(check_seconds=30, quiet_seconds=120, interval_seconds=3600)


def held_runner() -> ScriptedTurnRunner:
    """Turns wait for `release`; attention is never asked (direct turns skip it)."""
    return ScriptedTurnRunner(judge_error=AssertionError("not asked"))


@dataclass
class Idle:
    rig: Rig
    pipeline: Pipeline
    runner: ScriptedTurnRunner
    scheduler: ReflectionScheduler
    storytellers: list[Storyteller]


def make_pipeline(rig: Rig, runner: ScriptedTurnRunner) -> Pipeline:
    return wired_pipeline(rig.store, runner=runner, clock=rig.clock).pipeline


@pytest.fixture
async def idle(sqlite_store: Store) -> AsyncIterator[Idle]:
    model = ScriptedModel(then=text("A quiet day.", USAGE))
    rig = reflection_rig(sqlite_store.db, model, cfg=CFG, clock=FakeClock())
    alpha = await storyteller(rig.store, "Alpha")
    beta = await storyteller(rig.store, "Beta")
    gamma = await rig.store.storytellers.save(
        replace(await storyteller(rig.store, "Gamma"), paused=True)
    )
    for st in (alpha, beta, gamma):
        assert st.id is not None
        await rig.store.memories.create(st.id, 7, "Wren", f"{st.name} saw Wren steal a purse.")
    runner = held_runner()
    pipeline = make_pipeline(rig, runner)
    pipeline.router.update([alpha, beta, gamma], {})
    task = asyncio.create_task(pipeline.run())
    await asyncio.wait_for(pipeline.wait_idle(), 5)  # resumed what the backlog held
    scheduler = ReflectionScheduler(rig.reflection, pipeline, rig.clock, CFG)
    try:
        yield Idle(rig, pipeline, runner, scheduler, [alpha, beta, gamma])
    finally:
        runner.release.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_quiet_storytellers_reflect_once_per_interval_and_paused_ones_never(
    idle: Idle,
) -> None:
    clock, scheduler = idle.rig.clock, idle.scheduler
    assert await scheduler.look() == []  # just started: nobody has been quiet long enough
    await clock.advance(119)
    assert await scheduler.look() == []
    await clock.advance(1)
    assert await scheduler.look() == [1, 2]  # Gamma is paused
    assert len(idle.rig.model.requests) == 2
    assert idle.rig.stats.reflections["digest_refreshed"] == 2

    await clock.advance(3599)
    assert await scheduler.look() == []  # within the interval
    await clock.advance(1)
    assert await scheduler.look() == [1, 2]
    assert len(idle.rig.model.requests) == 2  # nothing changed: no request
    assert idle.rig.stats.reflections["digest_unchanged"] == 2


async def test_a_storyteller_with_work_does_not_reflect(idle: Idle) -> None:
    clock, scheduler, pipeline = idle.rig.clock, idle.scheduler, idle.pipeline
    alpha, beta, _ = idle.storytellers
    assert await pipeline.submit_direct(alpha, "The bells ring.") is None
    await asyncio.wait_for(idle.runner.started.wait(), 5)
    await clock.advance(600)
    assert pipeline.quiet_for(1) is None  # its turn runs
    assert await scheduler.look() == [2]

    idle.runner.release.set()
    await asyncio.wait_for(pipeline.wait_idle(), 5)
    assert pipeline.quiet_for(1) == 0  # quiet from the end of its turn on
    await clock.advance(120)
    assert await scheduler.look() == [1]

    # Work the lane has not seen yet (stored by another writer) still counts: the backlog is
    # the durable truth.
    await BacklogRepository(idle.rig.store.db, clock).add(
        [NewWork(2, "direct:x", "direct", "direct:x", None, "{}", WorkState.INTERESTED)]
    )
    await clock.advance(3600)
    assert pipeline.quiet_for(2) is not None
    assert await scheduler.look() == [1]


async def test_one_storytellers_failure_is_logged_and_the_others_go_on(
    idle: Idle, caplog: pytest.LogCaptureFixture
) -> None:
    idle.rig.model.add(RuntimeError("a bug in the digest"))  # the first request fails
    await idle.rig.clock.advance(120)
    with caplog.at_level(logging.ERROR):
        assert await idle.scheduler.look() == [1, 2]
    assert "reflection of storyteller Alpha failed; the others go on" in caplog.text
    assert idle.rig.stats.reflections["failed"] == 1
    assert await idle.rig.store.digests.latest(1) is None
    beta = await idle.rig.store.digests.latest(2)
    assert beta is not None and beta.text == "A quiet day."
    [crashed, _] = sorted(await idle.rig.runs.list(kind="digest"), key=lambda r: r.storyteller_id)
    assert crashed.outcome == "crashed" and "a bug in the digest" in (crashed.error or "")


async def test_the_daemons_reflection_task_runs_on_its_clock_and_stops_with_it(
    sqlite_store: Store,
) -> None:
    model = ScriptedModel(then=text("A quiet day.", USAGE))
    clock = FakeClock()
    rig = reflection_rig(sqlite_store.db, model, cfg=CFG, clock=clock)
    st = await storyteller(rig.store)
    assert st.id is not None
    await rig.store.memories.create(st.id, 7, "Wren", "Wren stole a purse.")
    pipeline = make_pipeline(rig, held_runner())
    scheduler = ReflectionScheduler(rig.reflection, pipeline, clock, CFG)
    daemon = Daemon(
        settings=rig.store.storytellers,
        world=SimWorld.harbour_town(),
        pipeline=pipeline,
        clock=clock,
        reload_seconds=3600,
        drain_seconds=5,
        idle_work=scheduler,
    )
    model.hold()
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    try:
        await asyncio.wait_for(daemon.ready.wait(), 5)
        await asyncio.wait_for(pipeline.wait_idle(), 5)
        was_running = scheduler.running
        for looks in (1, 2, 3):
            await clock.advance(30)
            await asyncio.wait_for(scheduler.wait_looks(looks), 5)
        assert model.requests == []  # quiet for 90 s only
        await clock.advance(30)
        await asyncio.wait_for(model.wait_for_requests(1), 5)  # the digest request is out
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)
    assert was_running and not scheduler.running
    assert await rig.store.digests.latest(st.id) is None  # cut off: nothing written
    assert await rig.runs.list(kind="digest") == []  # a run cut off at shutdown is not stored


async def test_the_composition_root_gives_the_daemon_its_reflection_task(
    sqlite_store: Store, sqlite_url: str
) -> None:
    from storyteller_daemon.app import ModelChoice, build_runtime
    from storyteller_daemon.config import parse_config

    def config(**reflection: object) -> Config:
        return parse_config({"database": {"url": sqlite_url}, "reflection": reflection}, "test")

    choice = ModelChoice(ScriptedModel(then=text("A quiet day.", USAGE)), "scripted")
    on = await build_runtime(
        config(),
        environ={},
        world=SimWorld.harbour_town(),
        choice=choice,
        store=sqlite_store,
        clock=SystemClock(),
    )
    assert isinstance(on.daemon.idle_work, ReflectionScheduler)
    assert on.reflection is not None and on.reflection.stats is on.stats
    off = await build_runtime(
        config(enabled=False),
        environ={},
        world=SimWorld.harbour_town(),
        choice=choice,
        store=sqlite_store,
        clock=SystemClock(),
    )
    assert off.daemon.idle_work is None and off.reflection is None
