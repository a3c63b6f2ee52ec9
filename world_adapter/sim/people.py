"""Character sheets: who a sim character is, independent of where they are or what they do."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class PlanSheet:
    """A character's plans when the world starts.

    Attributes:
        short_term: What the character means to do soon.
        long_term: What the character works towards.
        age_at_start: How long before the world starts the plans were last changed.

    Raises:
        ValueError: If both plans are blank or the age is negative.
    """

    short_term: str
    long_term: str
    age_at_start: timedelta

    def __post_init__(self) -> None:
        if not (self.short_term.strip() or self.long_term.strip()):
            raise ValueError("A plan sheet needs a short-term or a long-term plan.")
        if self.age_at_start < timedelta(0):
            raise ValueError(f"Plans cannot be changed in the future ({self.age_at_start}).")


@dataclass(frozen=True)
class CharacterSheet:
    """The fixed facts about one character.

    Attributes:
        start_room_id: Where the character stands when the world starts.
        online_at_start: Whether the character is in the game when the world starts.
        profile: Extra facts a game-side prog reports about the character (reputation,
            faction...), as ``(key, value)`` text pairs.
        plans: The character's plans when the world starts, if any.
    """

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
    is_player: bool
    start_room_id: int
    accent: str = ""
    online_at_start: bool = True
    profile: tuple[tuple[str, str], ...] = ()
    plans: PlanSheet | None = None

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ValueError(f"Character {self.id} has no name.")
        if self.age < 0:
            raise ValueError(f"Character {self.id} has a negative age ({self.age}).")
