"""Reading a world stream in batches: everything that is ready, as one list.

The daemon stores each batch in one transaction, so a replay of thousands of events costs a
few dozen commits while a lone live event is still stored at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from types import TracebackType

from world_adapter.events import WorldEvent


class EventBatches:
    """A stream read by its own task into a bounded queue, taken as lists of what is ready.

    Use it as an async context manager: leaving the block cancels the reading task (and so
    closes the stream's iteration).

    Args:
        stream: The events.
        size: The most events in one batch (and in the queue).
    """

    def __init__(self, stream: AsyncIterator[WorldEvent], size: int) -> None:
        self._stream = stream
        self._size = size
        self._queue: asyncio.Queue[WorldEvent] = asyncio.Queue(size)
        self._reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> EventBatches:
        self._reader = asyncio.create_task(self._read(), name="world-reader")
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)

    async def _read(self) -> None:
        async for event in self._stream:
            await self._queue.put(event)

    async def next(self) -> list[WorldEvent] | None:
        """The events ready now (at least one), or None once the stream ended.

        Raises:
            Exception: Whatever ended the stream, after every event read before it.
        """
        assert self._reader is not None
        getter = asyncio.ensure_future(self._queue.get())
        try:
            await asyncio.wait({getter, self._reader}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not getter.done():
                getter.cancel()
        if not getter.done() or getter.cancelled():
            self._reader.result()  # raises the stream's error, if any
            return None
        batch = [getter.result()]
        while len(batch) < self._size and not self._queue.empty():
            batch.append(self._queue.get_nowait())
        return batch
