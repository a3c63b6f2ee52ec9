"""Conversion of a model's JSON tool arguments into the values a prog call sends to the game.

Each type accepts the JSON forms FutureMUD's storyteller accepts (``TryConvertJsonArgument``),
which include everything `progs.schema` advertises. The output is JSON-ready and has one shape
per type, so the game side never sees the model's spelling variants:

==========================  =================================================================
type                        sent to the game
==========================  =================================================================
Boolean                     bool
Number                      int when integral, else float
Text                        str
Gender                      one of `progs.types.GENDERS`
DateTime                    ISO-8601 UTC text, ``2026-02-11T12:34:56Z``
TimeSpan                    ``[-][d.]hh:mm:ss[.fffffff]``
MudDateTime                 str (``never`` or a saved mud datetime)
Character, Location, Item,  positive int id
Exit
Zone, Race, Clan, ...       int id, name str, ``{"id": n}`` or ``{"name": s}``; ClanRank,
                            ClanAppointment and ClanPaygrade objects may add ``"clan"`` (id or
                            name) and ClanPaygrade may send ``{"abbreviation": s}``
Effect                      ``{"effect_id": n, "owner_type": s | None, "owner_id": n | None}``
Outfit                      ``{"owner_character_id": n, "outfit_name": s}``
OutfitItem                  ``{"owner_character_id": n, "item_id": n, "outfit_name": s | None}``
Collection<T>               list of converted elements
==========================  =================================================================

A ClanPaygrade name (bare or in ``{"name": s}``) may also be an abbreviation, as in FutureMUD.
An Effect without an owner id means "search every owner", narrowed to one kind if
``owner_type`` is given; the game reports an effect id found on several owners as ambiguous.

JSON null is accepted for reference types (all but `progs.types.VALUE_TYPES`) and sent as None.
Object keys are matched exactly, in FutureMUD's alias order; a null property counts as absent.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from progs.scalars import (
    ID_KEYS,
    ArgumentError,
    checked_id,
    first_present,
    integer_value,
    number_value,
    object_id,
    object_text,
)
from progs.temporal import convert_datetime, convert_mud_datetime, convert_timespan
from progs.types import (
    CLAN_SCOPED_TYPES,
    ID_TYPES,
    NAMED_TYPES,
    VALUE_TYPES,
    ProgParameter,
    ProgType,
    UnsupportedParameterType,
    ValueType,
    require_tool_parameter,
)

__all__ = ["ArgumentError", "UnsupportedParameterType", "convert_argument", "convert_arguments"]


def convert_argument(value_type: ValueType, value: Any) -> Any:
    """Check and convert one JSON argument for a prog parameter of `value_type`.

    Args:
        value_type: The parameter's declared type.
        value: The argument as parsed from the model's JSON.

    Returns:
        The JSON-ready value to send to the game (see the module docstring).

    Raises:
        ArgumentError: If `value` is not an accepted form of `value_type`.
        UnsupportedParameterType: If no tool call can supply `value_type` at all.
    """
    require_tool_parameter(value_type)
    if not value_type.collection:
        return _convert_element(value_type.element, value)
    if not isinstance(value, list):
        raise ArgumentError(f"Expected array value for parameter type {value_type.describe()}.")
    converted = []
    for index, item in enumerate(value):
        try:
            converted.append(_convert_element(value_type.element, item))
        except ArgumentError as error:
            raise ArgumentError(
                f"Element {index} of {value_type.describe()}: {error.message}"
            ) from None
    return converted


def convert_arguments(
    signature_params: Sequence[ProgParameter], arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """Check and convert a custom tool call's arguments, in the prog's parameter order.

    Args:
        signature_params: The prog's parameters; every one is required.
        arguments: The tool call's parsed JSON arguments, by parameter name.

    Returns:
        Converted arguments by parameter name, in parameter order.

    Raises:
        ArgumentError: If the arguments are not an object, a parameter is missing, an unknown
            key is present, or an argument does not convert (the message names the parameter).
        UnsupportedParameterType: If a parameter's type cannot be supplied by a tool call.
    """
    if not isinstance(arguments, Mapping):
        raise ArgumentError("Custom-tool arguments must be a JSON object.")
    for parameter in signature_params:
        if parameter.name not in arguments:
            raise ArgumentError(f"Missing required custom-tool parameter '{parameter.name}'.")
    known = {parameter.name for parameter in signature_params}
    unknown = [key for key in arguments if key not in known]
    if unknown:
        names = ", ".join(f"'{key}'" for key in unknown)
        plural = "s" if len(unknown) > 1 else ""
        raise ArgumentError(f"Unknown custom-tool parameter{plural} {names}.")
    converted: dict[str, Any] = {}
    for parameter in signature_params:
        try:
            converted[parameter.name] = convert_argument(parameter.type, arguments[parameter.name])
        except ArgumentError as error:
            raise ArgumentError(f"Parameter '{parameter.name}': {error.message}") from None
    return converted


def _convert_element(element: ProgType, value: Any) -> Any:
    if value is None and element not in VALUE_TYPES:
        return None
    if element in ID_TYPES:
        return _exit(value) if element is ProgType.EXIT else _entity_id(value, element.value)
    if element in NAMED_TYPES:
        return _named(value, element)
    return _CONVERTERS[element](value)


# ---------------------------------------------------------------- value types


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ArgumentError("Expected boolean argument.")


def _numeric(value: Any) -> int | float:
    number = number_value(value)
    if number is None:
        raise ArgumentError("Expected numeric argument.")
    return number


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is not None:
        try:
            return json.dumps(value, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            pass
    raise ArgumentError("Expected text argument.")


# FutureMUD's Gender enum values, by number.
_GENDER_NUMBERS = ("indeterminate", "neuter", "male", "female", "non-binary")
_GENDER_TEXTS = {
    "male": "male",
    "m": "male",
    "female": "female",
    "f": "female",
    "neuter": "neuter",
    "n": "neuter",
    "non-binary": "non-binary",
    "nonbinary": "non-binary",
    "nb": "non-binary",
    "indeterminate": "indeterminate",
    "unknown": "indeterminate",
}
_GENDER_HELP = "male, female, neuter, non-binary or indeterminate"


def _gender(value: Any) -> str:
    if isinstance(value, Mapping):
        found = first_present(value, ("GenderId", "Gender", "Value", *ID_KEYS))
        if found is not None and (number := integer_value(found[1])) is not None:
            return _gender_number(number)
        text = object_text(value, ("Gender", "Value", "Name"))
        if text is None:
            raise ArgumentError("Gender arguments must include a Gender value.")
        return _gender_text(text)
    if isinstance(value, int) and not isinstance(value, bool):
        return _gender_number(value)
    if isinstance(value, str):
        return _gender_text(value)
    raise ArgumentError(f"Expected a gender argument: {_GENDER_HELP}.")


def _gender_number(number: int) -> str:
    if 0 <= number < len(_GENDER_NUMBERS):
        return _GENDER_NUMBERS[number]
    raise ArgumentError(f"Gender number {number} is not one of 0 to {len(_GENDER_NUMBERS) - 1}.")


def _gender_text(text: str) -> str:
    gender = _GENDER_TEXTS.get(text.strip().lower())
    if gender is None:
        raise ArgumentError(f"'{text}' is not a gender; expected {_GENDER_HELP}.")
    return gender


# ---------------------------------------------------------------- reference types


def _entity_id(value: Any, what: str) -> int:
    number = object_id(value, ID_KEYS, what) if isinstance(value, Mapping) else integer_value(value)
    if number is None:
        raise ArgumentError(f"Expected an id argument for parameter type {what}.")
    return checked_id(number, what)


def _exit(value: Any) -> int:
    if isinstance(value, Mapping):
        number = object_id(value, ("ExitId", "ExitID", "Exit", *ID_KEYS), "Exit")
    else:
        number = integer_value(value)
    if number is None:
        raise ArgumentError("Expected Exit as an id or object containing ExitId.")
    return checked_id(number, "Exit")


# Object-form keys of the clan-scoped types; the others use <Type>Id, <Type>Name and <Type>.
_CLAN_SCOPED_KEYS: dict[ProgType, tuple[tuple[str, ...], tuple[str, ...]]] = {
    ProgType.CLAN_RANK: (("ClanRankId", "RankId"), ("ClanRankName", "RankName", "Rank")),
    ProgType.CLAN_APPOINTMENT: (
        ("ClanAppointmentId", "AppointmentId"),
        ("ClanAppointmentName", "AppointmentName", "Appointment"),
    ),
    ProgType.CLAN_PAYGRADE: (
        ("ClanPaygradeId", "PaygradeId"),
        ("ClanPaygradeName", "PaygradeName", "Paygrade"),
    ),
}
_ABBREVIATION_KEYS = ("PaygradeAbbreviation", "Abbreviation")


def _named_keys(element: ProgType) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The id keys and the name keys of a named type's object form, in lookup order."""
    kind = element.value
    ids, names = _CLAN_SCOPED_KEYS.get(element, ((f"{kind}Id",), (f"{kind}Name", kind)))
    if element in (ProgType.CALENDAR, ProgType.CLOCK):
        names = (*names, "Alias")
    return (*ids, *ID_KEYS), (*names, "Name", "name")


