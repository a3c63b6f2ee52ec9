"""The replay buffer for `WorldEvent`s, with cursors and asyncio waiting.

The sim world's event stream and the bridge's world server hold their events in the project's
one replay buffer, `replay.ReplayBuffer`, which knows no event type. `EventBuffer` adds what both
need on top: events numbered by their own cursors, and
waiting for a new event. Waiters create their own futures, which the buffer's listener hook
resolves, so the buffer holds no task and is tied to no event loop.
"""

from __future__ import annotations

import asyncio

from world_adapter.events import Cursor, WorldEvent
from world_adapter.replay import ReplayBuffer


class EventBuffer(ReplayBuffer[WorldEvent]):
    """The newest `capacity` events of one epoch, appended in seq order.

    Seqs may skip values (the world server holds only the rooms it follows).

    Args:
        head: The newest cursor before anything is appended (its epoch is the buffer's).
        capacity: How many of the newest events stay held.

    Raises:
        ValueError: If the capacity is below one.
    """

    def __init__(self, head: Cursor, capacity: int) -> None:
        super().__init__(head.epoch, capacity, last_seq=head.seq)
        self._waiters: set[asyncio.Future[None]] = set()
        self.add_listener(self._wake)

    @property
    def head(self) -> Cursor:
        """The cursor of the newest event."""
        return Cursor(self.epoch, self.last_seq)

    def next_cursor(self) -> Cursor:
        """The cursor right after the newest event."""
        return Cursor(self.epoch, self.next_seq)

    @property
    def waiting(self) -> int:
        """How many callers are waiting in `wait_beyond`."""
        return len(self._waiters)

    def append(self, event: WorldEvent) -> None:
        """Hold `event` under its cursor and wake every waiter.

        Raises:
            ValueError: If it is from another epoch or not after the head.
        """
        if event.cursor.epoch != self.epoch:
            raise ValueError(f"event {event.cursor} does not follow the buffer's head {self.head}")
        self.add(event.cursor.seq, event)

    async def wait_beyond(self, seq: int) -> None:
        """Return once an event with a seq above `seq` is held."""
        if self.last_seq > seq:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await waiter
        finally:
            self._waiters.discard(waiter)

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, set()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
