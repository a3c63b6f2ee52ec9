"""The bridge's event stream: an epoch, a sequence number and a bounded replay buffer.

Pure Python (no Evennia, no Twisted), so it can be tested anywhere. The epoch is generated when
the log is created, i.e. when the Evennia Server process starts; ``seq`` is 1 for the first event
and grows by one per event. The buffer keeps the newest ``capacity`` events whether or not a
daemon is connected, so a daemon that resumes from a recent cursor misses nothing; an older
cursor, or one from an earlier epoch, gets an explicit gap (docs/bridge-protocol.md).
"""

from __future__ import annotations

import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Frame = dict[str, Any]
Listener = Callable[[], None]


def new_epoch(now: Callable[[], float] = time.time) -> str:
    """A value that differs on every server start: the start time and a random suffix."""
    stamp = datetime.fromtimestamp(now(), tz=UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"evennia-{stamp}-{secrets.token_hex(3)}"


def utc_text(seconds: float) -> str:
    """A POSIX time as ISO 8601 UTC text, ``2026-11-22T18:04:05Z``."""
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Resume:
    """Where a subscription starting from some cursor begins.

    Attributes:
        position: the seq after which events are sent (in the current epoch).
        gap: a ``gap`` frame to send first, or None when nothing is lost.
    """

    position: int
    gap: Frame | None = None


class EventLog:
    """Numbered events of one server run, the newest ``capacity`` of them kept for replay.

    Each held event is a complete ``event`` frame (``{"type": "event", "cursor": ...}``).
    """

    def __init__(
        self,
        capacity: int = 10_000,
        *,
        epoch: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be at least 1, got {capacity}")
        self.epoch = epoch or new_epoch(clock)
        self.capacity = capacity
        self._clock = clock
        self._events: deque[Frame] = deque(maxlen=capacity)
        self._seq = 0
        self._listeners: list[Listener] = []
        self.evicted = 0
        """Events dropped from the buffer because it was full (counted, never silent)."""

    # ------------------------------------------------------------------ writing

    def append(self, fields: dict[str, Any]) -> Frame:
        """Number an event (its kind-specific fields), keep it and wake every listener."""
        self._seq += 1
        frame: Frame = {
            "type": "event",
            "cursor": {"epoch": self.epoch, "seq": self._seq},
            **fields,
        }
        frame.setdefault("occurred_at", utc_text(self._clock()))
        if len(self._events) == self.capacity:
            self.evicted += 1
        self._events.append(frame)
        for listener in list(self._listeners):
            listener()
        return frame

    def add_listener(self, listener: Listener) -> None:
        """Call `listener` after every new event until it is removed."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling `listener`; a listener never added is ignored."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    # ------------------------------------------------------------------ reading

    @property
    def last_seq(self) -> int:
        """The seq of the newest event; 0 before the first."""
        return self._seq

    @property
    def head(self) -> dict[str, Any]:
        """The newest cursor."""
        return {"epoch": self.epoch, "seq": self._seq}

    @property
    def first_held_seq(self) -> int:
        """The seq of the oldest event still held; ``last_seq + 1`` when none is."""
        return int(self._events[0]["cursor"]["seq"]) if self._events else self._seq + 1

    def event(self, seq: int) -> Frame | None:
        """The held event with this seq, or None."""
        index = seq - self.first_held_seq
        return self._events[index] if 0 <= index < len(self._events) else None

    def resume(self, after: dict[str, Any] | None) -> Resume:
        """Where a subscription from cursor `after` (None: from now on) starts, and its gap."""
        if after is None:
            return Resume(self._seq)
        oldest_lost = self.first_held_seq - 1
        if after["epoch"] != self.epoch:
            return Resume(oldest_lost, self.gap("epoch", after, oldest_lost))
        if after["seq"] > self._seq:
            return Resume(self._seq, self.gap("ahead", after, self._seq))
        if after["seq"] < oldest_lost:
            return Resume(oldest_lost, self.gap("expired", after, oldest_lost))
        return Resume(int(after["seq"]))

    def gap(self, reason: str, after: dict[str, Any], resume_seq: int) -> Frame:
        """A ``gap`` frame: events after `after` up to `resume_seq` are lost."""
        return {
            "type": "gap",
            "reason": reason,
            "after": {"epoch": after["epoch"], "seq": after["seq"]},
            "resume_after": {"epoch": self.epoch, "seq": resume_seq},
        }
