"""What the world tells the daemon about itself.

Characters, rooms, the kind of a thing an id names, landmarks, paths, plans, dates and
calendars, and the results of progs. Every
character id here is the world's one id for that character: the id the tools take and return.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from world_adapter.codec import Seconds


@dataclass(frozen=True)
class CharacterSummary:
    """A character as the OnlinePlayers tool lists it."""

    id: int
    name: str
    gender: str
    short_description: str
    location_id: int | None
    location_name: str
    is_player: bool = True


@dataclass(frozen=True)
class CharacterInfo:
    """A character as the PlayerInformation tool describes it."""

    id: int
    name: str
    gender: str
    race: str
    ethnicity: str
    culture: str
    age: int
    age_category: str
    birthday: str
    short_description: str
    full_description: str
    location_id: int | None
    location_name: str
    is_player: bool = True


@dataclass(frozen=True)
class RoomInfo:
    """A room (cell)."""

    id: int
    name: str
    zone_id: int | None
    description: str = ""
    occupant_ids: tuple[int, ...] = field(default=())


class EntityKind(StrEnum):
    """The kinds of thing in the world a prog parameter names by id (its prog type's name)."""

    CHARACTER = "Character"
    LOCATION = "Location"
    ITEM = "Item"
    EXIT = "Exit"


@dataclass(frozen=True)
class EntityInfo:
    """A thing in the world, as much as it takes to know an id names it."""

    kind: EntityKind
    id: int
    name: str


@dataclass(frozen=True)
class ProgOutcome:
    """The result of running a prog: its JSON-ready value and declared return type."""

    prog: str
    return_type: str
    value: Any
    replayed: bool = False
    """True when the idempotency key had been seen and the stored result was returned."""


@dataclass(frozen=True)
class LandmarkSummary:
    """A landmark as the Landmarks tool lists it: its name and the room it marks."""

    name: str
    room_id: int
    room_name: str


@dataclass(frozen=True)
class LandmarkInfo:
    """A landmark in detail, with its room and the characters in that room now.

    Attributes:
        descriptions: The landmark's own description texts, in the game's order.
        occupants: The characters currently in the landmark's room.
    """

    name: str
    room_id: int
    room_name: str
    room_description: str
    descriptions: tuple[str, ...]
    occupants: tuple[CharacterSummary, ...]


# ---------------------------------------------------------------- paths

MAX_PATH_EXITS = 50
"""The longest path a world searches for, in exits (FutureMUD's limit)."""


class DoorRule(StrEnum):
    """Which closed doors a path may pass through (an exit without a door is always usable)."""

    RESPECT_CLOSED = "respect_closed"
    """Only open doors."""
    INCLUDE_UNLOCKED = "include_unlocked"
    """Open doors and closed doors that are not locked."""
    INCLUDE_FIREABLE = "include_fireable"
    """Open doors and closed doors that can be shot or thrown through (bars, grilles)."""
    IGNORE = "ignore"
    """Any door, whatever its state."""
    INCLUDE_UNLOCKABLE = "include_unlockable"
    """Open and unlocked doors, and locked doors the rule's character holds a key to."""


@dataclass(frozen=True)
class PathRule:
    """How a path between rooms is searched.

    Attributes:
        doors: Which doors may be passed.
        character_id: The character the path is for: their keys open locked doors under
            `DoorRule.INCLUDE_UNLOCKABLE`.
        character_must_cross: Also avoid every exit `character_id` cannot cross now (a
            character who cannot move at all has no path out of the room).

    Raises:
        ValueError: If the rule needs a character and has none.
    """

    doors: DoorRule
    character_id: int | None = None
    character_must_cross: bool = False

    def __post_init__(self) -> None:
        if self.character_id is None and self.doors is DoorRule.INCLUDE_UNLOCKABLE:
            raise ValueError("A path through unlockable doors needs the character holding keys.")
        if self.character_id is None and self.character_must_cross:
            raise ValueError("A path the character must be able to cross needs that character.")


@dataclass(frozen=True)
class RoomPath:
    """The movement commands from one room to another.

    Attributes:
        directions: One token per exit: the brief cardinal direction (``n``, ``ne``, ``u``) or
            ``verb keyword`` in lower case (``enter door``); empty for the same room.
        found: Whether there is a path; always true from a room to itself.
    """

    origin_room_id: int
    destination_room_id: int
    directions: tuple[str, ...]
    found: bool


# ---------------------------------------------------------------- plans


@dataclass(frozen=True)
class CharacterPlan:
    """A character's stated plans and how long ago they last changed.

    Attributes:
        short_term: What the character means to do soon; None if never stated.
        long_term: What the character works towards; None if never stated.
        updated_ago: Time since the plans last changed, by the world's clock; None if never.
    """

    character_id: int
    name: str
    short_description: str
    short_term: str | None
    long_term: str | None
    updated_ago: Seconds | None
    is_player: bool = True


# ---------------------------------------------------------------- time and calendars


@dataclass(frozen=True)
class DateTimeReading:
    """The current date and time in one room by one calendar, its clock and the room's zone.

    Attributes:
        time_vague: A rough time of day, such as ``High Sun`` or ``dusk``.
    """

    calendar_id: int
    calendar_name: str
    clock_id: int
    clock_name: str
    timezone_id: int
    timezone_name: str
    date_long: str
    date_short: str
    time_long: str
    time_short: str
    time_vague: str

    @property
    def context(self) -> tuple[int, int, int]:
        """The (calendar, clock, timezone) ids: readings with equal contexts agree."""
        return (self.calendar_id, self.clock_id, self.timezone_id)


@dataclass(frozen=True)
class SpecialDay:
    """A named day of a month (a festival, a holy day)."""

    day: int
    name: str


@dataclass(frozen=True)
class CalendarMonth:
    """A month as it falls in a year: its position (``order``, from 1), name and length."""

    order: int
    name: str
    short_name: str
    days: int
    special_days: tuple[SpecialDay, ...] = ()


@dataclass(frozen=True)
class IntercalaryMonth:
    """A month that only some years have.

    Attributes:
        after: The regular month it follows; None when it opens the year.
        rule: Which years have it, in words.
    """

    name: str
    short_name: str
    days: int
    after: str | None
    rule: str
    special_days: tuple[SpecialDay, ...] = ()


@dataclass(frozen=True)
class CalendarYear:
    """One year of a calendar with its intercalary months in place.

    Attributes:
        name: The year as the calendar writes it, e.g. ``1051 A.F.``.
    """

    year: int
    name: str
    days: int
    months: tuple[CalendarMonth, ...]


@dataclass(frozen=True)
class CalendarInfo:
    """A calendar's definition.

    Attributes:
        ancient_epoch: The era suffix of years before the calendar's year 1.
        modern_epoch: The era suffix of years from year 1 on.
        months: The months of a normal year, in order.
        intercalary_months: The months that only some years have.
        year: The layout of one requested year, if a year was asked for.
    """

    id: int
    name: str
    short_name: str
    alias: str
    description: str
    ancient_epoch: str
    modern_epoch: str
    weekdays: tuple[str, ...]
    days_in_normal_year: int
    months: tuple[CalendarMonth, ...]
    intercalary_months: tuple[IntercalaryMonth, ...] = ()
    year: CalendarYear | None = None
