"""Heartbeats: stable phases, aligned fire times, sync, late heartbeats counted; all on a fake
clock inside the test's own task, as the daemon runs them inside its TaskGroup."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from storyteller_daemon.domain.storytellers import Heartbeat, Storyteller
from storyteller_daemon.runtime.scheduling.heartbeats import (
    HeartbeatScheduler,
    heartbeat_phase,
    job_id,
    next_fire_time,
)
from storyteller_daemon.testing.clock import FakeClock, settle

NOW = datetime(2026, 11, 22, 13, 0, 5, tzinfo=UTC)
FIVE = Heartbeat.FIVE_MINUTES


def test_phase_is_stable_within_the_period_and_spreads_storytellers() -> None:
    for hb in Heartbeat:
        phases = {heartbeat_phase(i, hb) for i in range(1, 40)}
        assert all(0 <= p < hb.seconds for p in phases)
        assert len(phases) > 20  # storytellers do not all fire at once
        assert heartbeat_phase(7, hb) == heartbeat_phase(7, hb)


def test_fire_times_are_period_apart_at_the_phase() -> None:
    for hb in Heartbeat:
        first = next_fire_time(NOW, 3, hb)
        assert NOW <= first < NOW + timedelta(seconds=hb.seconds)
        assert int(first.timestamp()) % hb.seconds == heartbeat_phase(3, hb)
        assert next_fire_time(first, 3, hb) == first
        later = next_fire_time(first + timedelta(seconds=1), 3, hb)
        assert later == first + timedelta(seconds=hb.seconds)


class Rig:
    def __init__(self) -> None:
        self.clock = FakeClock(NOW)
        self.fired: list[tuple[int, Heartbeat, datetime]] = []
        self.scheduler = HeartbeatScheduler(self.fire, self.clock)
        self.failing: set[int] = set()

    async def fire(self, sid: int, hb: Heartbeat) -> None:
        self.fired.append((sid, hb, self.clock.now()))
        if sid in self.failing:
            raise RuntimeError("the pipeline is gone")

    def seconds_until(self, sid: int, hb: Heartbeat) -> float:
        return (next_fire_time(self.clock.now(), sid, hb) - self.clock.now()).total_seconds()


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    rig = Rig()
    task = asyncio.create_task(rig.scheduler.run())
    await settle()
    yield rig
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not rig.scheduler.running


def watcher(sid: int, *heartbeats: Heartbeat) -> Storyteller:
    return Storyteller(name=f"st{sid}", id=sid, heartbeats=frozenset(heartbeats))


async def test_sync_adds_and_removes_heartbeats_to_match_subscriptions(rig: Rig) -> None:
    assert rig.scheduler.running and rig.scheduler.next_due() is None
    rig.scheduler.sync([watcher(1, FIVE, Heartbeat.HOUR), watcher(2, Heartbeat.TEN_MINUTES)])
    assert rig.scheduler.job_ids() == sorted(
        [job_id(1, FIVE), job_id(1, Heartbeat.HOUR), job_id(2, Heartbeat.TEN_MINUTES)]
    )
    rig.scheduler.sync([watcher(1, Heartbeat.HOUR)])
    assert rig.scheduler.job_ids() == [job_id(1, Heartbeat.HOUR)]
    assert rig.scheduler.next_due() == next_fire_time(NOW, 1, Heartbeat.HOUR)


async def test_a_heartbeat_fires_at_its_phase_once_per_period(rig: Rig) -> None:
    rig.scheduler.sync([watcher(1, FIVE)])
    await settle()
    first = rig.seconds_until(1, FIVE)
    await rig.clock.advance(first - 1)
    assert rig.fired == []
    await rig.clock.advance(1)
    assert rig.fired == [(1, FIVE, next_fire_time(NOW, 1, FIVE))]
    await rig.clock.advance(FIVE.seconds * 3)
    times = [at for _, _, at in rig.fired]
    assert len(times) == 4
    assert {(b - a).total_seconds() for a, b in zip(times, times[1:], strict=False)} == {300.0}


async def test_a_storyteller_added_while_sleeping_is_scheduled_at_once(rig: Rig) -> None:
    rig.scheduler.sync([watcher(1, Heartbeat.HOUR)])
    await settle()
    rig.scheduler.sync([watcher(1, Heartbeat.HOUR), watcher(2, FIVE)])
    await settle()
    await rig.clock.advance(rig.seconds_until(2, FIVE))
    assert [(sid, hb) for sid, hb, _ in rig.fired] == [(2, FIVE)]


async def test_a_resync_keeps_each_heartbeats_next_fire_time(rig: Rig) -> None:
    rig.scheduler.sync([watcher(1, FIVE)])
    due = rig.scheduler.next_due()
    await rig.clock.advance(1)
    rig.scheduler.sync([watcher(1, FIVE)])
    assert rig.scheduler.next_due() == due


async def test_a_failing_hand_over_is_logged_and_the_next_still_fires(
    rig: Rig, caplog: pytest.LogCaptureFixture
) -> None:
    rig.failing.add(1)
    rig.scheduler.sync([watcher(1, FIVE)])
    await settle()
    with caplog.at_level(logging.ERROR):
        await rig.clock.advance(rig.seconds_until(1, FIVE) + FIVE.seconds)
    assert len(rig.fired) == 2
    assert "heartbeat:1:5m could not be handed on" in caplog.text


@pytest.mark.parametrize(("late", "fires"), [(0, True), (150, True), (151, False), (299, False)])
async def test_a_heartbeat_more_than_half_a_period_late_is_counted_not_fired(
    late: int, fires: bool, caplog: pytest.LogCaptureFixture
) -> None:
    # The process was suspended past a fire time: when it wakes, a heartbeat late by at most
    # half a period fires once; one later than that is counted as missed and logged, and the
    # heartbeat fires again at its next period either way.
    rig = Rig()
    rig.scheduler.sync([watcher(1, FIVE)])
    due = rig.scheduler.next_due()
    assert due is not None
    await rig.clock.advance(rig.seconds_until(1, FIVE) + late)  # the scheduler is not running
    with caplog.at_level(logging.WARNING):
        task = asyncio.create_task(rig.scheduler.run())
        await settle()
        assert [at for _, _, at in rig.fired] == ([rig.clock.now()] if fires else [])
        assert rig.scheduler.missed[job_id(1, FIVE)] == (0 if fires else 1)
        assert ("heartbeat heartbeat:1:5m did not run on time" in caplog.text) is not fires
        assert rig.scheduler.next_due() == due + timedelta(seconds=FIVE.seconds)
        await rig.clock.advance(FIVE.seconds - late)
        assert rig.fired[-1][2] == due + timedelta(seconds=FIVE.seconds)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


async def test_a_holding_scheduler_fires_nothing_and_sleeps_on_no_clock(rig: Rig) -> None:
    rig.scheduler.holding = True  # an eval's scenario fires its own heartbeats
    rig.scheduler.sync([watcher(1, FIVE)])
    await settle()
    assert rig.clock.sleepers == 0 and rig.scheduler.job_ids() == [job_id(1, FIVE)]
    await rig.clock.advance(FIVE.seconds * 3)
    assert rig.fired == []
