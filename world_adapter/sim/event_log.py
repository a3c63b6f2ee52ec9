"""The sim world's event log: cursor numbering, a bounded replay buffer and live subscriptions.

Appending is synchronous so that any world action can record its event at once; waiting
subscribers are woken by resolving futures they created themselves, which keeps the log free of
tasks and of the event loop it was built in.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterator
from itertools import islice

from world_adapter.errors import CursorExpired
from world_adapter.events import Cursor, WorldEvent


class EventLog:
    """Numbers events ``(epoch, 1)``, ``(epoch, 2)``... and keeps the newest `capacity` of them.

    Args:
        epoch: The epoch of every cursor this log hands out.
        capacity: How many of the newest events stay available for replay.

    Raises:
        ValueError: If the epoch is blank or the capacity is below one.
    """

    def __init__(self, epoch: str, capacity: int) -> None:
        if not epoch.strip():
            raise ValueError("The event log's epoch must not be blank.")
        if capacity < 1:
            raise ValueError(f"The replay buffer must hold at least one event, not {capacity}.")
        self._epoch = epoch
        self._events: deque[WorldEvent] = deque(maxlen=capacity)
        self._last_seq = 0
        self._waiters: set[asyncio.Future[None]] = set()

    @property
    def epoch(self) -> str:
        """The epoch of this log's cursors."""
        return self._epoch

    @property
    def head(self) -> Cursor:
        """The cursor of the newest event (``seq`` 0 before the first one)."""
        return Cursor(self._epoch, self._last_seq)

    @property
    def waiting_subscriptions(self) -> int:
        """How many subscriptions are currently waiting for a new event."""
        return len(self._waiters)

    def next_cursor(self) -> Cursor:
        """The cursor the next appended event must carry."""
        return Cursor(self._epoch, self._last_seq + 1)

    def append(self, event: WorldEvent) -> None:
        """Store `event` and wake every waiting subscription.

        Raises:
            ValueError: If the event does not carry `next_cursor()`.
        """
        expected = self.next_cursor()
        if event.cursor != expected:
            raise ValueError(f"Event cursor {event.cursor} is not the next cursor {expected}.")
        self._events.append(event)
        self._last_seq = expected.seq
        waiters, self._waiters = self._waiters, set()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def subscribe(self, cells: frozenset[int], after: Cursor | None) -> Subscription:
        """Events in `cells` after `after` (None: only events appended from now on)."""
        start = None if after is not None else self._last_seq
        return Subscription(self, frozenset(cells), after, start)

    def start_seq(self, after: Cursor) -> int:
        """Check that the log can replay everything after `after` and return its ``seq``.

        Raises:
            CursorExpired: If `after` is from another epoch, ahead of the newest event, or older
                than the replay buffer.
        """
        if after.epoch != self._epoch:
            raise CursorExpired(
                f"Cursor {after} is from epoch '{after.epoch}', but the world is in epoch "
                f"'{self._epoch}'."
            )
        if after.seq > self._last_seq:
            raise CursorExpired(f"Cursor {after} is ahead of the newest event {self.head}.")
        self.check_replayable(after.seq)
        return after.seq

    def check_replayable(self, seq: int) -> None:
        """Raise CursorExpired if events after `seq` have already left the replay buffer."""
        oldest = self._events[0].cursor.seq if self._events else self._last_seq + 1
        if seq < oldest - 1:
            raise CursorExpired(
                f"Events after {Cursor(self._epoch, seq)} are no longer held; the oldest held "
                f"event is {Cursor(self._epoch, oldest)}."
            )

    def events_after(self, seq: int) -> Iterator[WorldEvent]:
        """Held events with a ``seq`` above `seq`, oldest first.

        Raises:
            CursorExpired: If some of them have left the replay buffer.
        """
        self.check_replayable(seq)
        if not self._events:
            return iter(())
        skip = seq - self._events[0].cursor.seq + 1
        return islice(self._events, max(skip, 0), None)

    async def wait_beyond(self, seq: int) -> None:
        """Return once an event with a ``seq`` above `seq` exists."""
        if self._last_seq > seq:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await waiter
        finally:
            self._waiters.discard(waiter)


class Subscription(AsyncIterator[WorldEvent]):
    """An endless iterator over one log's events in a set of cells.

    The start cursor is checked when iteration starts, so an expired cursor raises
    CursorExpired from the first ``__anext__``. A subscriber that falls so far behind that
    unread events leave the replay buffer gets CursorExpired too, instead of a silent gap.
    Stopping iteration (or cancelling the task that iterates) leaves nothing running.
    """

    def __init__(
        self, log: EventLog, cells: frozenset[int], after: Cursor | None, start: int | None
    ) -> None:
        self._log = log
        self._cells = cells
        self._after = after
        self._position = start
        self._closed = False

    @property
    def cells(self) -> frozenset[int]:
        """The cells this subscription reports."""
        return self._cells

    async def __anext__(self) -> WorldEvent:
        if self._closed:
            raise StopAsyncIteration
        if self._position is None:
            assert self._after is not None
            self._position = self._log.start_seq(self._after)
        while True:
            for event in self._log.events_after(self._position):
                self._position = event.cursor.seq
                if event.cell_id in self._cells:
                    return event
            await self._log.wait_beyond(self._position)

    async def aclose(self) -> None:
        """End the subscription; further iteration stops at once."""
        self._closed = True
