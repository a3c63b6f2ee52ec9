"""What was already settled stays settled: the verdict memory's rules.

Busy worlds say the same things for hours ("Gulls wheel and shriek above the masts.", "Lucan
Ashby grins."). Once the attention model has ignored an event, a later event with the same
normalised text, the same kind and the same room class is settled ``ignore`` by rule, without a
model call, for ``[attention] verdict_memory_hours``; it is recorded with the rule
``repeat_of:<item>``, naming the work item the model ignored.

The normalised text is the text without markup, case and extra spaces, with the names of the
characters the event carries (a speaker's name, the names the daemon has seen for an echo's
source) put as ``<someone>`` and each number put as its count of digits (``#`` each: "3 coins"
and "7 coins" are one text, "300 coins" another). Who did it is not part of the key: "Lucan
Ashby grins." and "Mara Quell grins." are one event to the memory, as are the same words
said by two townsfolk -- which is safe only because of the exclusion below.

The room class is the event's zone (the room itself when the game gives no zone): the world
protocol has no room types, and a zone is the set of rooms a storyteller watches together.

Never settled this way, whatever the memory holds:

* crimes, state changes, direct invocations and heartbeats (only room echoes and speech are);
* an event by or to a character the storyteller keeps notes on (an open situation or a memory
  about them: a speaker, a speech's addressee, an echo's source): what such a character does
  may matter now although it did not before, or although a stranger's doing it did not.

A memory holds only for the prompts it was made under: the digest of the storyteller's system
prompt (its remit) and attention prompt is kept with each entry, and entries made under other
prompts are never used (and are cleared when the storyteller's lane sees the change).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from storyteller_daemon.domain.repeats import repeat_key

RULE_PREFIX = "repeat_of"
"""The rule of a settled event is ``repeat_of:<work item id>``; the metric counts the prefix."""
SETTLED_KINDS = frozenset({"room_echo", "speech"})
"""Kinds the memory may settle; every other kind is always judged (or skips the gate)."""


SOMEONE = "<someone>"
"""What a character's name becomes in the normalised text."""
_NUMBER = re.compile(r"\d+")


def placeholder_text(text: str, names: Collection[str] = ()) -> str:
    """`text` as the memory compares it: normalised (`repeat_key`), each of `names` (whole
    words, any case) as `SOMEONE`, each number as ``#`` per digit."""
    key = repeat_key("t", text)
    if key is None:
        return ""
    normal = key.removeprefix("t:")
    for name in sorted({" ".join(n.casefold().split()) for n in names}, key=len, reverse=True):
        if name:
            normal = re.sub(rf"(?<!\w){re.escape(name)}(?!\w)", SOMEONE, normal)
    return _NUMBER.sub(lambda m: "#" * len(m.group()), normal)


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
        speaker_id: the speaker, for speech (shown in listings; not part of the key).
        room_class: see `room_class`.
        text: the normalised text (`placeholder_text`).
        characters: the characters the event concerns (speaker and addressee, an echo's
            source).
    """

    kind: str
    speaker_id: int | None
    room_class: str
    text: str
    characters: frozenset[int] = frozenset()

    @property
    def key(self) -> str:
        """One string for kind, room class and text, hashed for storage."""
        raw = f"{self.kind}\n{self.room_class}\n{self.text}"
        return hashlib.sha256(raw.encode()).hexdigest()

    def settles(self, relevant: frozenset[int]) -> bool:
        """Whether the memory may settle this event, given the characters the storyteller keeps
        notes on: never one by or to one of them."""
        return not self.characters & relevant


def recallable(
    kind: str,
    text: str,
    *,
    room_id: int | None,
    zone_id: int | None,
    speaker_id: int | None = None,
    characters: frozenset[int] = frozenset(),
    names: Collection[str] = (),
) -> Recallable | None:
    """The event as the memory knows it, or None when it is never settled from memory;
    `names` are the names of the characters it carries (see `placeholder_text`)."""
    if kind not in SETTLED_KINDS:
        return None
    normal = placeholder_text(text, names)
    if not normal:
        return None
    return Recallable(
        kind=kind,
        speaker_id=speaker_id if kind == "speech" else None,
        room_class=room_class(room_id, zone_id),
        text=normal,
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
