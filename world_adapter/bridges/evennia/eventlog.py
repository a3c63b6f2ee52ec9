"""The bridge's event stream: an epoch, numbered ``event`` frames and the replay buffer.

Pure Python (no Evennia, no Twisted), so it can be tested anywhere. A new epoch is generated when
a log starts without a stored stream (`EventLog.kept_in` continues the one in an `EventJournal`,
so ``evennia reload`` and restarts keep the epoch and the held events); ``seq`` is 1 for the first
event of an epoch and grows by one per event. The frames are held in the replay buffer
(`replaybuffer`, this folder's copy of the project's, so that it is copied with it): it keeps the
newest ``capacity`` events whether or not a daemon is connected, so a daemon that resumes from a
recent cursor misses nothing; an older cursor, or one from an earlier epoch, gets an explicit gap
(docs/bridge-protocol.md), which `gap_frame` writes.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from .journal import EventJournal
from .replaybuffer import Gap, ReplayBuffer

Frame = dict[str, Any]
log = logging.getLogger(__name__)


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
        "reason": gap.reason.value,
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
        last_seq: The seq the epoch continues after.

    Raises:
        ValueError: If the capacity is below one.
    """

    def __init__(
        self,
        capacity: int = 10_000,
        *,
        epoch: str | None = None,
        clock: Callable[[], float] = time.time,
        last_seq: int = 0,
    ) -> None:
        super().__init__(epoch or new_epoch(clock), capacity, last_seq=last_seq)
        self._clock = clock
        self._journal: EventJournal | None = None
        self.restored = False
        """Whether the log continues a stream stored by an earlier Server process."""

    @classmethod
    def kept_in(
        cls,
        journal: EventJournal,
        capacity: int = 10_000,
        *,
        clock: Callable[[], float] = time.time,
    ) -> EventLog:
        """A log that continues the stream `journal` holds (same epoch, its events held again)
        or, when it holds none, starts a new epoch; every event appended is written to it first.
        """
        stored = journal.load()
        if stored is None:
            events = cls(capacity, clock=clock)
        else:
            events = cls(capacity, epoch=stored.epoch, clock=clock, last_seq=stored.after)
            for frame in stored.events:
                events.add(frame["cursor"]["seq"], frame)
            events.evicted = 0
            events.restored = True
        journal.start(*events._held_now())
        events._journal = journal
        return events

    def _held_now(self) -> tuple[str, int, list[Frame]]:
        oldest = self.resume_point
        return self.epoch, oldest, [frame for _, frame in self.held_after(oldest, self._capacity)]

    def append(self, fields: dict[str, Any]) -> Frame:
        """Number an event (its kind-specific fields), write it to the journal, hold it and call
        every listener.

        When the journal cannot be written the event is still held and sent, and the journal is
        removed: a Server started later begins a new epoch, so the loss is reported as a gap.
        """
        seq = self.next_seq
        frame: Frame = {"type": "event", "cursor": {"epoch": self.epoch, "seq": seq}, **fields}
        frame.setdefault("occurred_at", utc_text(self._clock()))
        if self._journal is not None:
            try:
                self._journal.append(frame, self._held_now)
            except OSError:
                log.exception("cannot write the event journal %s; removing it", self._journal.path)
                self._journal.close()
                with contextlib.suppress(OSError):
                    self._journal.path.unlink(missing_ok=True)
                self._journal = None
        self.add(seq, frame)
        return frame

    def close(self) -> None:
        """Close the journal (the stream stays on disk for the next Server)."""
        if self._journal is not None:
            self._journal.close()

    @property
    def head(self) -> dict[str, Any]:
        """The newest cursor."""
        return {"epoch": self.epoch, "seq": self.last_seq}
