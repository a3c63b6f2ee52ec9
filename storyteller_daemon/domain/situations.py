"""Situations (open narrative threads) and character memories, their scope rules and provenance.

Every memory and situation records where it came from (`Provenance`): the run that wrote it, the
events of that run's trigger, and whether players' text reached that run. Text that came from
players stays untrusted when it re-enters a prompt, however long ago it was stored.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from storyteller_daemon.errors import ValidationError

BOTH_SCOPES_MESSAGE = "Specify either CharacterId or RoomId, but not both."


def check_scope(character_id: int | None, room_id: int | None) -> None:
    """A situation is universal, character-scoped or room-scoped, never both."""
    if character_id is not None and room_id is not None:
        raise ValidationError(BOTH_SCOPES_MESSAGE)
    for label, value in (("CharacterId", character_id), ("RoomId", room_id)):
        if value is not None and value <= 0:
            raise ValidationError(f"{label} must be a positive integer.")


ADMIN = "admin"
"""The actor of changes made from the CLI."""
REFLECTION = "reflection"
"""The actor of changes made while a storyteller is idle (consolidation)."""
MIN_IMPORTANCE, MAX_IMPORTANCE, DEFAULT_IMPORTANCE = 1, 10, 5


@dataclass(frozen=True)
class Provenance:
    """Where a memory's or situation's text came from.

    Attributes:
        run: the key of the run that wrote it ("" when an admin or a pack did).
        events: the cursors (``epoch:seq``) of that run's trigger events.
        from_player: players' text reached the run that wrote it (their speech or echoes were
            in its trigger, or it read stored text that came from players): the text is
            untrusted and framed so when it re-enters a prompt.
    """

    run: str = ""
    events: tuple[str, ...] = ()
    from_player: bool = False

    @property
    def actor(self) -> str:
        """Who made a change with this provenance, as the edit history names it."""
        return f"run {self.run}" if self.run else ADMIN

    def joined(self, other: Provenance) -> Provenance:
        """This provenance after `other` changed the text: the newest run, the events of
        both, and from a player if either was."""
        events = self.events + tuple(e for e in other.events if e not in self.events)
        return Provenance(other.run or self.run, events, self.from_player or other.from_player)


ADMIN_PROVENANCE = Provenance()
"""The provenance of what an admin or a pack writes."""


def check_importance(importance: int) -> int:
    """`importance` if it is 1-10.

    Raises:
        ValidationError: it is outside 1-10.
    """
    if not MIN_IMPORTANCE <= importance <= MAX_IMPORTANCE:
        raise ValidationError(
            f"Importance must be between {MIN_IMPORTANCE} and {MAX_IMPORTANCE}, not {importance}."
        )
    return importance


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
    provenance: Provenance = field(default_factory=Provenance)
    updated_on: datetime | None = None
    resolved_on: datetime | None = None

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
    importance: int = DEFAULT_IMPORTANCE
    provenance: Provenance = field(default_factory=Provenance)
    updated_on: datetime | None = None

    @property
    def changed_on(self) -> datetime:
        """When the memory was last written (created or changed)."""
        return self.updated_on or self.created_on


class MemoryAction(StrEnum):
    """What one entry of a memory's edit history did."""

    CREATED = "created"
    UPDATED = "updated"
    FORGOTTEN = "forgotten"
    CONSOLIDATED = "consolidated"
    """Merged into another memory about the same character (this one is gone)."""
    ABSORBED = "absorbed"
    """Took in the text of memories consolidated into it."""


@dataclass(frozen=True)
class MemoryEdit:
    """One entry of a memory's edit history (title and text before and after; None where the
    memory did not exist)."""

    id: int
    storyteller_id: int
    memory_id: int
    character_id: int
    action: MemoryAction
    actor: str
    at: datetime
    title_before: str | None
    text_before: str | None
    title_after: str | None
    text_after: str | None
    from_player: bool
