"""Situation tools: open, change, resolve and read the storyteller's narrative threads.

Scope rules (FutureMUD's): a situation is universal, or scoped to one character, or to one room;
ids must be positive; giving both is refused; the character or room must exist in the world.
Two departures from FutureMUD, both deliberate: a scope can be cleared with ``ClearScope``
(FutureMUD could never make a scoped situation universal again), and a resolved situation can
be read but no longer changed (FutureMUD silently edited it, and had no way to reopen it).
"""

from __future__ import annotations

from typing import Any

from storyteller_daemon.agent.effects import named
from storyteller_daemon.agent.tools.arguments import optional_id, required_id, required_text
from storyteller_daemon.agent.tools.base import Tool, from_players, iso
from storyteller_daemon.agent.tools.context import ToolContext, world_character, world_room
from storyteller_daemon.domain.argument_limits import TEXT_CHARS, TITLE_CHARS
from storyteller_daemon.domain.situations import Situation, check_scope
from storyteller_daemon.errors import ToolError, ValidationError

_ID = {"type": "integer", "description": "The situation's id."}
_TITLE = {"type": "string", "description": "A short title, shown in later prompts."}
_DESCRIPTION = {"type": "string", "description": "The full details of the situation."}
_CHARACTER = {
    "type": "integer",
    "description": "Scope the situation to this character. Use CharacterId or RoomId, not both.",
}
_ROOM = {
    "type": "integer",
    "description": "Scope the situation to this room. Use CharacterId or RoomId, not both.",
}
_CHANGE_CHARACTER = {"type": "integer", "description": "If given, re-scopes to this character."}
_CHANGE_ROOM = {"type": "integer", "description": "If given, re-scopes to this room."}
_LIMITS = {"Title": TITLE_CHARS, "Description": TEXT_CHARS}
_DICTATION = {"Title": "refuse", "Description": "quote"}
"""A title never repeats players' words; the description only as a quotation
(`agent.dictation`)."""
_CLEAR_SCOPE = {
    "type": "boolean",
    "description": "If true, makes the situation universal again (not with CharacterId/RoomId).",
}


def summary(situation: Situation) -> dict[str, Any]:
    """The payload of the create, update and resolve tools."""
    return {
        "Id": situation.id,
        "Title": situation.title,
        "CreatedOn": iso(situation.created_on),
        "Resolved": situation.resolved,
        "CharacterId": situation.character_id,
        "RoomId": situation.room_id,
    }


async def resolve_scope(
    arguments: dict[str, Any], ctx: ToolContext
) -> tuple[int | None, int | None]:
    """The (character, room) scope named by the arguments, checked against the world.

    Raises:
        ToolError: a non-positive id, both ids, or an id the world does not know.
    """
    character_id = optional_id(arguments, "CharacterId")
    room_id = optional_id(arguments, "RoomId")
    try:
        check_scope(character_id, room_id)
    except ValidationError as exc:
        raise ToolError(str(exc)) from None
    if character_id is not None and await world_character(ctx, character_id) is None:
        raise ToolError(f"No character with id {character_id} exists.")
    if room_id is not None and await world_room(ctx, room_id) is None:
        raise ToolError(f"No room with id {room_id} exists.")
    return character_id, room_id


def _flag(arguments: dict[str, Any], key: str) -> bool:
    value = arguments.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ToolError(f"Property '{key}' must be true, false or null.")
    return value


async def create_situation(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """CreateSituation."""
    title = required_text(arguments, "Title")
    text = required_text(arguments, "Description")
    character_id, room_id = await resolve_scope(arguments, ctx)
    created = await ctx.services.situations.create(
        ctx.storyteller_id,
        title,
        text,
        character_id=character_id,
        room_id=room_id,
        provenance=ctx.provenance,
    )
    return summary(created)


async def _change(arguments: dict[str, Any], ctx: ToolContext, *, resolve: bool) -> Situation:
    situation_id = required_id(arguments, "Id")
    title = required_text(arguments, "Title")
    text = required_text(arguments, "Description")
    character_id, room_id = await resolve_scope(arguments, ctx)
    clear = _flag(arguments, "ClearScope")
    if clear and (character_id is not None or room_id is not None):
        raise ToolError("Use either ClearScope or a new CharacterId/RoomId, not both.")
    current = await ctx.services.situations.get(ctx.storyteller_id, situation_id)
    ctx.taint.saw(current.provenance.from_player)
    if current.resolved:
        if resolve:
            raise ToolError(f"Situation {situation_id} is already resolved.")
        raise ToolError(
            f"Situation {situation_id} is resolved and can no longer change; "
            "create a new situation instead."
        )
    if clear and (current.character_id is not None or current.room_id is not None):
        await ctx.services.situations.set_scope(ctx.storyteller_id, situation_id, None, None)
    return await ctx.services.situations.update(
        ctx.storyteller_id,
        situation_id,
        title=title,
        text=text,
        character_id=character_id,
        room_id=room_id,
        resolve=resolve,
        provenance=ctx.provenance,
    )


async def update_situation(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """UpdateSituation."""
    return summary(await _change(arguments, ctx, resolve=False))


async def resolve_situation(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """ResolveSituation."""
    return summary(await _change(arguments, ctx, resolve=True))


async def show_situation(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """ShowSituation."""
    situation = await ctx.services.situations.get(ctx.storyteller_id, required_id(arguments, "Id"))
    ctx.taint.saw(situation.provenance.from_player)
    entry = {
        "Id": situation.id,
        "Title": situation.title,
        "Description": situation.text,
        "CreatedOn": iso(situation.created_on),
        "Resolved": situation.resolved,
        "CharacterId": situation.character_id,
        "RoomId": situation.room_id,
    }
    return from_players(entry, situation.provenance.from_player)


_CHANGE_PROPERTIES = {
    "Id": _ID,
    "Title": _TITLE,
    "Description": _DESCRIPTION,
    "CharacterId": _CHANGE_CHARACTER,
    "RoomId": _CHANGE_ROOM,
    "ClearScope": _CLEAR_SCOPE,
}

TOOLS: tuple[Tool, ...] = (
    Tool.define(
        "CreateSituation",
        "Opens a new situation: a narrative thread you want to keep track of. Optionally scope "
        "it to one character or one room so it only shows up for events that involve them.",
        create_situation,
        {"Title": _TITLE, "Description": _DESCRIPTION, "CharacterId": _CHARACTER, "RoomId": _ROOM},
        required=("Title", "Description"),
        limits=_LIMITS,
        names=named(characters=("CharacterId",), rooms=("RoomId",)),
        writes=True,
        dictation=_DICTATION,
    ),
    Tool.define(
        "UpdateSituation",
        "Rewrites the title and details of an unresolved situation, and optionally its scope.",
        update_situation,
        _CHANGE_PROPERTIES,
        required=("Id", "Title", "Description"),
        limits=_LIMITS,
        names=named(characters=("CharacterId",), rooms=("RoomId",)),
        writes=True,
        dictation=_DICTATION,
    ),
    Tool.define(
        "ResolveSituation",
        "Closes a situation that has run its course, after a final update of its title and "
        "details (and optionally its scope).",
        resolve_situation,
        _CHANGE_PROPERTIES,
        required=("Id", "Title", "Description"),
        limits=_LIMITS,
        names=named(characters=("CharacterId",), rooms=("RoomId",)),
        writes=True,
        dictation=_DICTATION,
    ),
    Tool.define(
        "ShowSituation",
        "Shows everything about one situation, resolved or not.",
        show_situation,
        {"Id": _ID},
        required=("Id",),
    ),
)
