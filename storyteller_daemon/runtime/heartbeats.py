"""Fuzzy 5m/10m/30m/1h heartbeats on APScheduler, each storyteller at its own stable phase.

A storyteller's heartbeat fires at ``epoch + phase + k * period``, where the phase is derived
from the storyteller id and the period. Different storytellers therefore spread over the period
(FutureMUD's "fuzzy" heartbeats) while each keeps the same phase across restarts and setting
changes. Late runs inside half a period still fire (coalesced into one); later ones are counted
and logged as missed, never silently dropped.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from apscheduler.events import EVENT_JOB_MAX_INSTANCES, EVENT_JOB_MISSED, JobEvent
from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.interval import IntervalTrigger

from storyteller_daemon.domain.settings import Heartbeat, Storyteller

log = logging.getLogger(__name__)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

FireHeartbeat = Callable[[int, Heartbeat], Awaitable[None]]


def heartbeat_phase(storyteller_id: int, heartbeat: Heartbeat) -> int:
    """Seconds into each period at which this storyteller's heartbeat fires (stable)."""
    digest = hashlib.sha256(f"{storyteller_id}:{heartbeat.value}".encode()).hexdigest()
    return int(digest[:12], 16) % heartbeat.seconds


def next_fire_time(now: datetime, storyteller_id: int, heartbeat: Heartbeat) -> datetime:
    """The first fire time at or after `now`."""
    period = heartbeat.seconds
    phase = heartbeat_phase(storyteller_id, heartbeat)
    elapsed = (now - EPOCH).total_seconds() - phase
    periods = -(-elapsed // period)  # ceiling division
    return EPOCH + timedelta(seconds=phase + periods * period)


def job_id(storyteller_id: int, heartbeat: Heartbeat) -> str:
    """The scheduler job id of one storyteller's heartbeat."""
    return f"heartbeat:{storyteller_id}:{heartbeat.value}"


def make_trigger(storyteller_id: int, heartbeat: Heartbeat) -> IntervalTrigger:
    """An interval trigger aligned to the storyteller's phase."""
    start = EPOCH + timedelta(seconds=heartbeat_phase(storyteller_id, heartbeat))
    return IntervalTrigger(seconds=heartbeat.seconds, start_date=start, timezone=UTC)


class HeartbeatScheduler:
    """Keeps one scheduler job per (storyteller, subscribed heartbeat)."""

    def __init__(self, fire: FireHeartbeat, scheduler: AsyncIOScheduler | None = None) -> None:
        self._fire = fire
        self._scheduler = scheduler or AsyncIOScheduler(timezone=UTC)
        self._scheduler.add_listener(self._on_problem, EVENT_JOB_MISSED | EVENT_JOB_MAX_INSTANCES)
        self.missed: Counter[str] = Counter()

    @property
    def running(self) -> bool:
        """Whether the scheduler is alive."""
        return bool(self._scheduler.running)

    def start(self) -> None:
        """Start scheduling (must be called with the event loop running)."""
        self._scheduler.start()

    def shutdown(self) -> None:
        """Stop scheduling; a heartbeat already handed to the pipeline is not affected."""
        if self._scheduler.running:
            self._scheduler.shutdown(wait=False)

    def wanted_jobs(self, storytellers: Iterable[Storyteller]) -> dict[str, tuple[int, Heartbeat]]:
        """Job id → (storyteller id, heartbeat) for every subscribed heartbeat."""
        return {
            job_id(st.id, hb): (st.id, hb)
            for st in storytellers
            if st.id is not None
            for hb in st.heartbeats
        }

    def sync(self, storytellers: Iterable[Storyteller]) -> None:
        """Add and remove jobs so they match the storytellers' heartbeat subscriptions."""
        wanted = self.wanted_jobs(storytellers)
        for job in self._scheduler.get_jobs():
            if job.id.startswith("heartbeat:") and job.id not in wanted:
                job.remove()
        for jid, (sid, hb) in wanted.items():
            if self._scheduler.get_job(jid) is None:
                self._scheduler.add_job(
                    self._fire,
                    make_trigger(sid, hb),
                    args=(sid, hb),
                    id=jid,
                    coalesce=True,
                    max_instances=1,
                    misfire_grace_time=hb.seconds // 2,
                )

    def job_ids(self) -> list[str]:
        """Scheduled heartbeat job ids, sorted."""
        return sorted(j.id for j in self._scheduler.get_jobs() if j.id.startswith("heartbeat:"))

    def _on_problem(self, event: Any) -> None:
        if isinstance(event, JobEvent):
            self.missed[event.job_id] += 1
            log.warning(
                "heartbeat %s did not run on time (scheduled %s); it will fire at its next period",
                event.job_id,
                getattr(event, "scheduled_run_time", "?"),
            )
