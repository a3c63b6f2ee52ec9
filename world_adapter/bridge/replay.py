"""The game side's replay buffer: the newest events of one epoch, and where a subscriber starts.

This is the part of the protocol a game must get right for resume to lose nothing; the sim
world's bridge server uses it, and it is small enough to port. `start` turns a subscriber's
cursor into a position and, when the cursor cannot be honoured, the ``gap`` frame to send.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_right

from world_adapter.bridge.messages import Gap, GapReason
from world_adapter.events import Cursor, WorldEvent


class ReplayBuffer:
    """Holds at least the newest `capacity` events of the current epoch.

    Events are appended in seq order (numbering may skip values, e.g. for events outside the
    followed rooms). Waiting subscribers are woken through futures they create themselves.

    Args:
        head: The newest cursor before anything is appended (its epoch is the buffer's).
        capacity: How many of the newest events are always held.

    Raises:
        ValueError: If the capacity is below one.
    """

    def __init__(self, head: Cursor, capacity: int = 10_000) -> None:
        if capacity < 1:
            raise ValueError(f"the replay buffer must hold at least one event, not {capacity}")
        self._capacity = capacity
        self._events: list[WorldEvent] = []
        self._head = head
        self._lost_up_to = head.seq
        self._waiters: set[asyncio.Future[None]] = set()

    @property
    def epoch(self) -> str:
        """The epoch of every held event."""
        return self._head.epoch

    @property
    def head(self) -> Cursor:
        """The newest cursor."""
        return self._head

    @property
    def resume_point(self) -> int:
        """The oldest seq a subscriber can resume after: everything later is held."""
        return self._events[0].cursor.seq - 1 if self._events else self._lost_up_to

    def append(self, event: WorldEvent) -> None:
        """Hold `event` and wake waiting subscribers.

        Raises:
            ValueError: If it is from another epoch or not after the head.
        """
        cursor = event.cursor
        if cursor.epoch != self.epoch or cursor.seq <= self._head.seq:
            raise ValueError(f"event {cursor} does not follow the buffer's head {self._head}")
        self._events.append(event)
        self._head = cursor
        if len(self._events) >= 2 * self._capacity:  # trim in bulk: amortised O(1) per event
            dropped = len(self._events) - self._capacity
            self._lost_up_to = self._events[dropped - 1].cursor.seq
            del self._events[:dropped]
        waiters, self._waiters = self._waiters, set()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def restart_at(self, head: Cursor) -> None:
        """Forget every held event and continue after `head` (the source skipped ahead)."""
        self._events.clear()
        self._head = head
        self._lost_up_to = head.seq

    def start(self, after: Cursor | None) -> tuple[int, Gap | None]:
        """Where a subscription from `after` starts (a seq), and the gap to report, if any."""
        if after is None:
            return self._head.seq, None
        oldest = self.resume_point
        if after.epoch != self.epoch:
            return oldest, Gap(GapReason.EPOCH, after, Cursor(self.epoch, oldest))
        if after.seq > self._head.seq:
            return self._head.seq, Gap(GapReason.AHEAD, after, self._head)
        if after.seq < oldest:
            return oldest, Gap(GapReason.EXPIRED, after, Cursor(self.epoch, oldest))
        return after.seq, None

    def events_after(self, seq: int, limit: int) -> list[WorldEvent] | None:
        """Up to `limit` held events with a seq above `seq`, oldest first.

        Returns None if events after `seq` have already been dropped (the subscriber fell
        behind); it must then report a gap and continue from `resume_point`.
        """
        if seq < self.resume_point:
            return None
        index = bisect_right(self._events, seq, key=lambda e: e.cursor.seq)
        return self._events[index : index + limit]

    async def wait_beyond(self, seq: int) -> None:
        """Return once the head is past `seq`."""
        if self._head.seq > seq:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.add(waiter)
        try:
            await waiter
        finally:
            self._waiters.discard(waiter)
