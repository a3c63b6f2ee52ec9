"""The intake watchdog: a game that sends while nothing is stored turns health red, once."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any

import pytest

from storyteller_daemon.config import AttentionConfig
from storyteller_daemon.domain.settings import EventKind
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.intake_watch import Change, IntakeWatch
from storyteller_daemon.runtime.observers import LoggingObserver
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.routing import Router
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock, settle
from world_adapter.events import Cursor
from world_adapter.sim import SimWorld

STALL = 120.0


def test_activity_without_progress_is_a_stall_once_and_progress_ends_it() -> None:
    activity = [0]
    watch = IntakeWatch(lambda: activity[0], STALL)
    assert watch.look(0.0) is Change.NONE  # not started
    watch.progress(Cursor("e", 1), 0.0)
    activity[0] = 5
    assert watch.look(STALL - 1) is Change.NONE  # not long enough
    assert watch.look(STALL) is Change.STALLED
    assert watch.stalled is not None and watch.stalled.activity == 5
    assert watch.stalled.cursor == Cursor("e", 1)
    assert watch.look(STALL * 3) is Change.NONE  # said once
    assert watch.progress(Cursor("e", 1), STALL * 3) is Change.NONE  # the same cursor: no
    assert watch.progress(Cursor("e", 2), STALL * 3) is Change.RESUMED
    assert watch.stalled is None


def test_a_quiet_world_never_stalls() -> None:
    watch = IntakeWatch(lambda: 7, STALL)
    watch.progress(None, 0.0)
    assert watch.look(STALL * 100) is Change.NONE


def test_busy_intake_that_moves_is_no_stall() -> None:
    activity = [0]
    watch = IntakeWatch(lambda: activity[0], STALL)
    for second in range(0, 1000, 10):
        activity[0] += 3
        watch.progress(Cursor("e", second), float(second))
        assert watch.look(float(second) + 5) is Change.NONE


class Alerts:
    def __init__(self) -> None:
        self.kinds: list[str] = []

    def alert(self, kind: str, title: str, detail: str = "", **_: Any) -> None:
        self.kinds.append(kind)


class Runner:
    async def judge(self, st: Any, triggers: Any) -> list[Any]:
        return []

    async def run_turn(self, st: Any, trigger: Any, key: str) -> Any:
        raise AssertionError("no turns here")

    async def interrupted(self, *args: Any) -> None:
        return None


async def test_the_daemon_goes_red_and_alerts_on_a_stall_and_recovers(
    sqlite_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    st = await sqlite_store.storytellers.create("Watcher")
    await sqlite_store.storytellers.save(
        replace(
            st,
            paused=True,  # events are stored and dropped at the pause: no model involved
            subscriptions=frozenset({EventKind.ROOM}),
            surveillance=st.surveillance.toggled("include", 101),
        )
    )
    world, clock, alerts, activity = SimWorld.harbour_town(), FakeClock(), Alerts(), [0]
    pipeline = Pipeline(
        router=Router(),
        runner=Runner(),
        clock=clock,
        stats=RuntimeStats(),
        observer=LoggingObserver(),
        backlog=BacklogRepository(sqlite_store.db, clock.now),
        attention=AttentionConfig(),
        queue_size=25,
        model_available=True,
    )
    daemon = Daemon(
        settings=sqlite_store.storytellers,
        world=world,
        pipeline=pipeline,
        clock=clock,
        alerts=alerts,
        intake_activity=lambda: activity[0],
        stall_seconds=STALL,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    try:
        await asyncio.wait_for(daemon.ready.wait(), 5)
        await settle()
        assert daemon.world_status == "subscribed"
        await clock.advance(STALL * 2)  # quiet: no activity, no stall
        assert daemon.world_status == "subscribed" and alerts.kinds == []

        activity[0] += 40  # the game sends, nothing gets stored
        await clock.advance(STALL * 2)
        assert daemon.world_status == "stalled"
        assert alerts.kinds == ["intake_stalled"]
        assert any("world intake stalled" in r.getMessage() for r in caplog.records)
        await clock.advance(STALL * 2)
        assert alerts.kinds == ["intake_stalled"]  # once per stall

        world.emote(1001, "waves.")  # an event is stored: intake moves again
        await settle()
        await asyncio.wait_for(daemon.wait_cursor(daemon.cursor or Cursor("sim-1", 1)), 5)
        assert daemon.world_status == "subscribed"
    finally:
        stop.set()
        await asyncio.wait_for(task, 5)