def _named(value: Any, element: ProgType) -> int | str | dict[str, Any]:
    kind = element.value
    if isinstance(value, Mapping):
        return _named_object(value, element)
    number = integer_value(value)
    if number is not None:
        return checked_id(number, kind)
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise ArgumentError(f"Expected {kind} as an id, name, or object argument.")


def _named_object(value: Mapping[str, Any], element: ProgType) -> dict[str, Any]:
    kind = element.value
    id_keys, name_keys = _named_keys(element)
    abbreviation_keys = _ABBREVIATION_KEYS if element is ProgType.CLAN_PAYGRADE else ()
    clan = _clan_filter(value) if element in CLAN_SCOPED_TYPES else None
    found: dict[str, Any] | None = None
    if (number := object_id(value, id_keys, kind)) is not None:
        found = {"id": number}
    elif (name := object_text(value, name_keys)) is not None:
        found = {"name": name}
    elif abbreviation_keys and (abbreviation := object_text(value, abbreviation_keys)):
        found = {"abbreviation": abbreviation}
    if found is None:
        raise ArgumentError(
            f"{kind} arguments must include one of [{', '.join(id_keys)}] "
            f"or [{', '.join(name_keys + abbreviation_keys)}]."
        )
    return found if clan is None else {**found, "clan": clan}


