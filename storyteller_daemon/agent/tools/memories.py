"""Memory tools: the storyteller's notes about individual characters.

Result keys are FutureMUD's, including its one inconsistency that prompts and packs rely on:
list payloads call a memory's text ``Details`` while `ShowMemory` calls it ``Description``.
Beyond FutureMUD, a memory written from players' words says so (``FromPlayers: true``), and a
turn that reads one counts as reached by players' text (`Taint`); writes record the turn's
provenance; `CreateMemory` and `UpdateMemory` take an optional importance (1-10) that ranks
memories for prompts.
"""

from __future__ import annotations

from typing import Any

from storyteller_daemon.agent.effects import named
from storyteller_daemon.agent.tools.arguments import optional_int, required_id, required_text
from storyteller_daemon.agent.tools.base import Tool, from_players, iso
from storyteller_daemon.agent.tools.context import ToolContext, world_character
from storyteller_daemon.domain.argument_limits import TEXT_CHARS, TITLE_CHARS
from storyteller_daemon.domain.situations import DEFAULT_IMPORTANCE, CharacterMemory
from storyteller_daemon.errors import ToolError
from world_adapter.facts import CharacterInfo


def memory_entry(memory: CharacterMemory) -> dict[str, Any]:
    """One memory as list payloads show it."""
    entry = {
        "Id": memory.id,
        "Title": memory.title,
        "Details": memory.text,
        "CreatedOn": iso(memory.created_on),
    }
    return from_players(entry, memory.provenance.from_player)


def _importance(arguments: dict[str, Any]) -> int | None:
    value = optional_int(arguments, "Importance")
    if value is not None and not 1 <= value <= 10:
        raise ToolError("Importance must be between 1 and 10.")
    return value


async def player_character(ctx: ToolContext, character_id: int) -> CharacterInfo:
    """A player character by id.

    Raises:
        ToolError: no character has that id, or it is not a player character.
    """
    character = await world_character(ctx, character_id)
    if character is None or not character.is_player:
        raise ToolError(f"No player character with id {character_id} exists.")
    return character


async def memories_about(ctx: ToolContext, character_id: int) -> list[dict[str, Any]]:
    """This storyteller's memories about one character, oldest first."""
    memories = await ctx.services.memories.list(ctx.storyteller_id, character_id)
    for memory in memories:
        ctx.taint.saw(memory.provenance.from_player)
    return [memory_entry(m) for m in memories]


async def list_memories_for_player(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """ListMemoriesForPlayer."""
    character = await player_character(ctx, required_id(arguments, "Id"))
    return {"Memories": await memories_about(ctx, character.id)}


async def show_memory(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """ShowMemory."""
    memory = await ctx.services.memories.get(ctx.storyteller_id, required_id(arguments, "Id"))
    ctx.taint.saw(memory.provenance.from_player)
    entry = {
        "Id": memory.id,
        "Title": memory.title,
        "Description": memory.text,
        "CreatedOn": iso(memory.created_on),
    }
    return from_players(entry, memory.provenance.from_player)


async def create_memory(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """CreateMemory (about any character the world knows, player or not)."""
    character_id = required_id(arguments, "Id")
    title = required_text(arguments, "Title")
    details = required_text(arguments, "Details")
    importance = _importance(arguments) or DEFAULT_IMPORTANCE
    character = await world_character(ctx, character_id)
    if character is None:
        raise ToolError(f"No character with id {character_id} exists.")
    memory = await ctx.services.memories.create(
        ctx.storyteller_id,
        character.id,
        title,
        details,
        importance=importance,
        provenance=ctx.provenance,
    )
    return {"Id": memory.id, "CharacterId": memory.character_id, "Title": memory.title}


async def update_memory(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """UpdateMemory."""
    memory_id = required_id(arguments, "Id")
    title = required_text(arguments, "Title")
    details = required_text(arguments, "Details")
    memory = await ctx.services.memories.update(
        ctx.storyteller_id,
        memory_id,
        title,
        details,
        importance=_importance(arguments),
        provenance=ctx.provenance,
    )
    return {"Id": memory.id, "Title": memory.title}


async def forget_memory(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """ForgetMemory."""
    memory = await ctx.services.memories.forget(
        ctx.storyteller_id, required_id(arguments, "Id"), provenance=ctx.provenance
    )
    return {"Id": memory.id, "Forgot": True}


_MEMORY_ID = {"type": "integer", "description": "The memory's id, as listed by the memory tools."}
_TITLE = {"type": "string", "description": "A short title for the memory."}
_DETAILS = {"type": "string", "description": "What to remember."}
_LIMITS = {"Title": TITLE_CHARS, "Details": TEXT_CHARS}
_DICTATION = {"Title": "refuse", "Details": "quote"}
"""A title never repeats players' words; the details only as a quotation (`agent.dictation`)."""
_IMPORTANCE = {
    "type": "integer",
    "description": "How much this matters to your remit, 1 (trivia) to 10 (pivotal); "
    "important memories are shown to you first. Default 5.",
}

TOOLS: tuple[Tool, ...] = (
    Tool.define(
        "ListMemoriesForPlayer",
        "Lists your memories about one player character.",
        list_memories_for_player,
        {"Id": {"type": "integer", "description": "The player character's id."}},
        required=("Id",),
        names=named(characters=("Id",)),
    ),
    Tool.define(
        "ShowMemory",
        "Shows one memory in full. Memory ids come from ListMemoriesForPlayer or "
        "PlayerInformation.",
        show_memory,
        {"Id": _MEMORY_ID},
        required=("Id",),
    ),
    Tool.define(
        "CreateMemory",
        "Records a new memory about a character, to recall in later turns.",
        create_memory,
        {
            "Id": {"type": "integer", "description": "The character the memory is about."},
            "Title": _TITLE,
            "Details": _DETAILS,
            "Importance": _IMPORTANCE,
        },
        required=("Id", "Title", "Details"),
        names=named(characters=("Id",)),
        writes=True,
        limits=_LIMITS,
        dictation=_DICTATION,
    ),
    Tool.define(
        "UpdateMemory",
        "Rewrites the title and details of one memory.",
        update_memory,
        {"Id": _MEMORY_ID, "Title": _TITLE, "Details": _DETAILS, "Importance": _IMPORTANCE},
        required=("Id", "Title", "Details"),
        writes=True,
        limits=_LIMITS,
        dictation=_DICTATION,
    ),
    Tool.define(
        "ForgetMemory",
        "Deletes a memory for good.",
        forget_memory,
        {"Id": _MEMORY_ID},
        required=("Id",),
        writes=True,
    ),
)
