"""World events and the stream cursor: the wire contract between a game and the daemon.

Every event carries an ``(epoch, seq)`` cursor. ``seq`` grows by one per event within an epoch;
a new epoch means the game restarted and older cursors cannot be resumed.
"""

from __future__ import annotations

import functools
import typing
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any

MAX_EPOCH_CHARS = 200
MAX_WORLD_ID = 2**63 - 1
"""The largest world id: ids are positive signed 64-bit integers (a BIGINT column holds them)."""


class WorldIdRange:
    """Marks an int field as a world id, 1 to `MAX_WORLD_ID`.

    The range is checked where frames come in (`out_of_range_world_id`, used by the bridge at
    the door), not whenever an event is read: a stored event whose ids were redacted to 0 by a
    character's erasure must still read back. JSON Schemas generated from the types (pydantic
    calls the hook below) state the range.
    """

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        schema = handler(core_schema)
        schema.update(minimum=1, maximum=MAX_WORLD_ID)
        return schema

    def __repr__(self) -> str:
        return "WorldIdRange()"


WORLD_ID_RANGE = WorldIdRange()
WorldId = Annotated[int, WORLD_ID_RANGE]
"""The id of a room, zone, character, item or crime: 1 to `MAX_WORLD_ID` (docs/bridge-protocol.md,
world ids)."""


def out_of_range_world_id(value: object) -> tuple[str, int] | None:
    """The first world-id field of a dataclass instance whose value is out of range, with the
    value, or None when every one is in range (None values are not ids)."""
    cls: type = type(value)
    for name in _world_id_fields(cls):
        ident = getattr(value, name)
        if isinstance(ident, int) and not 1 <= ident <= MAX_WORLD_ID:  # a name is no id
            return name, ident
    return None


@functools.cache
def _world_id_fields(cls: type) -> tuple[str, ...]:
    hints = typing.get_type_hints(cls, include_extras=True)
    return tuple(name for name, hint in hints.items() if _is_world_id(hint))


def _is_world_id(hint: Any) -> bool:
    if typing.get_origin(hint) is Annotated:
        return any(isinstance(m, WorldIdRange) for m in hint.__metadata__)
    return any(_is_world_id(option) for option in typing.get_args(hint))


@dataclass(frozen=True, order=True)
class Cursor:
    """Position in a game's event stream."""

    epoch: str
    seq: int

    def __post_init__(self) -> None:
        if not self.epoch.strip() or len(self.epoch) > MAX_EPOCH_CHARS:
            raise ValueError(f"epoch must be 1-{MAX_EPOCH_CHARS} characters")
        if self.seq < 0:
            raise ValueError("seq must not be negative")

    def __str__(self) -> str:
        return f"{self.epoch}:{self.seq}"

    @classmethod
    def parse(cls, text: str) -> Cursor:
        """Parse ``epoch:seq``."""
        epoch, _, seq = text.rpartition(":")
        if not epoch or not seq.isdigit():
            raise ValueError(f"'{text}' is not a cursor (expected epoch:seq)")
        return cls(epoch, int(seq))


class EventKind(StrEnum):
    """Kinds of world event."""

    ROOM_ECHO = "room_echo"
    SPEECH = "speech"
    CRIME = "crime"
    STATE_CHANGE = "state_change"


class CharacterState(StrEnum):
    """Character state changes a storyteller can watch."""

    UNCONSCIOUS = "Unconscious"
    PASS_OUT = "Pass Out"  # noqa: S105 - a state name, not a password
    DEAD = "Dead"


@dataclass(frozen=True, kw_only=True)
class WorldEvent:
    """Fields every event has."""

    cursor: Cursor
    cell_id: WorldId
    zone_id: WorldId | None
    occurred_at: datetime
    """Real-world UTC time the game observed the event."""
    origin: str = "world"
    """``world`` for things players and NPCs did; ``prog`` for effects of a storyteller's prog
    (the daemon does not react to its own actions)."""
    ambience: bool = False
    """Whether the game marks the event as ambience (weather, wildlife, a room's recurring
    background): the daemon settles an ambient room echo ``ignore`` without asking a model.
    Other kinds are always judged, whatever the flag says."""

    kind: EventKind = EventKind.ROOM_ECHO

    def __post_init__(self) -> None:
        if self.occurred_at.tzinfo is None:
            raise ValueError("occurred_at has no timezone")

    @property
    def involved_character_ids(self) -> frozenset[int]:
        """Characters this event concerns (for situation scope)."""
        return frozenset()


@dataclass(frozen=True, kw_only=True)
class RoomEcho(WorldEvent):
    """Something every occupant of a room perceives (an emote, an arrival, a departure...)."""

    text: str
    source_character_id: WorldId | None = None
    kind: EventKind = EventKind.ROOM_ECHO

    @property
    def involved_character_ids(self) -> frozenset[int]:
        """The source character, if any."""
        return frozenset({self.source_character_id} if self.source_character_id else ())


@dataclass(frozen=True, kw_only=True)
class Speech(WorldEvent):
    """A character said something in a room (the raw text, not garbled by language skill)."""

    speaker_id: WorldId
    speaker_name: str
    text: str
    language: str = ""
    accent: str = ""
    volume: str = "Normal"
    target_id: WorldId | None = None
    target_kind: str | None = None
    target_description: str | None = None
    kind: EventKind = EventKind.SPEECH

    @property
    def involved_character_ids(self) -> frozenset[int]:
        """The speaker, and the target when it is a character."""
        ids = {self.speaker_id}
        if self.target_id is not None and (self.target_kind or "character").lower() == "character":
            ids.add(self.target_id)
        return frozenset(ids)


@dataclass(frozen=True, kw_only=True)
class Crime(WorldEvent):
    """A crime was committed (or witnessed) in a room."""

    crime_id: WorldId
    crime_type: str
    legal_authority: str
    criminal_id: WorldId
    victim_id: WorldId | None = None
    third_party: str | None = None
    witness_count: int = 0
    kind: EventKind = EventKind.CRIME

    @property
    def involved_character_ids(self) -> frozenset[int]:
        """The criminal and the victim."""
        return frozenset(i for i in (self.criminal_id, self.victim_id) if i is not None)


@dataclass(frozen=True, kw_only=True)
class StateChange(WorldEvent):
    """A character fell unconscious, passed out or died."""

    character_id: WorldId
    state: CharacterState
    kind: EventKind = EventKind.STATE_CHANGE

    @property
    def involved_character_ids(self) -> frozenset[int]:
        """The character."""
        return frozenset({self.character_id})
