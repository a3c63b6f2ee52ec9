"""How the sim world reads a prog call's arguments.

It accepts exactly the shapes `progs.convert` sends (see that module's table) and resolves every
reference against the town's data, so a prog body receives objects, never raw ids or names:

==========================  =============================================================
type                        a prog body receives
==========================  =============================================================
Boolean, Number, Text       bool, int or float, str
Gender                      one of `progs.types.GENDERS`
DateTime, TimeSpan          an aware datetime, a timedelta
MudDateTime                 a `MudMoment`, or None for ``never``
Character, Location         a `CharacterSheet`, a `Room`
Item, Exit                  an `Item`, a `Passage`
Zone                        a map `Zone`
Calendar, Clock             a `Calendar`, a `Clock`
Clan                        a `Clan`
ClanRank, ClanAppointment,  a `ClanMembership` (the clan and the position)
ClanPaygrade
other named types           a `FrameworkItem`
Effect                      an `Effect`
Outfit, OutfitItem          an `Outfit`, an `OutfitPiece`
Collection<T>               a list of the above
==========================  =============================================================

JSON null stands for "no object" for every type but the value types, and arrives as None.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from progs.types import (
    CLAN_SCOPED_TYPES,
    GENDERS,
    UNSUPPORTED_PARAMETER_TYPES,
    VALUE_TYPES,
    ProgSignature,
    ProgType,
)
from world_adapter.errors import WorldCommandError
from world_adapter.sim.framework import Clan, Nameable, resolve_named
from world_adapter.sim.queries import KnowingTown


def bind_arguments(
    town: KnowingTown, signature: ProgSignature, arguments: Mapping[str, Any]
) -> dict[str, Any]:
    """Match arguments to parameters by case-insensitive name and resolve their values.

    Returns:
        The resolved arguments keyed by declared parameter name (see the module docstring).

    Raises:
        WorldCommandError: For a repeated, unknown or missing argument, a value of the wrong
            shape, a reference to nothing in the town, or a parameter type no call can supply.
    """
    given: dict[str, tuple[str, Any]] = {}
    for name, value in arguments.items():
        key = str(name).strip().lower()
        if key in given:
            raise WorldCommandError(f"Argument '{name}' is given twice.")
        given[key] = (str(name), value)
    declared = {p.name.lower() for p in signature.parameters}
    for key, (name, _) in given.items():
        if key not in declared:
            expected = ", ".join(signature.parameter_names) or "none"
            raise WorldCommandError(
                f"Prog {signature.name} has no parameter named '{name}' "
                f"(its parameters: {expected})."
            )
    bound: dict[str, Any] = {}
    for parameter in signature.parameters:
        kind = parameter.type
        if kind.element in UNSUPPORTED_PARAMETER_TYPES:
            raise WorldCommandError(
                f"Parameter type {kind.describe()} of '{parameter.name}' is not supported by the "
                "sim world."
            )
        if parameter.name.lower() not in given:
            raise WorldCommandError(
                f"Prog {signature.name} needs the argument '{parameter.name}' ({kind.describe()})."
            )
        value = given[parameter.name.lower()][1]
        label = f"Argument '{parameter.name}'"
        if not kind.collection:
            bound[parameter.name] = _element(town, label, kind.element, value)
        elif not isinstance(value, list):
            raise WorldCommandError(f"{label} must be a list ({kind.describe()}), not {value!r}.")
        else:
            bound[parameter.name] = [
                _element(town, f"Element {i} of argument '{parameter.name}'", kind.element, item)
                for i, item in enumerate(value)
            ]
    return bound


def _element(town: KnowingTown, label: str, element: ProgType, value: Any) -> Any:
    if value is None:
        if element in VALUE_TYPES:
            raise WorldCommandError(f"{label} must not be null ({element.value}).")
        return None
    reader = _READERS.get(element)
    if reader is not None:
        return reader(town, label, value)
    return _named(town, label, element, value)


# ---------------------------------------------------------------- value types


def _boolean(town: KnowingTown, label: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise WorldCommandError(f"{label} must be true or false, not {value!r}.")
    return value


def _number(town: KnowingTown, label: str, value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WorldCommandError(f"{label} must be a number, not {value!r}.")
    return value


def _text(town: KnowingTown, label: str, value: Any) -> str:
    if not isinstance(value, str):
        raise WorldCommandError(f"{label} must be text, not {value!r}.")
    return value


def _gender(town: KnowingTown, label: str, value: Any) -> str:
    if value not in GENDERS:
        raise WorldCommandError(f"{label} must be one of {', '.join(GENDERS)}, not {value!r}.")
    return str(value)


def _datetime(town: KnowingTown, label: str, value: Any) -> datetime:
    try:
        moment = datetime.fromisoformat(_text(town, label, value))
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise WorldCommandError(f"{label} must be an ISO-8601 datetime with an offset: {value!r}.")
    return moment


_TIMESPAN = re.compile(
    r"(?P<sign>-)?(?:(?P<days>[0-9]+)\.)?(?P<h>[0-9]{2}):(?P<m>[0-9]{2}):(?P<s>[0-9]{2})"
    r"(?:\.(?P<f>[0-9]{1,7}))?"
)


def _timespan(town: KnowingTown, label: str, value: Any) -> timedelta:
    match = _TIMESPAN.fullmatch(_text(town, label, value))
    if match is None or int(match["h"]) > 23 or int(match["m"]) > 59 or int(match["s"]) > 59:
        raise WorldCommandError(f"{label} must be a TimeSpan such as 1.02:03:04, not {value!r}.")
    span = timedelta(
        days=int(match["days"] or 0),
        hours=int(match["h"]),
        minutes=int(match["m"]),
        seconds=int(match["s"]),
        microseconds=int((match["f"] or "").ljust(7, "0")) // 10,
    )
    return -span if match["sign"] else span


def _mud_datetime(town: KnowingTown, label: str, value: Any) -> Any:
    text = _text(town, label, value)
    if town.timekeeping is not None:
        return town.timekeeping.parse_mud_datetime(text)
    if text.strip().casefold() == "never":
        return None
    raise WorldCommandError(f"{label}: this world keeps no calendars, so only 'never' is valid.")


# ---------------------------------------------------------------- things named by id


def _id(label: str, value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        article = "an" if what[0] in "aeiou" else "a"
        raise WorldCommandError(f"{label} must be {article} {what} id (an integer), not {value!r}.")
    return value


def _character(town: KnowingTown, label: str, value: Any) -> Any:
    return town.sheet(_id(label, value, "character"))


def _location(town: KnowingTown, label: str, value: Any) -> Any:
    return town.room_of(_id(label, value, "room"))


def _item(town: KnowingTown, label: str, value: Any) -> Any:
    return town.belongings.item(_id(label, value, "item"))


def _exit(town: KnowingTown, label: str, value: Any) -> Any:
    exit_id = _id(label, value, "exit")
    passage = town.town_map.passages.get(exit_id)
    if passage is None:
        raise WorldCommandError(f"No exit with id {exit_id} exists.")
    return passage


def _fields(label: str, value: Any, required: Sequence[str], optional: Sequence[str]) -> None:
    keys = set(value) if isinstance(value, dict) else None
    if keys is None or not set(required) <= keys or not keys <= {*required, *optional}:
        wanted = ", ".join([*required, *(f"{k} (optional)" for k in optional)])
        raise WorldCommandError(f"{label} must be an object with {wanted}, not {value!r}.")


def _effect(town: KnowingTown, label: str, value: Any) -> Any:
    _fields(label, value, ("effect_id", "owner_type", "owner_id"), ())
    owner_type = value["owner_type"]
    if owner_type is not None and not isinstance(owner_type, str):
        raise WorldCommandError(f"{label}: owner_type must be text or null.")
    owner_id = None if value["owner_id"] is None else _id(label, value["owner_id"], "owner")
    return town.belongings.effect(_id(label, value["effect_id"], "effect"), owner_type, owner_id)


def _outfit(town: KnowingTown, label: str, value: Any) -> Any:
    _fields(label, value, ("owner_character_id", "outfit_name"), ())
    owner = town.sheet(_id(label, value["owner_character_id"], "character"))
    return town.belongings.outfit(owner.id, _text(town, label, value["outfit_name"]))


def _outfit_item(town: KnowingTown, label: str, value: Any) -> Any:
    _fields(label, value, ("owner_character_id", "item_id"), ("outfit_name",))
    owner = town.sheet(_id(label, value["owner_character_id"], "character"))
    name = value.get("outfit_name")
    return town.belongings.outfit_piece(
        owner.id,
        _id(label, value["item_id"], "item"),
        None if name is None else _text(town, label, name),
    )


# ---------------------------------------------------------------- things named by id or name


def _named(town: KnowingTown, label: str, element: ProgType, value: Any) -> Any:
    kind = element.value
    clan: Clan | None = None
    ref: Any = value
    if isinstance(value, dict):
        scoped = ("clan",) if element in CLAN_SCOPED_TYPES else ()
        forms = ["id", "name", *(["abbreviation"] if element is ProgType.CLAN_PAYGRADE else [])]
        if len(set(forms) & set(value)) != 1:
            raise WorldCommandError(
                f"{label} must be an id, a name, or an object with one of {', '.join(forms)}"
                f"{' and an optional clan' if scoped else ''}, not {value!r}."
            )
        (form,) = set(forms) & set(value)
        _fields(label, value, (form,), scoped)
        if value.get("clan") is not None:
            clan = resolve_named("Clan", town.framework.clans, _reference(label, value["clan"]))
        ref = value[form]
        if form == "abbreviation":
            return _by_abbreviation(town, label, clan, _text(town, label, ref))
    ref = _reference(label, ref)
    found = resolve_named(kind, _candidates(town, element, clan, ref), ref)
    if clan is not None and found not in town.framework.memberships(element, clan):
        raise WorldCommandError(f"{kind} {ref} does not belong to clan {clan.name}.")
    return found


def _reference(label: str, value: Any) -> int | str:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip():
        return value
    raise WorldCommandError(f"{label} must name something by id or name, not {value!r}.")


def _candidates(
    town: KnowingTown, element: ProgType, clan: Clan | None, ref: int | str
) -> Sequence[Nameable]:
    if element in CLAN_SCOPED_TYPES:
        # Position ids are unique across clans: an id is looked up among every clan's positions
        # (and then checked against the clan), a name only within the clan given.
        return town.framework.memberships(element, None if isinstance(ref, int) else clan)
    if element is ProgType.CLAN:
        return town.framework.clans
    if element is ProgType.ZONE:
        return town.town_map.zones
    if element is ProgType.CALENDAR:
        return town.timekeeping.calendars if town.timekeeping else ()
    if element is ProgType.CLOCK:
        return town.timekeeping.clocks if town.timekeeping else ()
    return town.framework.entries(element)


def _by_abbreviation(town: KnowingTown, label: str, clan: Clan | None, text: str) -> Any:
    wanted = text.strip().casefold()
    found = [
        m
        for m in town.framework.memberships(ProgType.CLAN_PAYGRADE, clan)
        if m.position.abbreviation.casefold() == wanted
    ]
    if not found:
        raise WorldCommandError(f"No ClanPaygrade with the abbreviation '{text}' exists.")
    if len(found) > 1:
        raise WorldCommandError(f"'{text}' is ambiguous for ClanPaygrade; provide an id.")
    return found[0]


_READERS: dict[ProgType, Callable[[KnowingTown, str, Any], Any]] = {
    ProgType.BOOLEAN: _boolean,
    ProgType.NUMBER: _number,
    ProgType.TEXT: _text,
    ProgType.GENDER: _gender,
    ProgType.DATETIME: _datetime,
    ProgType.TIMESPAN: _timespan,
    ProgType.MUDDATETIME: _mud_datetime,
    ProgType.CHARACTER: _character,
    ProgType.LOCATION: _location,
    ProgType.ITEM: _item,
    ProgType.EXIT: _exit,
    ProgType.EFFECT: _effect,
    ProgType.OUTFIT: _outfit,
    ProgType.OUTFIT_ITEM: _outfit_item,
}
