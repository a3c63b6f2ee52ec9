"""Player tools: who is online, and what the storyteller knows about one player character.

Every id in these payloads is the world's character id, the same id the memory and situation
tools take (FutureMUD mixed instance and identity ids here). `PlayerInformation` accepts player
characters only, as its error message always claimed, and the storyteller's optional
player-information prog may add keys but never replace the built-in ones.
"""

from __future__ import annotations

import logging
from typing import Any

from storyteller_daemon.agent.effects import named
from storyteller_daemon.agent.tools.arguments import required_id
from storyteller_daemon.agent.tools.base import Tool, idempotency_key
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.tools.custom import catalogue, find_prog
from storyteller_daemon.agent.tools.memories import memories_about, player_character
from world_adapter.errors import WorldCommandError
from world_adapter.facts import CharacterInfo

log = logging.getLogger(__name__)

UNKNOWN_LOCATION = "Unknown"


async def online_players(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """OnlinePlayers."""
    players = [p for p in await ctx.services.world.online_players() if p.is_player]
    counts = await ctx.services.memories.counts_by_character(ctx.storyteller_id)
    return {
        "Players": [
            {
                "Id": p.id,
                "Name": p.name,
                "Gender": p.gender,
                "ShortDescription": p.short_description,
                "LocationId": p.location_id or 0,
                "LocationName": p.location_name if p.location_id else UNKNOWN_LOCATION,
                "NumberOfMemories": counts.get(p.id, 0),
            }
            for p in players
        ]
    }


def _built_in_fields(character: CharacterInfo) -> dict[str, Any]:
    return {
        "Id": character.id,
        "Name": character.name,
        "Gender": character.gender,
        "Race": character.race,
        "Ethnicity": character.ethnicity,
        "Culture": character.culture,
        "Age": character.age,
        "AgeCategory": character.age_category,
        "Birthday": character.birthday,
        "ShortDescription": character.short_description,
        "FullDescription": character.full_description,
        "LocationId": character.location_id or 0,
        "LocationName": character.location_name if character.location_id else UNKNOWN_LOCATION,
    }


async def custom_fields(ctx: ToolContext, character_id: int) -> dict[str, Any]:
    """The storyteller's player-information prog's key/value pairs for one character.

    The prog takes the character as its single parameter and returns a dictionary. Any failure
    is logged and yields no extra fields: the built-in information is still worth returning.
    """
    ref = ctx.current.player_info_prog
    if not ref:
        return {}
    storyteller_id = ctx.storyteller_id
    signature = find_prog(await catalogue(ctx), ref)
    if signature is None or len(signature.parameters) != 1:
        log.warning(
            "Custom player information prog failed for storyteller %s: prog '%s' is missing "
            "or does not take exactly one parameter",
            storyteller_id,
            ref,
        )
        return {}
    arguments = {signature.parameters[0].name: character_id}
    key = idempotency_key(ctx.turn_key, "PlayerInformation", arguments)
    try:
        outcome = await ctx.services.world.execute_prog(str(signature.id), arguments, key)
    except WorldCommandError as exc:
        log.warning(
            "Custom player information prog failed for storyteller %s: %s", storyteller_id, exc
        )
        return {}
    if not isinstance(outcome.value, dict):
        log.warning(
            "Custom player information prog failed for storyteller %s: it returned %s, "
            "not a dictionary",
            storyteller_id,
            type(outcome.value).__name__,
        )
        return {}
    return {str(k): v for k, v in outcome.value.items()}


async def player_information(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """PlayerInformation."""
    character = await player_character(ctx, required_id(arguments, "Id"))
    payload = _built_in_fields(character)
    reserved = {k.lower() for k in payload} | {"memories"}
    for key, value in (await custom_fields(ctx, character.id)).items():
        if key.lower() not in reserved:
            payload[key] = value
    payload["Memories"] = await memories_about(ctx, character.id)
    return payload


TOOLS: tuple[Tool, ...] = (
    Tool.define(
        "OnlinePlayers",
        "Lists the player characters in the game now: id, name, gender, short description, "
        "location and how many memories you hold about each.",
        online_players,
    ),
    Tool.define(
        "PlayerInformation",
        "Shows detailed information about one player character, with your memories of them.",
        player_information,
        {"Id": {"type": "integer", "description": "The player character's id."}},
        required=("Id",),
        names=named(characters=("Id",)),
    ),
)
