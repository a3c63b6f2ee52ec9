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
import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from progs.results import format_datetime, format_timespan
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


class ArgumentError(ValueError):
    """A tool argument the prog cannot take. The message is meant for the model to act on.

    Attributes:
        message: What is wrong, e.g. ``Expected boolean argument.``
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


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


# ---------------------------------------------------------------- JSON scalars

_ID_KEYS = ("Id", "ID", "id")
_INT64_MAX = 2**63 - 1
_FLOAT_EXACT = 2**53
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def _integer(value: Any) -> int | None:
    """The integer a JSON number or integer text holds, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        return int(value.strip())
    return None


def _number(value: Any) -> int | float | None:
    """The finite number a JSON number or numeric text holds, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if _INTEGER_TEXT.fullmatch(text):
            return int(text)
        if not _NUMBER_TEXT.fullmatch(text):
            return None
        value = float(text)
    if isinstance(value, float) and math.isfinite(value):
        # Past 2**53 a float no longer holds every integer, so it is not turned into one.
        return int(value) if value.is_integer() and abs(value) < _FLOAT_EXACT else value
    return None


def _first(obj: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, Any] | None:
    """The first of `keys` present in `obj` with a non-null value, and that value."""
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return key, value
    return None


def _checked_id(number: int, what: str) -> int:
    if not 0 < number <= _INT64_MAX:
        raise ArgumentError(f"{what} ids are positive integers; {number} is not one.")
    return number


def _object_id(obj: Mapping[str, Any], keys: Sequence[str], what: str) -> int | None:
    found = _first(obj, keys)
    if found is None:
        return None
    number = _integer(found[1])
    if number is None:
        raise ArgumentError(f"Property '{found[0]}' must contain an integer id.")
    return _checked_id(number, what)


def _object_text(obj: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    found = _first(obj, keys)
    if found is None:
        return None
    if not isinstance(found[1], str):
        raise ArgumentError(f"Property '{found[0]}' must contain text.")
    return found[1].strip() or None


# ---------------------------------------------------------------- value types


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ArgumentError("Expected boolean argument.")


def _numeric(value: Any) -> int | float:
    number = _number(value)
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
        found = _first(value, ("GenderId", "Gender", "Value", *_ID_KEYS))
        if found is not None and (number := _integer(found[1])) is not None:
            return _gender_number(number)
        text = _object_text(value, ("Gender", "Value", "Name"))
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


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _datetime(value: Any) -> str:
    if isinstance(value, Mapping):
        found = _first(value, ("UnixSeconds", "EpochSeconds", "Timestamp"))
        if found is not None and (seconds := _number(found[1])) is not None:
            return _unix_datetime(seconds)
        text = _object_text(value, ("Value", "DateTime", "Timestamp", "Iso8601"))
        if text is None:
            raise ArgumentError("DateTime arguments must include UnixSeconds or an ISO-8601 Value.")
        return _datetime_text(text)
    if isinstance(value, str):
        return _datetime_text(value)
    seconds = _number(value) if isinstance(value, int | float) else None
    if seconds is None:
        raise ArgumentError("Expected datetime text argument.")
    return _unix_datetime(seconds)


def _unix_datetime(seconds: float) -> str:
    try:
        return format_datetime(_EPOCH + timedelta(seconds=seconds))
    except OverflowError:
        raise ArgumentError(f"Unix time {seconds} is out of range.") from None


def _datetime_text(text: str) -> str:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ArgumentError(
            f"Expected datetime text argument: '{text}' is not an ISO-8601 datetime."
        ) from None
    # A datetime without an offset is taken as UTC: the game receives one unambiguous instant.
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return format_datetime(moment)


def _timespan(value: Any) -> str:
    if isinstance(value, Mapping):
        found = _first(value, ("TotalSeconds", "Seconds"))
        if found is not None:
            seconds = _number(found[1])
            if seconds is None:
                raise ArgumentError(f"Property '{found[0]}' must contain a number of seconds.")
            return _seconds_timespan(seconds)
        text = _object_text(value, ("Value", "TimeSpan", "Duration"))
        if text is None:
            raise ArgumentError("TimeSpan arguments must include TotalSeconds or a Value.")
        return _timespan_text(text)
    if isinstance(value, str):
        return _timespan_text(value)
    seconds = _number(value) if isinstance(value, int | float) else None
    if seconds is None:
        raise ArgumentError("Expected timespan text argument.")
    return _seconds_timespan(seconds)


def _seconds_timespan(seconds: float) -> str:
    try:
        return format_timespan(timedelta(seconds=seconds))
    except OverflowError:
        raise ArgumentError(f"A TimeSpan of {seconds} seconds is out of range.") from None


_CLOCK_SPAN = re.compile(
    r"(?P<sign>-)?(?:(?P<days>[0-9]+)\.|(?P<cdays>[0-9]+):(?=[0-9]+:[0-9]+:[0-9]+$))?"
    r"(?P<h>[0-9]{1,2}):(?P<m>[0-9]{1,2})(?::(?P<s>[0-9]{1,2})(?:\.(?P<f>[0-9]{1,7}))?)?"
)
_NUM = r"[0-9]+(?:\.[0-9]+)?"
_ISO_SPAN = re.compile(
    rf"(?P<sign>-)?P(?:(?P<W>{_NUM})W)?(?:(?P<D>{_NUM})D)?"
    rf"(?:T(?=[0-9])(?:(?P<H>{_NUM})H)?(?:(?P<M>{_NUM})M)?(?:(?P<S>{_NUM})S)?)?",
    re.IGNORECASE,
)
_ISO_UNIT_SECONDS = {"W": 604_800, "D": 86_400, "H": 3_600, "M": 60, "S": 1}


def _timespan_text(text: str) -> str:
    stripped = text.strip()
    # Numeric text means seconds, as a JSON number does (.NET would read it as days).
    seconds = _number(stripped)
    if seconds is not None:
        return _seconds_timespan(seconds)
    if clock := _CLOCK_SPAN.fullmatch(stripped):
        span = _clock_span(clock)
        if span is not None:
            return format_timespan(span)
    elif iso := _ISO_SPAN.fullmatch(stripped):
        parts = {unit: iso.group(unit) for unit in _ISO_UNIT_SECONDS if iso.group(unit)}
        if parts:
            total = sum(float(part) * _ISO_UNIT_SECONDS[unit] for unit, part in parts.items())
            return _seconds_timespan(-total if iso.group("sign") else total)
    raise ArgumentError(
        f"Expected timespan text argument: '{text}' is not a TimeSpan such as 00:30:00."
    )


def _clock_span(match: re.Match[str]) -> timedelta | None:
    hours, minutes, seconds = (int(match.group(key) or 0) for key in ("h", "m", "s"))
    if hours > 23 or minutes > 59 or seconds > 59:
        return None
    days = int(match.group("days") or match.group("cdays") or 0)
    micros = int((match.group("f") or "").ljust(7, "0")) // 10
    try:
        span = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:
        return None
    span += timedelta(microseconds=micros)
    return -span if match.group("sign") else span


def _mud_datetime(value: Any) -> str:
    text = value.strip() if isinstance(value, str) else None
    if isinstance(value, Mapping):
        text = _object_text(value, ("Value", "MudDateTime", "DateTime"))
    if not text:
        raise ArgumentError("Expected mud datetime text argument.")
    return "never" if text.lower() == "never" else text


# ---------------------------------------------------------------- reference types


def _entity_id(value: Any, what: str) -> int:
    number = _object_id(value, _ID_KEYS, what) if isinstance(value, Mapping) else _integer(value)
    if number is None:
        raise ArgumentError(f"Expected an id argument for parameter type {what}.")
    return _checked_id(number, what)


def _exit(value: Any) -> int:
    if isinstance(value, Mapping):
        number = _object_id(value, ("ExitId", "ExitID", "Exit", *_ID_KEYS), "Exit")
    else:
        number = _integer(value)
    if number is None:
        raise ArgumentError("Expected Exit as an id or object containing ExitId.")
    return _checked_id(number, "Exit")


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
    return (*ids, *_ID_KEYS), (*names, "Name", "name")


def _named(value: Any, element: ProgType) -> int | str | dict[str, Any]:
    kind = element.value
    if isinstance(value, Mapping):
        return _named_object(value, element)
    number = _integer(value)
    if number is not None:
        return _checked_id(number, kind)
    if isinstance(value, str) and value.strip():
        return value.strip()
    raise ArgumentError(f"Expected {kind} as an id, name, or object argument.")


def _named_object(value: Mapping[str, Any], element: ProgType) -> dict[str, Any]:
    kind = element.value
    id_keys, name_keys = _named_keys(element)
    abbreviation_keys = _ABBREVIATION_KEYS if element is ProgType.CLAN_PAYGRADE else ()
    clan = _clan_filter(value) if element in CLAN_SCOPED_TYPES else None
    found: dict[str, Any] | None = None
    if (number := _object_id(value, id_keys, kind)) is not None:
        found = {"id": number}
    elif (name := _object_text(value, name_keys)) is not None:
        found = {"name": name}
    elif abbreviation_keys and (abbreviation := _object_text(value, abbreviation_keys)):
        found = {"abbreviation": abbreviation}
    if found is None:
        raise ArgumentError(
            f"{kind} arguments must include one of [{', '.join(id_keys)}] "
            f"or [{', '.join(name_keys + abbreviation_keys)}]."
        )
    return found if clan is None else {**found, "clan": clan}


def _clan_filter(value: Mapping[str, Any]) -> int | str | None:
    """The clan a clan-scoped name is looked up in: ClanId, Clan (id or name) or ClanName."""
    number = _object_id(value, ("ClanId", "ClanID"), "Clan")
    if number is not None:
        return number
    clan = value.get("Clan")
    if clan is not None:
        if (number := _integer(clan)) is not None:
            return _checked_id(number, "Clan")
        if isinstance(clan, str) and clan.strip():
            return clan.strip()
        raise ArgumentError("Property 'Clan' must contain a clan id or name.")
    return _object_text(value, ("ClanName",))


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
        number = _integer(value)
        if number is None:
            raise ArgumentError("Effect arguments must be an id or an object containing EffectId.")
        return {"effect_id": _checked_id(number, "Effect"), "owner_type": None, "owner_id": None}
    effect_id = _object_id(value, ("EffectId", *_ID_KEYS), "Effect")
    if effect_id is None:
        raise ArgumentError("Effect arguments must include EffectId.")
    owner_id = _object_id(value, ("OwnerId", "ownerId", "OwnerCharacterId", "CharacterId"), "Owner")
    owner_text = _object_text(value, ("OwnerType", "ownerType", "Type", "type"))
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
    owner = _object_id(value, _OWNER_KEYS, "Character")
    if owner is None:
        raise ArgumentError("Outfit arguments must include OwnerCharacterId.")
    name = _object_text(value, ("OutfitName", "Name"))
    if name is None:
        raise ArgumentError("Outfit arguments must include OutfitName.")
    return {"owner_character_id": owner, "outfit_name": name}


def _outfit_item(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise ArgumentError(
            "OutfitItem arguments must be an object with OwnerCharacterId and ItemId."
        )
    owner = _object_id(value, _OWNER_KEYS, "Character")
    if owner is None:
        raise ArgumentError("OutfitItem arguments must include OwnerCharacterId.")
    item = _object_id(value, ("ItemId", *_ID_KEYS), "Item")
    if item is None:
        raise ArgumentError("OutfitItem arguments must include ItemId.")
    name = _object_text(value, ("OutfitName", "Name"))
    return {"owner_character_id": owner, "item_id": item, "outfit_name": name}


_CONVERTERS: dict[ProgType, Callable[[Any], Any]] = {
    ProgType.BOOLEAN: _boolean,
    ProgType.NUMBER: _numeric,
    ProgType.TEXT: _text,
    ProgType.GENDER: _gender,
    ProgType.DATETIME: _datetime,
    ProgType.TIMESPAN: _timespan,
    ProgType.MUDDATETIME: _mud_datetime,
    ProgType.EFFECT: _effect,
    ProgType.OUTFIT: _outfit,
    ProgType.OUTFIT_ITEM: _outfit_item,
}
