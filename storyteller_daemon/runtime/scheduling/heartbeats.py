"""Fuzzy 5m/10m/30m/1h heartbeats on the daemon's clock, each storyteller at its own stable phase.

A storyteller's heartbeat fires at ``epoch + phase + k * period``, where the phase is derived
from the storyteller id and the period. Different storytellers therefore spread over the period
(FutureMUD's "fuzzy" heartbeats) while each keeps the same phase across restarts and setting
changes. A heartbeat that comes due late by at most half a period still fires (once, however
many periods it slept through); a later one is counted and logged as missed, never silently
dropped.

`HeartbeatScheduler.run` is one task of the daemon's TaskGroup and waits on the injected
`Clock`, so a fake clock drives it in tests and shutdown cancels it with everything else.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime, timedelta

from storyteller_daemon.clock import Clock, sleep_or_wake
from storyteller_daemon.domain.storytellers import Heartbeat, Storyteller

log = logging.getLogger(__name__)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

FireHeartbeat = Callable[[int, Heartbeat], Awaitable[None]]
Job = tuple[int, Heartbeat]


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
    """The name of one storyteller's heartbeat (in logs and the missed counter)."""
    return f"heartbeat:{storyteller_id}:{heartbeat.value}"


class HeartbeatScheduler:
    """Fires every subscribed heartbeat of every storyteller at its fire times.

    Args:
        fire: Hands one heartbeat to the pipeline (quick: it only stores the work).
        clock: The daemon's clock; `run` sleeps on it.
    """

    def __init__(self, fire: FireHeartbeat, clock: Clock) -> None:
        self._fire = fire
        self._clock = clock
        self._due: dict[Job, datetime] = {}
        self._changed = asyncio.Event()
        self.running = False
        """Whether `run` is scheduling (shown by /healthz)."""
        self.missed: Counter[str] = Counter()
        """Heartbeats that came due more than half a period late, by `job_id`."""
        self.holding = False
        """True: nothing fires on schedule (a scenario run of ``storyteller eval`` fires the
        heartbeats its scenario names, at their times); set before `run`."""

    def sync(self, storytellers: Iterable[Storyteller]) -> None:
        """Add and remove heartbeats so they match the storytellers' subscriptions; a kept one
        keeps its next fire time."""
        wanted = {(st.id, hb) for st in storytellers if st.id is not None for hb in st.heartbeats}
        now = self._clock.now()
        self._due = {job: self._due.get(job) or next_fire_time(now, *job) for job in sorted(wanted)}
        self._changed.set()

    def job_ids(self) -> list[str]:
        """Scheduled heartbeats, sorted."""
        return sorted(job_id(*job) for job in self._due)

    def next_due(self) -> datetime | None:
        """When the next heartbeat fires (None with nothing scheduled)."""
        return min(self._due.values(), default=None)

    async def run(self) -> None:
        """Fire heartbeats as they come due, until cancelled."""
        self.running = True
        try:
            while True:
                if not self.holding:
                    await self._fire_due(self._clock.now())
                upcoming = None if self.holding else self.next_due()
                wait = None
                if upcoming is not None:
                    wait = max(0.0, (upcoming - self._clock.now()).total_seconds())
                await self._wait(wait)
        finally:
            self.running = False

    async def _fire_due(self, now: datetime) -> None:
        for job, due in sorted(self._due.items(), key=lambda item: item[1]):
            if due > now or job not in self._due:
                continue
            storyteller_id, heartbeat = job
            following = next_fire_time(now, storyteller_id, heartbeat)
            if following <= due:
                following = due + timedelta(seconds=heartbeat.seconds)
            self._due[job] = following
            late = (now - due).total_seconds()
            if late > heartbeat.seconds / 2:
                self.missed[job_id(*job)] += 1
                log.warning(
                    "heartbeat %s did not run on time (due %s, %.0f s late); it will fire at %s",
                    job_id(*job),
                    due.isoformat(),
                    late,
                    following.isoformat(),
                )
                continue
            try:
                await self._fire(storyteller_id, heartbeat)
            except Exception:
                log.exception("heartbeat %s could not be handed on", job_id(*job))

    async def _wait(self, seconds: float | None) -> None:
        """Sleep `seconds` on the clock (None: indefinitely), or until `sync` changes the plan."""
        self._changed.clear()
        await sleep_or_wake(self._clock, self._changed, seconds)
