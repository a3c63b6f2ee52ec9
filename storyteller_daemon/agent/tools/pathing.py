"""Path tools: the movement commands from a room or character to a room or character.

``PathSearchFunction`` takes FutureMUD's spellings, case-insensitively, and is parsed here into a
typed `PathRule` for the world:

* ``RespectClosedDoors`` only passes open doors; ``IncludeUnlockedDoors`` also closed, unlocked
  ones; ``IncludeFireableDoors`` also closed doors one can shoot through; ``IgnorePresenceOfDoors``
  (or ``IgnoreDoors``) any door; ``IncludeUnlockableDoors`` also locked doors the travelling
  character has a key to, so it needs a character.
* The ``Path`` variants (``PathRespectClosedDoors``, ``PathIncludeUnlockedDoors``,
  ``PathIgnoreDoors``, ``PathIncludeUnlockableDoors``) also avoid exits the travelling character
  cannot cross now. Between two rooms there is no character, so they fall back to their plain
  forms. The result's ``PathSearchFunction`` names the form actually used, with ``IgnoreDoors``
  written as ``IgnorePresenceOfDoors``.

A path is at most 50 exits long. Directions are brief cardinal tokens (``n``, ``ne``, ``u``) or
``verb keyword`` in lower case (``enter door``); the same room gives ``HasPath: true`` and no
directions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from storyteller_daemon.agent.tools.arguments import required_id, required_text
from storyteller_daemon.agent.tools.base import Tool
from storyteller_daemon.agent.tools.context import ToolContext, world_character, world_room
from storyteller_daemon.domain.argument_limits import WORD_CHARS
from storyteller_daemon.errors import ToolError
from world_adapter.facts import MAX_PATH_EXITS, CharacterInfo, DoorRule, PathRule


@dataclass(frozen=True)
class _Search:
    """One accepted spelling: the door rule, whether it is a Path variant, its plain form."""

    name: str
    doors: DoorRule
    path_variant: bool
    plain: str


_SEARCHES: tuple[_Search, ...] = (
    _Search("RespectClosedDoors", DoorRule.RESPECT_CLOSED, False, "RespectClosedDoors"),
    _Search("PathRespectClosedDoors", DoorRule.RESPECT_CLOSED, True, "RespectClosedDoors"),
    _Search("IncludeUnlockedDoors", DoorRule.INCLUDE_UNLOCKED, False, "IncludeUnlockedDoors"),
    _Search("PathIncludeUnlockedDoors", DoorRule.INCLUDE_UNLOCKED, True, "IncludeUnlockedDoors"),
    _Search("IncludeFireableDoors", DoorRule.INCLUDE_FIREABLE, False, "IncludeFireableDoors"),
    _Search("IgnorePresenceOfDoors", DoorRule.IGNORE, False, "IgnorePresenceOfDoors"),
    _Search("IgnoreDoors", DoorRule.IGNORE, False, "IgnorePresenceOfDoors"),
    _Search("PathIgnoreDoors", DoorRule.IGNORE, True, "IgnorePresenceOfDoors"),
    _Search("IncludeUnlockableDoors", DoorRule.INCLUDE_UNLOCKABLE, False, "IncludeUnlockableDoors"),
    _Search(
        "PathIncludeUnlockableDoors", DoorRule.INCLUDE_UNLOCKABLE, True, "IncludeUnlockableDoors"
    ),
)
VALID_SEARCHES = ", ".join(s.name for s in _SEARCHES)


def path_rule(spelling: str, character_id: int | None) -> tuple[PathRule, str]:
    """The rule a ``PathSearchFunction`` spelling asks for, and the name of the form used.

    Args:
        spelling: The model's text, matched case-insensitively.
        character_id: The travelling character, if the tool has one.

    Raises:
        ToolError: The spelling is unknown, or needs a character and there is none.
    """
    wanted = spelling.strip().casefold()
    search = next((s for s in _SEARCHES if s.name.casefold() == wanted), None)
    if search is None:
        raise ToolError(
            f"Unknown PathSearchFunction '{spelling}'. Valid values are {VALID_SEARCHES}."
        )
    if character_id is None:
        if search.doors is DoorRule.INCLUDE_UNLOCKABLE:
            raise ToolError(
                f"PathSearchFunction '{search.name}' needs a character who carries the keys; "
                "use PathFromCharacterToRoom or PathBetweenCharacters."
            )
        return PathRule(search.doors), search.plain
    used = search.name if search.path_variant else search.plain
    return PathRule(search.doors, character_id, search.path_variant), used


async def _located(ctx: ToolContext, character_id: int) -> tuple[CharacterInfo, int]:
    character = await world_character(ctx, character_id)
    if character is None:
        raise ToolError(f"No character with id {character_id} exists.")
    if character.location_id is None:
        raise ToolError(f"Character {character_id} has no location.")
    return character, character.location_id


async def _room(ctx: ToolContext, room_id: int) -> int:
    if await world_room(ctx, room_id) is None:
        raise ToolError(f"No room with id {room_id} exists.")
    return room_id


async def _walk(
    ctx: ToolContext, origin: int, destination: int, rule: PathRule, used: str
) -> dict[str, Any]:
    found = await ctx.services.world.path(origin, destination, rule, max_exits=MAX_PATH_EXITS)
    return {
        "PathSearchFunction": used,
        "HasPath": found.found,
        "Directions": list(found.directions),
    }


async def path_between_rooms(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """PathBetweenRooms."""
    origin = await _room(ctx, required_id(arguments, "OriginRoomId"))
    destination = await _room(ctx, required_id(arguments, "DestinationRoomId"))
    rule, used = path_rule(required_text(arguments, "PathSearchFunction"), None)
    walked = await _walk(ctx, origin, destination, rule, used)
    return {"OriginRoomId": origin, "DestinationRoomId": destination, **walked}


async def path_from_character_to_room(
    arguments: dict[str, Any], ctx: ToolContext
) -> dict[str, Any]:
    """PathFromCharacterToRoom."""
    character, origin = await _located(ctx, required_id(arguments, "OriginCharacterId"))
    destination = await _room(ctx, required_id(arguments, "DestinationRoomId"))
    rule, used = path_rule(required_text(arguments, "PathSearchFunction"), character.id)
    walked = await _walk(ctx, origin, destination, rule, used)
    return {
        "OriginCharacterId": character.id,
        "OriginRoomId": origin,
        "DestinationRoomId": destination,
        **walked,
    }


async def path_between_characters(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """PathBetweenCharacters: the origin character is the one who travels."""
    character, origin = await _located(ctx, required_id(arguments, "OriginCharacterId"))
    target, destination = await _located(ctx, required_id(arguments, "DestinationCharacterId"))
    rule, used = path_rule(required_text(arguments, "PathSearchFunction"), character.id)
    walked = await _walk(ctx, origin, destination, rule, used)
    return {
        "OriginCharacterId": character.id,
        "OriginRoomId": origin,
        "DestinationCharacterId": target.id,
        "DestinationRoomId": destination,
        **walked,
    }


def _search_property(note: str) -> dict[str, Any]:
    return {
        "type": "string",
        "description": f"How to treat doors: one of {VALID_SEARCHES}. {note}",
    }


_ROOM_SEARCH = _search_property(
    "IncludeUnlockableDoors needs a character, so it is not available between two rooms."
)
_CHARACTER_SEARCH = _search_property(
    "The Path variants also avoid exits the travelling character cannot cross right now; "
    "IncludeUnlockableDoors also passes locked doors the character has a key to."
)


def _id(description: str) -> dict[str, Any]:
    return {"type": "integer", "description": description}


TOOLS: tuple[Tool, ...] = (
    Tool.define(
        "PathBetweenRooms",
        "Lists the movement commands (n, ne, u, enter door...) along the shortest path from one "
        "room to another, up to 50 exits.",
        path_between_rooms,
        {
            "OriginRoomId": _id("The room to start from."),
            "DestinationRoomId": _id("The room to reach."),
            "PathSearchFunction": _ROOM_SEARCH,
        },
        required=("OriginRoomId", "DestinationRoomId", "PathSearchFunction"),
        limits={"PathSearchFunction": WORD_CHARS},
    ),
    Tool.define(
        "PathFromCharacterToRoom",
        "Lists the movement commands along the shortest path from a character's current room "
        "to another room, up to 50 exits.",
        path_from_character_to_room,
        {
            "OriginCharacterId": _id("The character who would travel."),
            "DestinationRoomId": _id("The room to reach."),
            "PathSearchFunction": _CHARACTER_SEARCH,
        },
        required=("OriginCharacterId", "DestinationRoomId", "PathSearchFunction"),
        limits={"PathSearchFunction": WORD_CHARS},
    ),
    Tool.define(
        "PathBetweenCharacters",
        "Lists the movement commands along the shortest path from one character's current room "
        "to another character's, up to 50 exits.",
        path_between_characters,
        {
            "OriginCharacterId": _id("The character who would travel."),
            "DestinationCharacterId": _id("The character to reach."),
            "PathSearchFunction": _CHARACTER_SEARCH,
        },
        required=("OriginCharacterId", "DestinationCharacterId", "PathSearchFunction"),
        limits={"PathSearchFunction": WORD_CHARS},
    ),
)
