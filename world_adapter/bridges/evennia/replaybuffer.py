"""The replay buffer: cursor numbering, retention, where a subscriber resumes, gaps, listeners.

A copy of the project's replay buffer (`world_adapter/replay.py`), kept here because this folder
is copied into game directories and may import nothing outside itself. Everything below the
imports and `Cursor` is the same text in both files, and a test fails when the two differ: change
both together. It is pure standard-library Python, knows no event type (it holds ``(seq, item)``
pairs) and returns a lost stretch of events as plain data (`Gap`), which the event log writes as
its ``gap`` frame. Waiting is left to its users: a listener hook tells them of every new event.

The rules are those of docs/bridge-protocol.md: seqs grow within one epoch (a user may skip
values), the newest ``capacity`` events are held, and a subscriber's cursor from another epoch,
older than the buffer or ahead of the newest event gets a gap and a place to continue after.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Generic, NamedTuple, TypeVar


class Cursor(NamedTuple):
    """A position in the event stream: an epoch and a seq."""

    epoch: str
    seq: int


T = TypeVar("T")
Listener = Callable[[], None]


class GapReason(StrEnum):
    """Why a game could not replay everything after a cursor."""

    EPOCH = "epoch"
    EXPIRED = "expired"
    AHEAD = "ahead"


@dataclass(frozen=True)
class Gap:
    """game → daemon: events after `after` up to `resume_after` cannot be replayed."""

    reason: GapReason
    after: Cursor
    resume_after: Cursor


class Start(NamedTuple):
    """Where a subscription starts: the seq after which events are sent, and its gap if any.

    A gap's ``reason`` is ``epoch`` (the cursor is from another epoch), ``expired`` (older than
    the buffer, or a subscriber fell behind it) or ``ahead`` (beyond the newest event); the
    subscriber's stream continues after its ``resume_after``, in the buffer's epoch.
    """

    position: int
    gap: Gap | None = None


class ReplayBuffer(Generic[T]):
    """The newest `capacity` items of one epoch, each under a seq above the one before.

    Args:
        epoch: The epoch of every held item.
        capacity: How many of the newest items stay held.
        last_seq: The newest seq before anything is added (0: the epoch starts empty).

    Raises:
        ValueError: If the epoch is blank or the capacity is below one.
    """

    def __init__(self, epoch: str, capacity: int, *, last_seq: int = 0) -> None:
        if not epoch.strip():
            raise ValueError("The replay buffer's epoch must not be blank.")
        if capacity < 1:
            raise ValueError(f"The replay buffer's capacity must be at least one, not {capacity}.")
        self._epoch = epoch
        self._capacity = capacity
        self._held: list[tuple[int, T]] = []
        self._first = 0  # index in _held of the oldest pair still held
        self._last_seq = last_seq
        self._listeners: list[Listener] = []
        self.evicted = 0
        """Items dropped because the buffer was full (counted, never silent)."""

    # ------------------------------------------------------------------ writing

    def add(self, seq: int, item: T) -> None:
        """Hold `item` under `seq`, drop the oldest item beyond capacity and call every listener.

        Raises:
            ValueError: If `seq` is not above `last_seq`.
        """
        if seq <= self._last_seq:
            raise ValueError(f"seq {seq} does not follow the buffer's newest seq {self._last_seq}")
        self._held.append((seq, item))
        self._last_seq = seq
        if len(self._held) - self._first > self._capacity:
            self._first += 1
            self.evicted += 1
            if self._first >= self._capacity:  # compact in bulk: amortised O(1) per item
                del self._held[: self._first]
                self._first = 0
        for listener in list(self._listeners):
            listener()

    def restart_at(self, seq: int) -> None:
        """Forget every held item and continue after `seq` (the source skipped ahead)."""
        self._held.clear()
        self._first = 0
        self._last_seq = seq

    def add_listener(self, listener: Listener) -> None:
        """Call `listener` after every new item until it is removed."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Listener) -> None:
        """Stop calling `listener`; a listener never added is ignored."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    # ------------------------------------------------------------------ reading

    @property
    def epoch(self) -> str:
        """The epoch of every held item."""
        return self._epoch

    @property
    def last_seq(self) -> int:
        """The seq of the newest item (before the first: the one the buffer started after)."""
        return self._last_seq

    @property
    def next_seq(self) -> int:
        """The seq of the next item when seqs skip no value."""
        return self._last_seq + 1

    @property
    def resume_point(self) -> int:
        """The oldest seq a subscriber can continue after: everything later is held."""
        if self._first < len(self._held):
            return self._held[self._first][0] - 1
        return self._last_seq

    def start(self, after: Cursor | None) -> Start:
        """Where a subscription from cursor `after` starts (None: from now on), and its gap."""
        if after is None:
            return Start(self._last_seq)
        if after.epoch != self._epoch:
            oldest = self.resume_point
            return Start(oldest, Gap(GapReason.EPOCH, after, Cursor(self._epoch, oldest)))
        if after.seq > self._last_seq:
            newest = Cursor(self._epoch, self._last_seq)
            return Start(newest.seq, Gap(GapReason.AHEAD, after, newest))
        lost = self.behind(after.seq)
        return Start(after.seq) if lost is None else Start(lost.resume_after.seq, lost)

    def behind(self, seq: int) -> Gap | None:
        """The ``expired`` gap of a subscriber at `seq` if items after it were dropped."""
        oldest = self.resume_point
        if seq >= oldest:
            return None
        return Gap(GapReason.EXPIRED, Cursor(self._epoch, seq), Cursor(self._epoch, oldest))

    def held_after(self, seq: int, limit: int) -> list[tuple[int, T]]:
        """Up to `limit` held ``(seq, item)`` pairs with a seq above `seq`, oldest first.

        A subscriber asks `behind` first: when items after `seq` were dropped, this starts at
        the oldest held item.
        """
        index = bisect_right(self._held, seq, lo=self._first, key=_seq_of)
        return self._held[index : index + limit]


def _seq_of(pair: tuple[int, object]) -> int:
    return pair[0]
