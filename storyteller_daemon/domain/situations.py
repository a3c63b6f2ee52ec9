"""Situations (open narrative threads) and character memories, and their scope rules."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from storyteller_daemon.errors import ValidationError

BOTH_SCOPES_MESSAGE = "Specify either CharacterId or RoomId, but not both."


def check_scope(character_id: int | None, room_id: int | None) -> None:
    """A situation is universal, character-scoped or room-scoped, never both."""
    if character_id is not None and room_id is not None:
        raise ValidationError(BOTH_SCOPES_MESSAGE)
    for label, value in (("CharacterId", character_id), ("RoomId", room_id)):
        if value is not None and value <= 0:
            raise ValidationError(f"{label} must be a positive integer.")


@dataclass(frozen=True)
class Situation:
    """An open or resolved narrative thread a storyteller manages."""

    id: int
    storyteller_id: int
    title: str
    text: str
    created_on: datetime
    resolved: bool = False
    character_id: int | None = None
    room_id: int | None = None

    def __post_init__(self) -> None:
        check_scope(self.character_id, self.room_id)

    @property
    def scope_label(self) -> str:
        """``Character #N``, ``Room #N`` or ``Universal``."""
        if self.character_id is not None:
            return f"Character #{self.character_id}"
        if self.room_id is not None:
            return f"Room #{self.room_id}"
        return "Universal"

    def matches_trigger(self, room_id: int | None, character_ids: Collection[int]) -> bool:
        """Whether this situation concerns a trigger in `room_id` involving `character_ids`.

        Universal situations always match; character scope matches an involved character; room
        scope matches the trigger's room.
        """
        if self.character_id is not None:
            return self.character_id in character_ids
        if self.room_id is not None:
            return self.room_id == room_id
        return True


@dataclass(frozen=True)
class CharacterMemory:
    """A storyteller's note about one character (forgetting deletes it)."""

    id: int
    storyteller_id: int
    character_id: int
    title: str
    text: str
    created_on: datetime
