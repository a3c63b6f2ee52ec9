"""A bounded, serial work queue: one per storyteller, never blocking the caller.

Capacity counts pending *and* running items (FutureMUD's rule: 25 pending/running). A full queue
rejects the new item; the caller counts and reports the drop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)


class WorkQueue(Generic[T]):
    """Runs `handler` on submitted items one at a time, in submission order."""

    def __init__(
        self,
        name: str,
        capacity: int,
        handler: Callable[[T], Awaitable[None]],
        on_error: Callable[[T, BaseException], None] | None = None,
    ) -> None:
        self.name = name
        self.capacity = capacity
        self._handler = handler
        self._on_error = on_error
        self._items: asyncio.Queue[T] = asyncio.Queue()
        self._outstanding = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self.rejected = 0

    @property
    def outstanding(self) -> int:
        """Pending plus running items."""
        return self._outstanding

    def submit(self, item: T) -> bool:
        """Queue `item`; False (and nothing queued) when the queue is full."""
        if self._outstanding >= self.capacity:
            self.rejected += 1
            return False
        self._outstanding += 1
        self._idle.clear()
        self._items.put_nowait(item)
        return True

    def discard_pending(self) -> int:
        """Drop every item not yet started (e.g. when the storyteller is deleted)."""
        dropped = 0
        while not self._items.empty():
            self._items.get_nowait()
            self._finish()
            dropped += 1
        return dropped

    def _finish(self) -> None:
        self._outstanding -= 1
        if self._outstanding == 0:
            self._idle.set()

    async def wait_idle(self) -> None:
        """Return once nothing is pending or running."""
        await self._idle.wait()

    async def run(self) -> None:
        """Process items forever (until cancelled). A failing item never stops the queue."""
        while True:
            item = await self._items.get()
            try:
                await self._handler(item)
            except asyncio.CancelledError:
                self._finish()
                raise
            except Exception as exc:  # a bug in one turn must not stop the storyteller
                log.exception("work item failed in queue %s", self.name)
                if self._on_error is not None:
                    self._on_error(item, exc)
            self._finish()
