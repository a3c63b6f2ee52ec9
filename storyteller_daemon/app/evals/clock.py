"""Virtual time for scenario runs: the clock moves only when the eval runner moves it.

A scenario says "at 0s someone speaks, at 40s a crime": the daemon under test must see forty
seconds pass, its attention window close and its heartbeats come due, without anyone waiting
forty seconds. `VirtualClock` is the runtime `Clock` of such a run: `sleep` waits until the
runner advances time past its deadline, and `next_deadline` tells the runner where the nearest
sleeper is, so it can jump straight to it once the daemon has nothing else to do. `activity`
counts every reading and every sleep, so the runner can tell a daemon at rest (nothing touches
the clock) from one still at work.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
from datetime import datetime, timedelta


class VirtualClock:
    """A `Clock` whose time stands still until `advance_to` moves it.

    Args:
        start: the wall time at virtual second 0.
    """

    def __init__(self, start: datetime) -> None:
        self._start = start
        self._elapsed = 0.0
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()
        self.activity = 0
        """Readings and sleeps so far: unchanged while the daemon rests."""

    @property
    def elapsed(self) -> float:
        """Virtual seconds since the start."""
        return self._elapsed

    def now(self) -> datetime:
        """The start plus the virtual seconds elapsed."""
        self.activity += 1
        return self._start + timedelta(seconds=self._elapsed)

    def monotonic(self) -> float:
        """Virtual seconds elapsed."""
        self.activity += 1
        return self._elapsed

    async def sleep(self, seconds: float) -> None:
        """Wait until virtual time has moved on by `seconds`."""
        self.activity += 1
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._elapsed + seconds, next(self._order), future))
        await future

    def next_deadline(self) -> float | None:
        """The virtual second the nearest sleeper wakes at (None: nobody sleeps)."""
        while self._sleepers and self._sleepers[0][2].done():  # cancelled sleeps
            heapq.heappop(self._sleepers)
        return self._sleepers[0][0] if self._sleepers else None

    async def advance_to(self, target: float) -> None:
        """Move time on to `target` (never back), waking the sleepers due on the way in
        deadline order; each woken sleeper sees its own deadline as the time."""
        while (due := self.next_deadline()) is not None and due <= target:
            _, _, future = heapq.heappop(self._sleepers)
            self._elapsed = max(self._elapsed, due)
            future.set_result(None)
            await asyncio.sleep(0)
        self._elapsed = max(self._elapsed, target)
        await asyncio.sleep(0)