def _clan_filter(value: Mapping[str, Any]) -> int | str | None:
    """The clan a clan-scoped name is looked up in: ClanId, Clan (id or name) or ClanName."""
    number = object_id(value, ("ClanId", "ClanID"), "Clan")
    if number is not None:
        return number
    clan = value.get("Clan")
    if clan is not None:
        if (number := integer_value(clan)) is not None:
            return checked_id(number, "Clan")
        if isinstance(clan, str) and clan.strip():
            return clan.strip()
        raise ArgumentError("Property 'Clan' must contain a clan id or name.")
    return object_text(value, ("ClanName",))


_OWNER_TYPES = {
    "character": "character",
    "char": "character",
    "pc": "character",
    "item": "item",
    "cell": "cell",
    "room": "cell",
    "location": "cell",
    "zone": "zone",
    "shard": "shard",
}


def _effect(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        number = integer_value(value)
        if number is None:
            raise ArgumentError("Effect arguments must be an id or an object containing EffectId.")
        return {"effect_id": checked_id(number, "Effect"), "owner_type": None, "owner_id": None}
    effect_id = object_id(value, ("EffectId", *ID_KEYS), "Effect")
    if effect_id is None:
        raise ArgumentError("Effect arguments must include EffectId.")
    owner_id = object_id(value, ("OwnerId", "ownerId", "OwnerCharacterId", "CharacterId"), "Owner")
    owner_text = object_text(value, ("OwnerType", "ownerType", "Type", "type"))
    owner_type = None if owner_text is None else _OWNER_TYPES.get(owner_text.lower())
    if owner_text is not None and owner_type is None:
        raise ArgumentError(
            f"Unknown effect OwnerType '{owner_text}'; expected character, item, cell, zone "
            "or shard."
        )
    return {"effect_id": effect_id, "owner_type": owner_type, "owner_id": owner_id}


_OWNER_KEYS = ("OwnerCharacterId", "CharacterId", "OwnerId")


def _outfit(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ArgumentError(
            "Outfit arguments must be an object with OwnerCharacterId and OutfitName."
        )
    owner = object_id(value, _OWNER_KEYS, "Character")
    if owner is None:
        raise ArgumentError("Outfit arguments must include OwnerCharacterId.")
    name = object_text(value, ("OutfitName", "Name"))
    if name is None:
        raise ArgumentError("Outfit arguments must include OutfitName.")
    return {"owner_character_id": owner, "outfit_name": name}


def _outfit_item(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ArgumentError(
            "OutfitItem arguments must be an object with OwnerCharacterId and ItemId."
        )
    owner = object_id(value, _OWNER_KEYS, "Character")
    if owner is None:
        raise ArgumentError("OutfitItem arguments must include OwnerCharacterId.")
    item = object_id(value, ("ItemId", *ID_KEYS), "Item")
    if item is None:
        raise ArgumentError("OutfitItem arguments must include ItemId.")
    name = object_text(value, ("OutfitName", "Name"))
    return {"owner_character_id": owner, "item_id": item, "outfit_name": name}


_CONVERTERS: dict[ProgType, Callable[[Any], Any]] = {
    ProgType.BOOLEAN: _boolean,
    ProgType.NUMBER: _numeric,
    ProgType.TEXT: _text,
    ProgType.GENDER: _gender,
    ProgType.DATETIME: convert_datetime,
    ProgType.TIMESPAN: convert_timespan,
    ProgType.MUDDATETIME: convert_mud_datetime,
    ProgType.EFFECT: _effect,
    ProgType.OUTFIT: _outfit,
    ProgType.OUTFIT_ITEM: _outfit_item,
}
