"""JSON descriptions of resolved prog arguments, for the progs that report what they received.

A builder (or a test) can call such a prog with any argument shapes and read back which town
object each argument resolved to: ``{"Id": 1, "Name": "Human", "Type": "Race"}`` and the like.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from progs.results import format_datetime, format_timespan
from world_adapter.sim.belongings import Effect, Item, Outfit, OutfitPiece
from world_adapter.sim.calendar import Calendar
from world_adapter.sim.clock import GameClock
from world_adapter.sim.framework import Clan, ClanMembership, FrameworkItem
from world_adapter.sim.map import Passage, Room, Zone
from world_adapter.sim.people import CharacterSheet
from world_adapter.sim.timekeeping import MudMoment

# Plain objects described by id, name and the prog type they stand for.
_Entity = CharacterSheet | Room | Item | Passage | Zone | Clan | Calendar | GameClock
_ENTITY_TYPES: tuple[tuple[type[_Entity], str], ...] = (
    (CharacterSheet, "Character"),
    (Room, "Location"),
    (Item, "Item"),
    (Passage, "Exit"),
    (Zone, "Zone"),
    (Clan, "Clan"),
    (Calendar, "Calendar"),
    (GameClock, "Clock"),
)


def describe(value: Any) -> Any:
    """A JSON-ready description of a resolved argument (see `world_adapter.sim.arguments`).

    Raises:
        TypeError: For a value no argument resolves to.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list):
        return [describe(item) for item in value]
    if isinstance(value, datetime):
        return format_datetime(value)
    if isinstance(value, timedelta):
        return format_timespan(value)
    if isinstance(value, FrameworkItem):
        return {"Id": value.id, "Name": value.name, "Type": value.kind.value}
    if isinstance(value, ClanMembership):
        return {
            "Id": value.position.id,
            "Name": value.position.name,
            "Type": value.position.kind.value,
            "Clan": value.clan.name,
        }
    for kind, type_name in _ENTITY_TYPES:
        if isinstance(value, kind):
            entity: _Entity = value
            return {"Id": entity.id, "Name": entity.name, "Type": type_name}
    return _describe_other(value)


def describe_mud_datetime(value: MudMoment | None) -> dict[str, Any]:
    """A mud datetime: ``{"Never": true}`` or its calendar and the moment in words."""
    if value is None:
        return {"Type": "MudDateTime", "Never": True}
    return {
        "Type": "MudDateTime",
        "Never": False,
        "Calendar": value.calendar.name,
        "DateTime": value.describe(),
    }


def _describe_other(value: Any) -> dict[str, Any]:
    if isinstance(value, Effect):
        return {
            "Id": value.id,
            "Name": value.name,
            "Type": "Effect",
            "Description": value.description,
            "OwnerType": value.owner_type,
            "OwnerId": value.owner_id,
        }
    if isinstance(value, Outfit):
        return {
            "Name": value.name,
            "Type": "Outfit",
            "OwnerId": value.owner_id,
            "ItemIds": list(value.item_ids),
        }
    if isinstance(value, OutfitPiece):
        return {
            "Type": "OutfitItem",
            "Outfit": value.outfit.name,
            "OwnerId": value.outfit.owner_id,
            "ItemId": value.item.id,
            "Item": value.item.name,
        }
    if isinstance(value, MudMoment):
        return describe_mud_datetime(value)
    raise TypeError(f"No description for a {type(value).__name__}.")
