"""The bridge's event stream: an epoch, numbered ``event`` frames and the replay buffer.

Pure Python (no Evennia, no Twisted), so it can be tested anywhere. The epoch is generated when
the log is created, i.e. when the Evennia Server process starts; ``seq`` is 1 for the first event
and grows by one per event. The frames are held in the project's one replay buffer
(`replaybuffer`, in this folder so that it is copied with it): it keeps the newest ``capacity``
events whether or not a daemon is connected, so a daemon that resumes from a recent cursor misses
nothing; an older cursor, or one from an earlier epoch, gets an explicit gap
(docs/bridge-protocol.md), which `gap_frame` writes.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .replaybuffer import Gap, ReplayBuffer

Frame = dict[str, Any]


def new_epoch(now: Callable[[], float] = time.time) -> str:
    """A value that differs on every server start: the start time and a random suffix."""
    stamp = datetime.fromtimestamp(now(), tz=UTC).strftime("%Y%m%dT%H%M%SZ")
    return f"evennia-{stamp}-{secrets.token_hex(3)}"


def utc_text(seconds: float) -> str:
    """A POSIX time as ISO 8601 UTC text, ``2026-11-22T18:04:05Z``."""
    moment = datetime.fromtimestamp(seconds, tz=UTC)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def gap_frame(gap: Gap) -> Frame:
    """The ``gap`` frame of a lost stretch: events after ``after`` up to ``resume_after``."""
    return {
        "type": "gap",
        "reason": gap.reason,
        "after": gap.after._asdict(),
        "resume_after": gap.resume_after._asdict(),
    }


class EventLog(ReplayBuffer[Frame]):
    """Numbered events of one server run, the newest ``capacity`` of them kept for replay.

    Each held event is a complete ``event`` frame (``{"type": "event", "cursor": ...}``).

    Args:
        capacity: How many of the newest events stay held.
        epoch: The epoch (None: a new one from `new_epoch`).
        clock: The POSIX time, for the epoch and for ``occurred_at``.

    Raises:
        ValueError: If the capacity is below one.
    """

    def __init__(
        self,
        capacity: int = 10_000,
        *,
        epoch: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(epoch or new_epoch(clock), capacity)
        self._clock = clock

    def append(self, fields: dict[str, Any]) -> Frame:
        """Number an event (its kind-specific fields), hold it and call every listener."""
        seq = self.next_seq
        frame: Frame = {"type": "event", "cursor": {"epoch": self.epoch, "seq": seq}, **fields}
        frame.setdefault("occurred_at", utc_text(self._clock()))
        self.add(seq, frame)
        return frame

    @property
    def head(self) -> dict[str, Any]:
        """The newest cursor."""
        return {"epoch": self.epoch, "seq": self.last_seq}
