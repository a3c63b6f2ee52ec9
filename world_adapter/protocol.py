"""The `WorldClient` protocol: everything the daemon asks of a game.

Implementations: the embedded sim world (in-process) and the bridge client (over a socket).
Every method may raise `WorldCommandError` with a message that is safe to show to a model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from progs.types import ProgSignature
from world_adapter.events import Cursor, WorldEvent
from world_adapter.facts import CharacterInfo, CharacterSummary, ProgOutcome, RoomInfo


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
