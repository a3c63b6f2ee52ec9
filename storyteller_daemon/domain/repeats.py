"""Repeated text is judged once: a deterministic prefilter in front of the attention model.

Busy worlds repeat themselves: a bell or a shout is heard in many rooms in the same second, and
ambience ("gulls wheel over the quay") comes back to one room every few minutes. The first
occurrence is judged; a later one with the same text (compared without markup, case and spacing)
takes the first one's verdict instead of a model call, when it comes within the window:
``repeat_seconds`` for other rooms, ``room_repeat_seconds`` for the same room.

An inherited verdict keeps its effect, so a repeat of an interesting line still reaches a turn;
only the cost of judging it again is saved. Every inherited verdict names its rule
(``heard_elsewhere`` or ``repeated_in_room``) and the item it copied.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from storyteller_daemon.domain.text import strip_markup

HEARD_ELSEWHERE = "heard_elsewhere"
REPEATED_IN_ROOM = "repeated_in_room"
MEMORY_SIZE = 2048
"""Texts remembered per storyteller at most (the oldest are forgotten first)."""


def repeat_key(kind: str, text: str) -> str | None:
    """The text a repeat is recognised by, or None when the event is never a repeat."""
    if not text.strip():
        return None
    normal = " ".join(strip_markup(text).casefold().split())
    return f"{kind}:{normal}" if normal else None


@dataclass(frozen=True)
class Judged:
    """A text judged before: where, when (monotonic seconds), and what was decided."""

    item_id: int
    room_id: int | None
    at: float
    interested: bool
    reason: str


@dataclass(frozen=True)
class Repeat:
    """A later occurrence matched to a judged (or being judged) first one."""

    rule: str
    first_item_id: int


class RepeatMemory:
    """What one storyteller judged recently, by text.

    Args:
        repeat_seconds: window for the same text in another room (0: off).
        room_repeat_seconds: window for the same text in the same room (0: off).
    """

    def __init__(self, repeat_seconds: float, room_repeat_seconds: float) -> None:
        self._elsewhere = repeat_seconds
        self._same_room = room_repeat_seconds
        self._judged: OrderedDict[str, Judged] = OrderedDict()

    def match(
        self, key: str | None, room_id: int | None, now: float
    ) -> tuple[Repeat, Judged] | None:
        """The earlier verdict this text may take, or None to judge it."""
        if key is None:
            return None
        first = self._judged.get(key)
        if first is None:
            return None
        same_room = first.room_id == room_id
        window = self._same_room if same_room else self._elsewhere
        if window <= 0 or now - first.at > window:
            return None
        rule = REPEATED_IN_ROOM if same_room else HEARD_ELSEWHERE
        return Repeat(rule, first.item_id), first

    def remember(self, key: str | None, judged: Judged) -> None:
        """Record a verdict made by the model for a text."""
        if key is None:
            return
        self._judged[key] = judged
        self._judged.move_to_end(key)
        while len(self._judged) > MEMORY_SIZE:
            self._judged.popitem(last=False)
