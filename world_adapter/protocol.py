"""The `WorldClient` protocol: everything the daemon asks of a game.

Implementations: the embedded sim world (in-process) and the bridge client (over a socket).
Every method may raise `WorldCommandError` with a message that is safe to show to a model.

A character has one id everywhere (for a multi-body character, its identity): the id that
`online_players` lists is the id `character`, `path` and `character_plan` take.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Mapping
from datetime import timedelta
from typing import Any, Protocol

from progs.types import ProgSignature
from world_adapter.events import Cursor, WorldEvent
from world_adapter.facts import (
    MAX_PATH_EXITS,
    CalendarInfo,
    CharacterInfo,
    CharacterPlan,
    CharacterSummary,
    DateTimeReading,
    EntityInfo,
    EntityKind,
    LandmarkInfo,
    LandmarkSummary,
    PathRule,
    ProgOutcome,
    RoomInfo,
    RoomPath,
)


class WorldClient(Protocol):
    """A connection to one game world."""

    def subscribe(self, cells: frozenset[int], after: Cursor | None) -> AsyncIterator[WorldEvent]:
        """Events in `cells` after `after` (None: from now on), in cursor order, forever.

        To change the watched cells, stop iterating and subscribe again from the last cursor
        the caller stored.
        """
        ...

    async def zones(self) -> dict[int, frozenset[int]]:
        """Zone id → the cells currently in it."""
        ...

    async def online_players(self) -> list[CharacterSummary]:
        """Player characters currently in the game."""
        ...

    async def character(self, character_id: int) -> CharacterInfo | None:
        """One character (player or not), or None if there is none with that id."""
        ...

    async def room(self, room_id: int) -> RoomInfo | None:
        """One room, or None."""
        ...

    async def entity(self, kind: EntityKind, entity_id: int) -> EntityInfo | None:
        """The character, room, item or exit with this id, or None if the world has no thing
        of that kind with that id (one of another kind does not count).

        Raises:
            UnsupportedRequest: the game does not answer this request (a bridge from before
                it); callers then leave the check to the game.
        """
        ...

    async def progs(self) -> list[ProgSignature]:
        """The prog catalogue with typed signatures."""
        ...

    async def execute_prog(
        self, prog: str, arguments: Mapping[str, Any], idempotency_key: str
    ) -> ProgOutcome:
        """Run a prog (by id or name) with arguments by parameter name.

        A repeated `idempotency_key` returns the stored outcome and runs nothing again.
        """
        ...

    async def landmarks(self) -> list[LandmarkSummary]:
        """Every landmark, with the room it marks."""
        ...

    async def landmark(self, name: str) -> LandmarkInfo | None:
        """The landmark with this name (case-insensitively), or None."""
        ...

    async def path(
        self,
        origin_room_id: int,
        destination_room_id: int,
        rule: PathRule,
        *,
        max_exits: int = MAX_PATH_EXITS,
    ) -> RoomPath:
        """The shortest path between two rooms that `rule` allows, at most `max_exits` long.

        Raises:
            WorldCommandError: If a room, or the rule's character, does not exist.
        """
        ...

    async def character_plan(self, character_id: int) -> CharacterPlan | None:
        """A character's plans (player or not, online or not), or None for an unknown id."""
        ...

    async def recent_plans(self, within: timedelta) -> list[CharacterPlan]:
        """Plans of online player characters that changed within `within` of now.

        NPCs are left out: their plans are written by builders, not by someone at the keyboard
        announcing what they intend, which is what a storyteller reacts to.
        """
        ...

    async def room_times(
        self, room_ids: Collection[int] | None = None
    ) -> dict[int, tuple[DateTimeReading, ...]]:
        """Room id → the current date and time there, one reading per calendar of the room.

        The room's first calendar comes first. `room_ids` None asks for every room; rooms the
        world does not know are left out, and a room without a calendar maps to ``()``.
        """
        ...

    async def calendar(self, ref: str, year: int | None = None) -> CalendarInfo | None:
        """The calendar with this id, alias or name (case-insensitively), or None.

        With `year`, the result also lays out that year's months.

        Raises:
            WorldCommandError: If the calendar cannot lay out `year` (out of its range).
        """
        ...
