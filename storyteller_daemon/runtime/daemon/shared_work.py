"""A cluster daemon's part in the intake the daemons share.

Every daemon of a cluster follows the game; each event is stored once, by the daemon that has
it first, which routes it to every storyteller that hears it, wherever it runs (see
`runtime.pipeline.intake`). `SharedWork` is the other half: it hears of the work the other
daemons stored for the storytellers run here and wakes their lanes at once, and every sweep
span it dispatches the events a daemon stored and died before routing, and shows the lanes
the work whose word never came (its listening connection ended, say).
"""

from __future__ import annotations

import asyncio

from storyteller_daemon.clock import Clock, sleep_or_wake
from storyteller_daemon.domain.work import WorkArrival
from storyteller_daemon.runtime.daemon.ports import WorkNotices
from storyteller_daemon.runtime.daemon.state import log
from storyteller_daemon.runtime.daemon.world_pump import WorldPump
from storyteller_daemon.runtime.pipeline import Pipeline


class SharedWork:
    """Hears of work stored elsewhere for the storytellers run here, and sweeps.

    Args:
        notices: word of the work other daemons store.
        pump: the world pump (it dispatches what a dead daemon left).
        pipeline: whose lanes are woken.
        clock: the runtime's clock.
        sweep_seconds: how often to sweep; an event undispatched for this long was left.
    """

    def __init__(
        self,
        notices: WorkNotices,
        pump: WorldPump,
        pipeline: Pipeline,
        clock: Clock,
        sweep_seconds: float,
    ) -> None:
        self._notices = notices
        self._pump = pump
        self._pipeline = pipeline
        self._clock = clock
        self._sweep_seconds = sweep_seconds
        self._heard: list[WorkArrival] = []
        self._wake = asyncio.Event()
        self._sweep_now = False
        self.sweeps = 0
        """Completed sweeps (tests wait on this instead of sleeping)."""

    def _hear(self, arrivals: list[WorkArrival]) -> None:
        self._heard.extend(arrivals)
        self._wake.set()

    def _missed(self) -> None:
        """Notices may have been lost (the listening connection ended): sweep now."""
        self._sweep_now = True
        self._wake.set()

    async def run(self) -> None:
        """Listen and sweep until cancelled."""
        async with self._notices(self._hear, self._missed):
            due = self._clock.monotonic() + self._sweep_seconds
            while True:
                await sleep_or_wake(
                    self._clock, self._wake, max(0.0, due - self._clock.monotonic())
                )
                self._wake.clear()
                if self._heard:
                    heard, self._heard = self._heard, []
                    await self._pipeline.arrived(heard)
                if self._sweep_now or self._clock.monotonic() >= due:
                    self._sweep_now = False
                    due = self._clock.monotonic() + self._sweep_seconds
                    await self.sweep()

    async def sweep(self) -> None:
        """Dispatch events left undispatched for a sweep span; show lanes unseen work."""
        try:
            await self._pump.dispatch_stale(self._sweep_seconds)
            await self._pipeline.look_at_backlog()
        except Exception as exc:  # the next sweep tries again
            log.warning("cluster: the sweep for left work failed: %s", exc)
        self.sweeps += 1
