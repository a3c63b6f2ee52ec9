"""Character sheets: who a sim character is, independent of where they are or what they do."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CharacterSheet:
    """The fixed facts about one character.

    Attributes:
        start_room_id: Where the character stands when the world starts.
        online_at_start: Whether the character is in the game when the world starts.
        profile: Extra facts a game-side prog reports about the character (reputation,
            faction...), as ``(key, value)`` text pairs.
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

    def __post_init__(self) -> None:
        if not self.name.strip():
            raise ValueError(f"Character {self.id} has no name.")
        if self.age < 0:
            raise ValueError(f"Character {self.id} has a negative age ({self.age}).")
