"""The sim world's mutable records and the primitive effects every action is built from.

`TownState` owns where everyone is, who is online and conscious, what each character has been
shown, zone membership and the event log. Every action that a storyteller could observe both
writes lines to the characters who perceive it and appends one event to the log.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal, NamedTuple

from world_adapter.errors import WorldCommandError
from world_adapter.event_buffer import EventBuffer
from world_adapter.events import (
    CharacterState,
    Crime,
    Cursor,
    RoomEcho,
    WorldEvent,
)
from world_adapter.sim.map import Room, TownMap, Zone
from world_adapter.sim.people import CharacterSheet

Origin = Literal["world", "prog"]
"""``world`` for what characters do; ``prog`` for effects of a prog the daemon ran."""

_RECENT_CRIMES = 1_000


def utc_now() -> datetime:
    """The current UTC time (the default clock)."""
    return datetime.now(UTC)


@dataclass
class CharacterStatus:
    """What changes about a character while the world runs."""

    location_id: int
    online: bool
    state: CharacterState | None = None
    """None while conscious; otherwise the last state change."""


class _Stamp(NamedTuple):
    cursor: Cursor
    cell_id: int
    zone_id: int
    occurred_at: datetime


class TownState:
    """A running town's records: map, people, their status and output, zones, event log.

    Args:
        town_map: The geography.
        people: Every character, players and NPCs.
        epoch: Epoch of the event cursors.
        clock: Returns the current time (timezone-aware); event timestamps come from it.
        buffer_size: How many of the newest events stay available for replay.

    Raises:
        ValueError: If a character id repeats or a character starts in a room that does not
            exist.
    """

    def __init__(
        self,
        town_map: TownMap,
        people: Iterable[CharacterSheet],
        *,
        epoch: str,
        clock: Callable[[], datetime] | None = None,
        buffer_size: int = 10_000,
    ) -> None:
        self._map = town_map
        self._rooms = {room.id: room for room in town_map.rooms}
        self._zones = {zone.id: zone for zone in town_map.zones}
        self._zone_of = {room.id: room.zone_id for room in town_map.rooms}
        self._sheets: dict[int, CharacterSheet] = {}
        self._status: dict[int, CharacterStatus] = {}
        self._outputs: dict[int, list[str]] = {}
        for sheet in people:
            if sheet.id in self._sheets:
                raise ValueError(f"Character id {sheet.id} is used twice.")
            if sheet.start_room_id not in self._rooms:
                raise ValueError(
                    f"Character {sheet.id} starts in room {sheet.start_room_id}, "
                    "which does not exist."
                )
            self._sheets[sheet.id] = sheet
            self._status[sheet.id] = CharacterStatus(sheet.start_room_id, sheet.online_at_start)
            self._outputs[sheet.id] = []
        self._clock = clock or utc_now
        self._log = EventBuffer(Cursor(epoch, 0), buffer_size)
        self._crimes: deque[Crime] = deque(maxlen=_RECENT_CRIMES)
        self._next_crime_id = 1

    # ------------------------------------------------------------------ look-ups

    @property
    def town_map(self) -> TownMap:
        """The static geography."""
        return self._map

    @property
    def cursor(self) -> Cursor:
        """The cursor of the newest event (``seq`` 0 before the first one)."""
        return self._log.head

    def now(self) -> datetime:
        """The current time according to the injected clock.

        Raises:
            ValueError: If the clock returns a naive datetime.
        """
        moment = self._clock()
        if moment.tzinfo is None:
            raise ValueError("The sim world's clock returned a datetime without a timezone.")
        return moment

    def sheet(self, character_id: int) -> CharacterSheet:
        """The sheet of a character, player or NPC.

        Raises:
            WorldCommandError: If there is no character with that id.
        """
        sheet = self._sheets.get(character_id)
        if sheet is None:
            raise WorldCommandError(f"No character with id {character_id} exists.")
        return sheet

    def status(self, character_id: int) -> CharacterStatus:
        """A snapshot of a character's location, presence and state (raises like `sheet`)."""
        self.sheet(character_id)
        return replace(self._status[character_id])

    def rename(self, character_id: int, name: str) -> None:
        """Give a character a new name (players choose their names; tests use this)."""
        sheet = self._sheets.get(character_id)
        if sheet is None:
            raise WorldCommandError(f"No character with id {character_id} exists.")
        self._sheets[character_id] = replace(sheet, name=name)

    def all_sheets(self) -> list[CharacterSheet]:
        """Every character, by id."""
        return [self._sheets[i] for i in sorted(self._sheets)]

    def room_of(self, room_id: int) -> Room:
        """A room by id.

        Raises:
            WorldCommandError: If there is no room with that id.
        """
        room = self._rooms.get(room_id)
        if room is None:
            raise WorldCommandError(f"No room with id {room_id} exists.")
        return room

    def zone(self, zone_id: int) -> Zone:
        """A zone by id.

        Raises:
            WorldCommandError: If there is no zone with that id.
        """
        zone = self._zones.get(zone_id)
        if zone is None:
            raise WorldCommandError(f"No zone with id {zone_id} exists.")
        return zone

    def zone_id_of(self, room_id: int) -> int:
        """The zone a room currently belongs to."""
        self.room_of(room_id)
        return self._zone_of[room_id]

    def zone_cells(self) -> dict[int, frozenset[int]]:
        """Zone id → the rooms currently in it."""
        return {
            zone_id: frozenset(r for r, z in self._zone_of.items() if z == zone_id)
            for zone_id in sorted(self._zones)
        }

    def occupants(self, room_id: int) -> list[int]:
        """Online characters in a room, by id (offline characters are not in the game)."""
        self.room_of(room_id)
        return sorted(i for i, s in self._status.items() if s.online and s.location_id == room_id)

    def output_of(self, character_id: int) -> list[str]:
        """A copy of every line `character_id` has received, oldest first."""
        self.sheet(character_id)
        return list(self._outputs[character_id])

    @property
    def next_crime_id(self) -> int:
        """The id the next recorded crime gets."""
        return self._next_crime_id

    def recent_crimes(self) -> list[Crime]:
        """The most recent crimes (up to a thousand), oldest first."""
        return list(self._crimes)

    # ------------------------------------------------------------------ primitive effects

    def tell(self, character_id: int, text: str) -> bool:
        """Send one line to one character; returns False (and sends nothing) if offline."""
        if not self.status(character_id).online:
            return False
        self._outputs[character_id].append(text)
        return True

    def echo(
        self,
        room_id: int,
        text: str,
        *,
        origin: Origin = "world",
        source_character_id: int | None = None,
        exclude: frozenset[int] = frozenset(),
        ambience: bool = False,
    ) -> RoomEcho:
        """Show `text` to everyone in a room (but `exclude`) and record it as a RoomEcho,
        marked as ambience when it is the room's background (`WorldEvent.ambience`).

        Raises:
            WorldCommandError: If the room does not exist or the text is blank.
        """
        if not text.strip():
            raise WorldCommandError("Echo text must not be blank.")
        stamp = self._stamp(room_id)
        for occupant in self.occupants(room_id):
            if occupant not in exclude:
                self._outputs[occupant].append(text)
        event = RoomEcho(
            cursor=stamp.cursor,
            cell_id=stamp.cell_id,
            zone_id=stamp.zone_id,
            occurred_at=stamp.occurred_at,
            origin=origin,
            ambience=ambience,
            text=text,
            source_character_id=source_character_id,
        )
        self._record(event)
        return event

    def _record(self, event: WorldEvent) -> None:
        self._log.append(event)
        if isinstance(event, Crime):
            self._crimes.append(event)
            self._next_crime_id = event.crime_id + 1

    def _stamp(self, room_id: int) -> _Stamp:
        return _Stamp(self._log.next_cursor(), room_id, self._zone_of[room_id], self.now())

    def _active(self, character_id: int) -> tuple[CharacterSheet, CharacterStatus]:
        sheet = self.sheet(character_id)
        status = self._status[character_id]
        if not status.online:
            raise WorldCommandError(f"{sheet.name} (#{sheet.id}) is not online.")
        return sheet, status

    def set_online(self, character_id: int, online: bool) -> None:
        """Log a character in or out; it stays where it was and no event is recorded."""
        self.sheet(character_id)
        self._status[character_id].online = online

    def place(self, character_id: int, room_id: int) -> None:
        """Put a character in a room and online, unseen and with no event recorded (where a
        scenario or a snapshot starts it).

        Raises:
            WorldCommandError: If the character or the room does not exist.
        """
        self.sheet(character_id)
        self.room_of(room_id)
        self._status[character_id].location_id = room_id
        self._status[character_id].online = True

    def add_zone_cell(self, zone_id: int, room_id: int) -> None:
        """Move a room into a zone (a room is in exactly one zone at a time).

        Raises:
            WorldCommandError: If the zone or room does not exist.
        """
        self.zone(zone_id)
        self.room_of(room_id)
        self._zone_of[room_id] = zone_id
