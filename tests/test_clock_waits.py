"""`within` never leaves its work behind: cancelled once or again, it returns only after the work
has ended, so work cut off mid-write cannot outlive its caller (nor the database under it)."""

from __future__ import annotations

import asyncio

import pytest

from storyteller_daemon.clock import DeadlinePassed, within
from storyteller_daemon.testing.clock import FakeClock, settle


class SlowUnwinding:
    """Work that, once cancelled, needs `finish` set before it has ended (a write rolling back)."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.finish = asyncio.Event()
        self.ended = False

    async def run(self) -> str:
        self.started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await self.finish.wait()
            self.ended = True
            raise
        return "never"


async def test_a_caller_cancelled_twice_waits_for_its_work_to_end() -> None:
    clock = FakeClock()
    work = SlowUnwinding()
    caller = asyncio.create_task(within(clock.sleep, 60, work.run()))
    await work.started.wait()
    caller.cancel()
    await settle()
    caller.cancel()  # a task group aborting cancels again
    await settle()
    assert not caller.done() and not work.ended  # still unwinding: the caller waits
    work.finish.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert work.ended


async def test_the_deadline_waits_for_the_work_it_cancels_to_end() -> None:
    clock = FakeClock()
    work = SlowUnwinding()
    caller = asyncio.create_task(within(clock.sleep, 5, work.run()))
    await work.started.wait()
    await clock.advance(5)
    assert not caller.done() and not work.ended
    work.finish.set()
    with pytest.raises(DeadlinePassed):
        await caller
    assert work.ended


async def test_work_done_in_time_is_its_result() -> None:
    async def quick() -> str:
        return "done"

    assert await within(FakeClock().sleep, 5, quick()) == "done"
