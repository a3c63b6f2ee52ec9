"""The static geography of the sim world: zones, rooms, exits, doors and landmarks.

The map is plain frozen data, checked once when it is built, so that later features (paths,
calendars, clans...) can read it without defending against dangling references.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

HARBOUR_WARD_ID = 1
OLD_TOWN_ID = 2

_BRIEF_DIRECTIONS = {
    "north": "n",
    "northeast": "ne",
    "east": "e",
    "southeast": "se",
    "south": "s",
    "southwest": "sw",
    "west": "w",
    "northwest": "nw",
    "up": "u",
    "down": "d",
}
_DEPARTURES = {"up": "upwards", "down": "downwards"}
_ARRIVALS = {"up": "from above", "down": "from below"}


@dataclass(frozen=True)
class Zone:
    """A named group of rooms under one legal authority."""

    id: int
    name: str
    legal_authority: str


@dataclass(frozen=True)
class Door:
    """A door shared by the two exits that pass through it."""

    id: int
    name: str


@dataclass(frozen=True)
class Exit:
    """One way out of a room.

    Attributes:
        command: A cardinal direction (``north``, ``up``...) or a ``verb keyword`` pair such as
            ``enter door``.
        destination_id: The room the exit leads to.
        door: The door the exit passes through, if any.
    """

    command: str
    destination_id: int
    door: Door | None = None

    @property
    def is_cardinal(self) -> bool:
        """Whether the exit is a compass (or up/down) direction."""
        return self.command in _BRIEF_DIRECTIONS

    @property
    def brief(self) -> str:
        """The movement token a path lists: ``n``, ``ne``, ``u`` or ``enter door``."""
        return _BRIEF_DIRECTIONS.get(self.command, self.command)

    def departure_phrase(self) -> str:
        """How someone leaving through this exit is described, e.g. ``to the east``."""
        if self.is_cardinal:
            return _DEPARTURES.get(self.command, f"to the {self.command}")
        if self.door is not None:
            return f"through {self.door.name}"
        return f"by way of '{self.command}'"

    def arrival_phrase(self) -> str:
        """How someone arriving back along this exit is described, e.g. ``from the east``."""
        if self.is_cardinal:
            return _ARRIVALS.get(self.command, f"from the {self.command}")
        if self.door is not None:
            return f"through {self.door.name}"
        return "from nearby"


@dataclass(frozen=True)
class Landmark:
    """A named place a storyteller can refer to."""

    name: str
    description: str


@dataclass(frozen=True)
class Room:
    """A room (cell) with its starting zone and its exits."""

    id: int
    name: str
    zone_id: int
    description: str
    exits: tuple[Exit, ...] = ()
    landmarks: tuple[Landmark, ...] = ()

    def exit_to(self, room_id: int) -> Exit | None:
        """The first exit leading to `room_id`, if any."""
        return next((e for e in self.exits if e.destination_id == room_id), None)


@dataclass(frozen=True)
class TownMap:
    """Zones and rooms, checked for consistency on construction.

    Raises:
        ValueError: If ids repeat, a room names an unknown zone, an exit leads nowhere or has no
            way back, a room has two exits with the same command, or a door is not shared by
            exactly one pair of opposite exits.
    """

    zones: tuple[Zone, ...]
    rooms: tuple[Room, ...]

    def __post_init__(self) -> None:
        _require_unique("zone", [z.id for z in self.zones])
        _require_unique("room", [r.id for r in self.rooms])
        zone_ids = {z.id for z in self.zones}
        rooms = {r.id: r for r in self.rooms}
        doors: Counter[Door] = Counter()
        for room in self.rooms:
            if room.zone_id not in zone_ids:
                raise ValueError(f"Room {room.id} is in zone {room.zone_id}, which does not exist.")
            _require_unique(f"exit command in room {room.id}", [e.command for e in room.exits])
            for exit_ in room.exits:
                target = rooms.get(exit_.destination_id)
                if target is None:
                    raise ValueError(
                        f"Exit '{exit_.command}' of room {room.id} leads to room "
                        f"{exit_.destination_id}, which does not exist."
                    )
                back = target.exit_to(room.id)
                if back is None:
                    raise ValueError(
                        f"Exit '{exit_.command}' of room {room.id} has no way back from room "
                        f"{target.id}."
                    )
                if back.door != exit_.door:
                    raise ValueError(
                        f"Exit '{exit_.command}' of room {room.id} and its way back do not "
                        "share the same door."
                    )
                if exit_.door is not None:
                    doors[exit_.door] += 1
        _require_unique("door", [d.id for d in doors])
        for door, uses in doors.items():
            if uses != 2:
                raise ValueError(f"Door {door.id} is used by {uses} exits instead of 2.")

    def room(self, room_id: int) -> Room | None:
        """The room with `room_id`, or None."""
        return next((r for r in self.rooms if r.id == room_id), None)


def _require_unique(what: str, values: list[int] | list[str]) -> None:
    repeated = sorted(str(v) for v, n in Counter[int | str](values).items() if n > 1)
    if repeated:
        raise ValueError(f"Repeated {what}: {', '.join(repeated)}.")
