"""The static geography of the sim world: zones, rooms, exits, doors and landmarks.

The map is plain frozen data, checked once when it is built, so that later features (paths,
calendars, clans...) can read it without defending against dangling references.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

HARBOUR_WARD_ID = 1
OLD_TOWN_ID = 2

BRIEF_DIRECTIONS = {
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

    @property
    def names(self) -> tuple[str, ...]:
        """The names a prog argument may give the zone by."""
        return (self.name,)


@dataclass(frozen=True)
class Door:
    """A door shared by the two exits that pass through it, with its state when the world starts.

    Attributes:
        closed: Whether the door starts closed.
        locked: Whether the door starts locked (only a closed door can be).
        fireable: Whether missiles pass through it even when closed (a grille, bars).

    Raises:
        ValueError: If the door starts locked but open.
    """

    id: int
    name: str
    closed: bool = False
    locked: bool = False
    fireable: bool = False

    def __post_init__(self) -> None:
        if self.locked and not self.closed:
            raise ValueError(f"Door {self.id} cannot start locked while open.")


@dataclass(frozen=True)
class Exit:
    """One way out of a room.

    Attributes:
        command: A cardinal direction (``north``, ``up``...) or a ``verb keyword`` pair such as
            ``enter door``.
        destination_id: The room the exit leads to.
        door: The door the exit passes through, if any.
        id: The exit's id, shared with its way back (one exit joins two rooms).
    """

    command: str
    destination_id: int
    door: Door | None = None
    id: int = field(kw_only=True)

    @property
    def is_cardinal(self) -> bool:
        """Whether the exit is a compass (or up/down) direction."""
        return self.command in BRIEF_DIRECTIONS

    @property
    def brief(self) -> str:
        """The movement token a path lists: ``n``, ``ne``, ``u`` or ``enter door``."""
        return BRIEF_DIRECTIONS.get(self.command, self.command.lower())

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
    """A named place a storyteller can refer to, with one or more description texts.

    Raises:
        ValueError: If the name is blank or there is no description.
    """

    name: str
    descriptions: tuple[str, ...]

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ValueError("A landmark needs a name.")
        if not self.descriptions or not all(d.strip() for d in self.descriptions):
            raise ValueError(f"Landmark '{self.name}' needs at least one description.")


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
class Passage:
    """One exit seen from both rooms it joins: what an ``Exit`` prog argument resolves to.

    Attributes:
        near: The room the exit was first met in (map order).
        exit: The exit leading from `near` to `far`.
        far: The room at the other end.
    """

    id: int
    near: Room
    exit: Exit
    far: Room

    @property
    def name(self) -> str:
        """The two rooms the exit joins, e.g. ``Copper Street - Guildhall``."""
        return f"{self.near.name} - {self.far.name}"


@dataclass(frozen=True)
class TownMap:
    """Zones and rooms, checked for consistency on construction.

    Raises:
        ValueError: If ids repeat, a room names an unknown zone, an exit leads nowhere or has no
            way back, a room has two exits with the same command, an exit and its way back do
            not share their door and id, a door or exit id is not used by exactly one pair of
            opposite exits, or two landmarks share a name (case-insensitively).
    """

    zones: tuple[Zone, ...]
    rooms: tuple[Room, ...]

    def __post_init__(self) -> None:
        _require_unique("zone", [z.id for z in self.zones])
        _require_unique("room", [r.id for r in self.rooms])
        zone_ids = {z.id for z in self.zones}
        rooms = {r.id: r for r in self.rooms}
        doors: Counter[Door] = Counter()
        exit_ids: Counter[int] = Counter()
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
                if back.id != exit_.id:
                    raise ValueError(
                        f"Exit '{exit_.command}' of room {room.id} has id {exit_.id} but its way "
                        f"back has id {back.id}."
                    )
                if exit_.door is not None:
                    doors[exit_.door] += 1
                exit_ids[exit_.id] += 1
        _require_unique("door", [d.id for d in doors])
        for door, uses in doors.items():
            if uses != 2:
                raise ValueError(f"Door {door.id} is used by {uses} exits instead of 2.")
        for exit_id, uses in exit_ids.items():
            if exit_id < 1 or uses != 2:
                raise ValueError(
                    f"Exit id {exit_id} is used by {uses} exits instead of one pair "
                    "(exit ids are positive)."
                )
        _require_unique("landmark name", [lm.name.casefold() for _, lm in self.landmarks])

    def room(self, room_id: int) -> Room | None:
        """The room with `room_id`, or None."""
        return next((r for r in self.rooms if r.id == room_id), None)

    @property
    def landmarks(self) -> list[tuple[Room, Landmark]]:
        """Every landmark with the room it marks, in map order."""
        return [(room, landmark) for room in self.rooms for landmark in room.landmarks]

    @cached_property
    def passages(self) -> dict[int, Passage]:
        """Exit id → the exit seen from both rooms it joins."""
        found: dict[int, Passage] = {}
        for room in self.rooms:
            for exit_ in room.exits:
                if exit_.id in found:
                    continue
                other = next(r for r in self.rooms if r.id == exit_.destination_id)
                found[exit_.id] = Passage(exit_.id, room, exit_, other)
        return found


def _require_unique(what: str, values: list[int] | list[str]) -> None:
    repeated = sorted(str(v) for v, n in Counter[int | str](values).items() if n > 1)
    if repeated:
        raise ValueError(f"Repeated {what}: {', '.join(repeated)}.")
