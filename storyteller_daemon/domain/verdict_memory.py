"""What was already settled stays settled: the verdict memory's rules.

Busy worlds say the same things for hours ("Gulls wheel and shriek above the masts.", "Lucan
Ashby grins."). Once the attention model has ignored an event, a later event with the same
normalised text, the same kind (for speech: the same speaker) and the same room class is
settled ``ignore`` by rule, without a model call, for ``[attention] verdict_memory_hours``; it
is recorded with the rule ``repeat_of:<item>``, naming the work item the model ignored.

The room class is the event's zone (the room itself when the game gives no zone): the world
protocol has no room types, and a zone is the set of rooms a storyteller watches together.

Never settled this way, whatever the memory holds:

* crimes, state changes, direct invocations and heartbeats (only room echoes and speech are);
* speech by or to a character the storyteller keeps notes on (an open situation or a memory
  about them): what such a character says may matter now although it did not before.

A memory holds only for the prompts it was made under: the digest of the storyteller's system
prompt (its remit) and attention prompt is kept with each entry, and entries made under other
prompts are never used (and are cleared when the storyteller's lane sees the change).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import datetime

from storyteller_daemon.domain.repeats import repeat_key

RULE_PREFIX = "repeat_of"
"""The rule of a settled event is ``repeat_of:<work item id>``; the metric counts the prefix."""
SETTLED_KINDS = frozenset({"room_echo", "speech"})
"""Kinds the memory may settle; every other kind is always judged (or skips the gate)."""


def settled_rule(item_id: int) -> str:
    """The rule recorded on an event settled from the memory of work item `item_id`."""
    return f"{RULE_PREFIX}:{item_id}"


def prompts_digest(system_prompt: str, attention_prompt: str) -> str:
    """Names the prompts a verdict was made under; any change to either gives another."""
    text = json.dumps([system_prompt.strip(), attention_prompt.strip()], ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def room_class(room_id: int | None, zone_id: int | None) -> str:
    """The room class of an event: its zone, else its room, else nowhere."""
    if zone_id is not None:
        return f"zone:{zone_id}"
    return f"room:{room_id}" if room_id is not None else "nowhere"


@dataclass(frozen=True)
class Recallable:
    """What identifies an event to the memory, for an event the memory may settle.

    Attributes:
        kind: ``room_echo`` or ``speech``.
        speaker_id: the speaker, for speech.
        room_class: see `room_class`.
        text: the normalised text (without markup, case and extra spaces).
        characters: the characters the event concerns (speaker and addressee).
    """

    kind: str
    speaker_id: int | None
    room_class: str
    text: str
    characters: frozenset[int] = frozenset()

    @property
    def key(self) -> str:
        """One string for kind, speaker, room class and text, hashed for storage."""
        who = f":{self.speaker_id}" if self.speaker_id is not None else ""
        raw = f"{self.kind}{who}\n{self.room_class}\n{self.text}"
        return hashlib.sha256(raw.encode()).hexdigest()

    def settles(self, relevant: frozenset[int]) -> bool:
        """Whether the memory may settle this event, given the characters the storyteller keeps
        notes on: never speech by or to one of them."""
        return not (self.kind == "speech" and self.characters & relevant)


def recallable(
    kind: str,
    text: str,
    *,
    room_id: int | None,
    zone_id: int | None,
    speaker_id: int | None = None,
    characters: frozenset[int] = frozenset(),
) -> Recallable | None:
    """The event as the memory knows it, or None when it is never settled from memory."""
    if kind not in SETTLED_KINDS:
        return None
    key = repeat_key("t", text)
    if key is None:
        return None
    return Recallable(
        kind=kind,
        speaker_id=speaker_id if kind == "speech" else None,
        room_class=room_class(room_id, zone_id),
        text=key.removeprefix("t:"),
        characters=characters,
    )


@dataclass(frozen=True)
class SettledVerdict:
    """One remembered ignore verdict.

    Attributes:
        id: the row id (what ``ais set REF rule forget`` names).
        storyteller_id: whose verdict.
        key: `Recallable.key`.
        kind, speaker_id, room_class, text: as in `Recallable`.
        item_id: the work item the attention model ignored.
        prompts: the `prompts_digest` it was ignored under.
        ignored_at: when (UTC).
        hits: events settled from it since.
        last_hit_at: when the last of them was settled.
    """

    id: int
    storyteller_id: int
    key: str
    kind: str
    speaker_id: int | None
    room_class: str
    text: str
    item_id: int
    prompts: str
    ignored_at: datetime
    hits: int = 0
    last_hit_at: datetime | None = None
