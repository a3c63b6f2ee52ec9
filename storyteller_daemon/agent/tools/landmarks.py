"""Landmark tools: the named places of the world, and who is at one now.

A landmark's ``Id`` is its name, matched case-insensitively, as in FutureMUD.
"""

from __future__ import annotations

from typing import Any

from storyteller_daemon.agent.tools.arguments import required_text
from storyteller_daemon.agent.tools.base import Tool
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.domain.argument_limits import WORD_CHARS
from storyteller_daemon.errors import ToolError


async def landmarks(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """Landmarks."""
    return {
        "Landmarks": [
            {"Id": lm.name, "RoomId": lm.room_id, "RoomName": lm.room_name}
            for lm in await ctx.services.world.landmarks()
        ]
    }


async def show_landmark(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """ShowLandmark."""
    name = required_text(arguments, "Id")
    landmark = await ctx.services.world.landmark(name)
    if landmark is None:
        raise ToolError(f"No landmark with id '{name}' exists.")
    return {
        "Id": landmark.name,
        "RoomId": landmark.room_id,
        "RoomName": landmark.room_name,
        "RoomDescription": landmark.room_description,
        "Details": list(landmark.descriptions),
        "Occupants": [
            {
                "Id": c.id,
                "Name": c.name,
                "Gender": c.gender,
                "ShortDescription": c.short_description,
            }
            for c in landmark.occupants
        ],
    }


TOOLS: tuple[Tool, ...] = (
    Tool.define(
        "Landmarks",
        "Lists the world's landmarks: each one's name (its Id) and the room it marks.",
        landmarks,
    ),
    Tool.define(
        "ShowLandmark",
        "Shows one landmark in detail: its room and that room's description, what is said "
        "about the landmark, and who is there now.",
        show_landmark,
        {"Id": {"type": "string", "description": "The landmark's name, as Landmarks lists it."}},
        required=("Id",),
        limits={"Id": WORD_CHARS},
    ),
)
