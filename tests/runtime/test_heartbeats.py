"""Heartbeats: stable phases, aligned fire times, job sync, misfires counted (no real waiting)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apscheduler.events import EVENT_JOB_MISSED, JobExecutionEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from storyteller_daemon.domain.settings import Heartbeat, Storyteller
from storyteller_daemon.runtime.heartbeats import (
    HeartbeatScheduler,
    heartbeat_phase,
    job_id,
    make_trigger,
    next_fire_time,
)
from storyteller_daemon.testing.clock import settle

NOW = datetime(2026, 11, 22, 13, 0, 5, tzinfo=UTC)


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
        trigger = make_trigger(3, hb)
        assert trigger.get_next_fire_time(None, NOW) == first
        assert trigger.get_next_fire_time(first, first + timedelta(seconds=1)) == first + timedelta(
            seconds=hb.seconds
        )


async def test_sync_adds_and_removes_jobs_to_match_subscriptions() -> None:
    fired: list[tuple[int, Heartbeat]] = []

    async def fire(sid: int, hb: Heartbeat) -> None:
        fired.append((sid, hb))

    scheduler = HeartbeatScheduler(fire, AsyncIOScheduler(timezone=UTC))
    a = Storyteller(name="a", id=1, heartbeats=frozenset({Heartbeat.FIVE_MINUTES, Heartbeat.HOUR}))
    b = Storyteller(name="b", id=2, heartbeats=frozenset({Heartbeat.TEN_MINUTES}))
    scheduler.start()
    try:
        scheduler.sync([a, b])
        assert scheduler.job_ids() == sorted(
            [
                job_id(1, Heartbeat.FIVE_MINUTES),
                job_id(1, Heartbeat.HOUR),
                job_id(2, Heartbeat.TEN_MINUTES),
            ]
        )
        scheduler.sync([Storyteller(name="a", id=1, heartbeats=frozenset({Heartbeat.HOUR}))])
        assert scheduler.job_ids() == [job_id(1, Heartbeat.HOUR)]
        job = scheduler._scheduler.get_job(job_id(1, Heartbeat.HOUR))
        assert job.misfire_grace_time == 1800 and job.coalesce and job.max_instances == 1
        # running the job body hands the heartbeat to the pipeline
        await job.func(*job.args)
        assert fired == [(1, Heartbeat.HOUR)]
    finally:
        scheduler.shutdown()
    await settle()  # AsyncIOScheduler stops on the loop's next turn
    assert not scheduler.running


async def test_a_missed_heartbeat_is_counted_and_logged(caplog: object) -> None:
    async def fire(sid: int, hb: Heartbeat) -> None:
        return None

    scheduler = HeartbeatScheduler(fire, AsyncIOScheduler(timezone=UTC))
    event = JobExecutionEvent(EVENT_JOB_MISSED, job_id(4, Heartbeat.HOUR), "default", NOW)
    scheduler._on_problem(event)
    await settle()
    assert scheduler.missed[job_id(4, Heartbeat.HOUR)] == 1
