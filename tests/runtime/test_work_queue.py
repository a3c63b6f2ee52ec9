"""The bounded serial queue (FutureMUD's QueueStorytellerWork_RejectsWorkBeyondBoundedQueue)."""

from __future__ import annotations

import asyncio

from storyteller_daemon.runtime.work_queue import WorkQueue
from storyteller_daemon.testing.clock import settle


async def test_queue_storyteller_work_rejects_work_beyond_bounded_queue() -> None:
    release = asyncio.Event()
    ran: list[int] = []

    async def handler(item: int) -> None:
        await release.wait()
        ran.append(item)

    queue: WorkQueue[int] = WorkQueue("st", 25, handler)
    worker = asyncio.create_task(queue.run())
    try:
        assert all(queue.submit(i) for i in range(25))
        await settle()
        assert queue.outstanding == 25  # one running, 24 pending
        assert queue.submit(25) is False  # the 26th is rejected
        assert queue.rejected == 1
        release.set()
        await asyncio.wait_for(queue.wait_idle(), 2)
        assert queue.outstanding == 0
        assert ran == list(range(25))  # serial, in order; the rejected item never ran
        assert queue.submit(26)  # capacity is back
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


async def test_a_failing_item_does_not_stop_the_queue() -> None:
    seen: list[int] = []
    errors: list[str] = []

    async def handler(item: int) -> None:
        if item == 1:
            raise RuntimeError("boom")
        seen.append(item)

    queue: WorkQueue[int] = WorkQueue("st", 5, handler, lambda i, e: errors.append(str(e)))
    worker = asyncio.create_task(queue.run())
    try:
        for i in range(3):
            queue.submit(i)
        await asyncio.wait_for(queue.wait_idle(), 2)
        assert seen == [0, 2]
        assert errors == ["boom"]
    finally:
        worker.cancel()
        await asyncio.gather(worker, return_exceptions=True)


async def test_cancelling_a_running_item_releases_its_slot() -> None:
    started = asyncio.Event()

    async def handler(item: int) -> None:
        started.set()
        await asyncio.Event().wait()

    queue: WorkQueue[int] = WorkQueue("st", 1, handler)
    worker = asyncio.create_task(queue.run())
    queue.submit(1)
    await started.wait()
    worker.cancel()
    await asyncio.gather(worker, return_exceptions=True)
    assert queue.outstanding == 0
    assert queue.discard_pending() == 0
