"""Prog value types and signatures, as a game's prog catalogue describes them.

Type names follow FutureMUD's ``ProgVariableTypes`` so that packs port between engines. A
collection of a type is written ``Collection<Type>`` (e.g. ``Collection<Character>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ProgType(StrEnum):
    """Element types a prog parameter or return value can have."""

    VOID = "Void"
    TEXT = "Text"
    NUMBER = "Number"
    BOOLEAN = "Boolean"
    CHARACTER = "Character"
    LOCATION = "Location"
    ITEM = "Item"
    GENDER = "Gender"
    DATETIME = "DateTime"
    TIMESPAN = "TimeSpan"
    MUDDATETIME = "MudDateTime"
    ZONE = "Zone"
    SHARD = "Shard"
    RACE = "Race"
    CULTURE = "Culture"
    ETHNICITY = "Ethnicity"
    TRAIT = "Trait"
    CLAN = "Clan"
    CLAN_RANK = "ClanRank"
    CLAN_APPOINTMENT = "ClanAppointment"
    CLAN_PAYGRADE = "ClanPaygrade"
    CURRENCY = "Currency"
    LANGUAGE = "Language"
    ACCENT = "Accent"
    MERIT = "Merit"
    CALENDAR = "Calendar"
    CLOCK = "Clock"
    KNOWLEDGE = "Knowledge"
    ROLE = "Role"
    DRUG = "Drug"
    SHOP = "Shop"
    EXIT = "Exit"
    EFFECT = "Effect"
    OUTFIT = "Outfit"
    OUTFIT_ITEM = "OutfitItem"
    DICTIONARY = "Dictionary"
    ANYTHING = "Anything"


@dataclass(frozen=True)
class ValueType:
    """A prog value type: an element type, possibly a collection of it."""

    element: ProgType
    collection: bool = False

    def describe(self) -> str:
        """``Text`` or ``Collection<Character>``."""
        return f"Collection<{self.element.value}>" if self.collection else self.element.value

    @classmethod
    def parse(cls, text: str) -> ValueType:
        """Parse ``Text``, ``text`` or ``Collection<Character>``; raise ValueError if unknown."""
        raw = text.strip()
        collection = raw.lower().startswith("collection<") and raw.endswith(">")
        inner = raw[len("collection<") : -1] if collection else raw
        for member in ProgType:
            if member.value.lower() == inner.strip().lower():
                return cls(member, collection)
        raise ValueError(f"unknown prog type '{text}'")


@dataclass(frozen=True)
class ProgParameter:
    """One named, typed parameter of a prog, in declaration order."""

    name: str
    type: ValueType


@dataclass(frozen=True)
class ProgSignature:
    """What the game says about one prog: how to call it and whether it can run."""

    id: int
    name: str
    parameters: tuple[ProgParameter, ...]
    return_type: ValueType
    description: str = ""
    compile_error: str = ""

    @property
    def parameter_names(self) -> list[str]:
        """Parameter names in order."""
        return [p.name for p in self.parameters]

    def matches(self, ref: str) -> bool:
        """Whether `ref` (an id or a case-insensitive name) names this prog."""
        ref = ref.strip()
        return ref == str(self.id) or ref.lower() == self.name.lower()
