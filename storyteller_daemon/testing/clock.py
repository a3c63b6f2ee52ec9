"""A manual clock for deterministic tests: time moves only when the test advances it."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta


class FakeClock:
    """Implements the runtime `Clock`; `advance()` wakes the sleepers whose time has come.

    Args:
        start: the wall time at fake second 0.
        tick: seconds every reading (`now`, `monotonic`) moves the clock on before it answers,
            for code that only reads the clock and must see each reading differ; sleepers are
            not woken by it.
    """

    def __init__(self, start: datetime | None = None, *, tick: float = 0.0) -> None:
        self._start = start or datetime(2026, 1, 1, tzinfo=UTC)
        self._elapsed = 0.0
        self._tick = tick
        self._shift = timedelta()
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> datetime:
        """Start time plus elapsed fake seconds (plus any `set_now` shift)."""
        self._elapsed += self._tick
        return self._start + self._shift + timedelta(seconds=self._elapsed)

    def monotonic(self) -> float:
        """Elapsed fake seconds."""
        self._elapsed += self._tick
        return self._elapsed

    def set_now(self, moment: datetime) -> None:
        """Set the wall time to `moment`, forward or back, as an adjusted system clock does:
        monotonic time and sleepers are untouched."""
        self._shift = moment - self._start - timedelta(seconds=self._elapsed)

    async def sleep(self, seconds: float) -> None:
        """Wait until the test has advanced the clock by `seconds`."""
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._elapsed + seconds, next(self._order), future))
        await future

    @property
    def sleepers(self) -> int:
        """How many tasks are waiting on this clock."""
        return sum(1 for _, _, f in self._sleepers if not f.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking sleepers in deadline order and letting them run."""
        target = self._elapsed + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            self._elapsed = max(self._elapsed, deadline)
            if not future.done():
                future.set_result(None)
            await settle()
        self._elapsed = target
        await settle()


async def settle(rounds: int = 20) -> None:
    """Let ready tasks run until the loop is quiet (no real time passes)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def eventually(done: Callable[[], bool], what: str, *, seconds: float = 60.0) -> None:
    """Yield to the loop until `done()`, for work answered outside it (a database's threads,
    another process's notifications): bounded by the loop's own time, not by a number of
    yields that a loaded machine can outrun. Raises AssertionError naming `what` after
    `seconds`. The fake clock does not move meanwhile."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not done():
        if loop.time() > deadline:
            raise AssertionError(f"{what} did not happen within {seconds:g} s")
        await asyncio.sleep(0.001)  # not 0: the threads waited for need the GIL too
