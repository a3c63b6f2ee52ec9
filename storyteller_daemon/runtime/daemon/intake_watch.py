"""The intake watchdog: notices a world stream that is busy but stores nothing.

A bridge that keeps sending frames while no event gets stored has stalled the daemon's intake:
one frame nobody can read, resent after every reconnect, or a bug in the reader. The process
looks healthy, so nothing else would say so. The watchdog compares two things over
``stall_seconds``: the stream's activity (frames read, refused frames, reconnects; a number that
only grows) and the daemon's progress (the cursor of the last stored event). Activity without
progress for that long is a stall: health goes red (world status ``stalled``), an error is
logged and alerted once, and the next stored event clears it. A quiet world has no activity,
so silence is never a stall.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from world_adapter.events import Cursor


class Change(StrEnum):
    """What one look found."""

    NONE = "none"
    STALLED = "stalled"
    RESUMED = "resumed"


@dataclass(frozen=True)
class Stall:
    """A stall as seen when it was noticed."""

    cursor: Cursor | None
    """The last stored event's cursor (None: nothing stored since start)."""
    seconds: float
    """How long the cursor has not moved."""
    activity: int
    """Frames and reconnects since it last moved."""


class IntakeWatch:
    """Tracks activity against progress for one world stream.

    Args:
        activity: the stream's activity count (never decreases).
        stall_seconds: activity without progress for this long is a stall.
    """

    def __init__(self, activity: Callable[[], int], stall_seconds: float) -> None:
        self._activity = activity
        self.stall_seconds = stall_seconds
        self._cursor: Cursor | None = None
        self._since: float | None = None
        self._activity_then = 0
        self.stalled: Stall | None = None
        """The current stall, or None while intake moves (or the world is quiet)."""

    def progress(self, cursor: Cursor | None, now: float) -> Change:
        """The daemon stored events up to `cursor` (or (re)started at it) at `now`."""
        moved = cursor != self._cursor or self._since is None
        self._cursor = cursor
        if not moved:
            return Change.NONE
        self._since, self._activity_then = now, self._activity()
        if self.stalled is not None:
            self.stalled = None
            return Change.RESUMED
        return Change.NONE

    def look(self, now: float) -> Change:
        """Whether intake has stalled since the last progress."""
        if self._since is None or self.stalled is not None:
            return Change.NONE
        seconds = now - self._since
        busy = self._activity() - self._activity_then
        if busy <= 0 or seconds < self.stall_seconds:
            return Change.NONE
        self.stalled = Stall(self._cursor, seconds, busy)
        return Change.STALLED
