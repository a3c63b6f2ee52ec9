"""The eval runner's virtual clock: time moves only when advanced, sleepers wake in order."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from storyteller_daemon.app.evals.clock import VirtualClock

START = datetime(2026, 6, 1, 19, 0, tzinfo=UTC)


async def test_sleepers_wake_at_their_deadlines_in_order_and_time_stands_between() -> None:
    clock = VirtualClock(START)
    woke: list[tuple[str, float]] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append((name, clock.monotonic()))

    tasks = [asyncio.create_task(sleeper(n, s)) for n, s in (("b", 40), ("a", 5), ("c", 40))]
    await asyncio.sleep(0)
    assert clock.next_deadline() == 5 and woke == []
    await asyncio.sleep(0.01)  # real time passes; virtual time does not
    assert clock.now() == START and clock.elapsed == 0
    await clock.advance_to(5)
    assert woke == [("a", 5)] and clock.next_deadline() == 40
    await clock.advance_to(100)
    await asyncio.gather(*tasks)
    assert woke == [("a", 5), ("b", 40), ("c", 40)]
    assert clock.now() == START + timedelta(seconds=100) and clock.next_deadline() is None
    await clock.advance_to(50)  # never back
    assert clock.elapsed == 100


async def test_a_cancelled_sleep_is_no_deadline_and_activity_counts_every_touch() -> None:
    clock = VirtualClock(START)
    task = asyncio.create_task(clock.sleep(30))
    await asyncio.sleep(0)
    assert clock.next_deadline() == 30
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert clock.next_deadline() is None
    before = clock.activity
    clock.now()
    clock.monotonic()
    await clock.sleep(0)
    assert clock.activity == before + 3
