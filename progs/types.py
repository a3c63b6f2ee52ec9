"""Prog value types and signatures, as a game's prog catalogue describes them.

Type names follow FutureMUD's ``ProgVariableTypes`` so that packs port between engines. A
collection of a type is written ``Collection<Type>`` (e.g. ``Collection<Character>``).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic_core import core_schema


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
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        """In JSON a value type is its name (``Collection<Text>``), not an object."""
        from pydantic_core import core_schema  # only the codec asks; the CLI need not load it

        return core_schema.no_info_after_validator_function(
            cls.parse,
            core_schema.str_schema(),
            serialization=core_schema.plain_serializer_function_ser_schema(cls.describe),
        )

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


# Which conversion rules apply to a parameter type. Schema and converter both read these sets, so
# what is advertised to the model and what is accepted from it cannot drift apart.

VALUE_TYPES: frozenset[ProgType] = frozenset(
    {
        ProgType.TEXT,
        ProgType.NUMBER,
        ProgType.BOOLEAN,
        ProgType.GENDER,
        ProgType.DATETIME,
        ProgType.TIMESPAN,
        ProgType.MUDDATETIME,
    }
)
"""Types whose arguments may not be JSON null (FutureMUD's ``ProgVariableTypes.ValueType``).

Every other supported type is a reference type: null stands for "no object".
"""

ID_TYPES: frozenset[ProgType] = frozenset(
    {ProgType.CHARACTER, ProgType.LOCATION, ProgType.ITEM, ProgType.EXIT}
)
"""Types named only by a positive integer id."""

NAMED_TYPES: frozenset[ProgType] = frozenset(
    {
        ProgType.ZONE,
        ProgType.SHARD,
        ProgType.RACE,
        ProgType.CULTURE,
        ProgType.ETHNICITY,
        ProgType.TRAIT,
        ProgType.CLAN,
        ProgType.CLAN_RANK,
        ProgType.CLAN_APPOINTMENT,
        ProgType.CLAN_PAYGRADE,
        ProgType.CURRENCY,
        ProgType.LANGUAGE,
        ProgType.ACCENT,
        ProgType.MERIT,
        ProgType.CALENDAR,
        ProgType.CLOCK,
        ProgType.KNOWLEDGE,
        ProgType.ROLE,
        ProgType.DRUG,
        ProgType.SHOP,
    }
)
"""Framework types named by an id or by a name the game matches (exact, alias, then prefix)."""

CLAN_SCOPED_TYPES: frozenset[ProgType] = frozenset(
    {ProgType.CLAN_RANK, ProgType.CLAN_APPOINTMENT, ProgType.CLAN_PAYGRADE}
)
"""Named types whose name lookup can be narrowed to one clan."""

UNSUPPORTED_PARAMETER_TYPES: frozenset[ProgType] = frozenset(
    {ProgType.VOID, ProgType.DICTIONARY, ProgType.ANYTHING}
)
"""Types a tool call cannot supply: a custom tool with such a parameter is invalid."""

GENDERS: tuple[str, ...] = ("male", "female", "neuter", "non-binary", "indeterminate")
"""Canonical gender names, as sent to the game."""


class UnsupportedParameterType(TypeError):
    """A prog parameter type that no tool-call argument can supply.

    Raised when building a schema for, or converting an argument of, such a type. It is an
    operator's problem (the custom tool is invalid and is not offered), never the model's.

    Attributes:
        value_type: The offending parameter type.
    """

    def __init__(self, value_type: ValueType) -> None:
        super().__init__(
            f"Prog parameter type {value_type.describe()} cannot be supplied by a tool call."
        )
        self.value_type = value_type


def supports_tool_parameter(value_type: ValueType) -> bool:
    """Whether a tool call can supply an argument of `value_type`."""
    return value_type.element not in UNSUPPORTED_PARAMETER_TYPES


def require_tool_parameter(value_type: ValueType) -> None:
    """Raise `UnsupportedParameterType` unless a tool call can supply `value_type`."""
    if not supports_tool_parameter(value_type):
        raise UnsupportedParameterType(value_type)
