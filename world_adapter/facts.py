"""What the world tells the daemon about itself: characters, rooms, progs' results."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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


@dataclass(frozen=True)
class ProgOutcome:
    """The result of running a prog: its JSON-ready value and declared return type."""

    prog: str
    return_type: str
    value: Any
    replayed: bool = False
    """True when the idempotency key had been seen and the stored result was returned."""
