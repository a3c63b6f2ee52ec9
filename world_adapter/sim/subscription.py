"""The sim world's live subscriptions: its events in a set of cells, read from its replay buffer.

The sim world holds its events in an `EventBuffer` (the project's one replay buffer, with
cursors and asyncio waiting). Appending is synchronous so that any world action can record its
event at once; a subscription turns every gap the buffer reports into CursorExpired, since the
sim world's stream carries no gap frames.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from world_adapter.errors import CursorExpired
from world_adapter.event_buffer import EventBuffer
from world_adapter.events import Cursor, WorldEvent
from world_adapter.replay import Gap, GapReason


class Subscription(AsyncIterator[WorldEvent]):
    """An endless iterator over one buffer's events in a set of cells.

    The start cursor is checked when iteration starts, so an expired cursor raises
    CursorExpired from the first ``__anext__``. A subscriber that falls so far behind that
    unread events leave the replay buffer gets CursorExpired too, instead of a silent gap.
    Stopping iteration (or cancelling the task that iterates) leaves nothing running.

    Args:
        buffer: The world's events.
        cells: The cells to report.
        after: Start after this cursor (None: only events appended from now on).
    """

    def __init__(self, buffer: EventBuffer, cells: frozenset[int], after: Cursor | None) -> None:
        self._buffer = buffer
        self._cells = frozenset(cells)
        self._after = after
        self._position = buffer.last_seq if after is None else None
        self._closed = False

    @property
    def cells(self) -> frozenset[int]:
        """The cells this subscription reports."""
        return self._cells

    async def __anext__(self) -> WorldEvent:
        if self._closed:
            raise StopAsyncIteration
        buffer = self._buffer
        if self._position is None:
            assert self._after is not None
            start = buffer.start(self._after)
            if start.gap is not None:
                raise _expired(start.gap)
            self._position = start.position
        while True:
            lost = buffer.behind(self._position)
            if lost is not None:
                raise _expired(lost)
            following = buffer.held_after(self._position, 1)
            if not following:
                await buffer.wait_beyond(self._position)
                continue
            [(self._position, event)] = following
            if event.cell_id in self._cells:
                return event

    async def aclose(self) -> None:
        """End the subscription; further iteration stops at once."""
        self._closed = True


def _expired(gap: Gap) -> CursorExpired:
    after, resume_after = gap.after, gap.resume_after
    if gap.reason is GapReason.EPOCH:
        return CursorExpired(
            f"Cursor {after} is from epoch '{after.epoch}', but the world is in epoch "
            f"'{resume_after.epoch}'."
        )
    if gap.reason is GapReason.AHEAD:
        return CursorExpired(f"Cursor {after} is ahead of the newest event {resume_after}.")
    oldest = Cursor(resume_after.epoch, resume_after.seq + 1)
    return CursorExpired(
        f"Events after {after} are no longer held; the oldest held event is {oldest}."
    )
