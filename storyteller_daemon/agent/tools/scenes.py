"""Scene tools: hold a room for a while so other storytellers leave its scene to you.

While a claim holds, other storytellers' prog calls in that room are refused by the policy
(rule ``scene_claim``) unless their remit co-operates (`domain.scenes`). Claiming a room another
storyteller holds is refused with who holds it and until when; claiming one's own again
extends it.
"""

from __future__ import annotations

from typing import Any

from storyteller_daemon.agent.effects import named
from storyteller_daemon.agent.ports import SceneClaimStore
from storyteller_daemon.agent.tools.arguments import optional_int, optional_text, required_id
from storyteller_daemon.agent.tools.base import Tool, iso
from storyteller_daemon.agent.tools.context import ToolContext, world_room
from storyteller_daemon.domain.argument_limits import CLAIM_REASON_CHARS
from storyteller_daemon.domain.scenes import SceneClaim
from storyteller_daemon.errors import ToolError

DEFAULT_MINUTES = 15
_ROOM = {"type": "integer", "description": "The room of the scene."}


def _store(ctx: ToolContext) -> SceneClaimStore:
    if ctx.services.claims is None:
        raise ToolError("Scene claims are not kept by this daemon.")
    return ctx.services.claims


def _summary(claim: SceneClaim) -> dict[str, Any]:
    return {
        "RoomId": claim.room_id,
        "ClaimedAt": iso(claim.claimed_at),
        "ExpiresAt": iso(claim.expires_at),
        "Released": claim.released_at is not None,
        "Reason": claim.reason,
    }


async def claim_scene(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """ClaimScene."""
    room_id = required_id(arguments, "RoomId")
    if await world_room(ctx, room_id) is None:
        raise ToolError(f"No room with id {room_id} exists.")
    minutes = optional_int(arguments, "Minutes") or DEFAULT_MINUTES
    claim = await _store(ctx).claim(
        ctx.storyteller_id,
        room_id,
        minutes=minutes,
        reason=optional_text(arguments, "Reason") or "",
    )
    return _summary(claim)


async def release_scene(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """ReleaseScene."""
    return _summary(await _store(ctx).release(ctx.storyteller_id, required_id(arguments, "RoomId")))


TOOLS: tuple[Tool, ...] = (
    Tool.define(
        "ClaimScene",
        "Claims a room's scene for a while before you act there, so other storytellers do not "
        "act in it too; claiming your own claim again extends it.",
        claim_scene,
        {
            "RoomId": _ROOM,
            "Minutes": {"type": "integer", "description": f"1-60 (null: {DEFAULT_MINUTES})."},
            "Reason": {"type": "string", "description": "What you are doing there."},
        },
        required=("RoomId",),
        names=named(rooms=("RoomId",)),
        writes=True,
        limits={"Reason": CLAIM_REASON_CHARS},
    ),
    Tool.define(
        "ReleaseScene",
        "Ends your claim on a room's scene early.",
        release_scene,
        {"RoomId": _ROOM},
        required=("RoomId",),
        names=named(rooms=("RoomId",)),
        writes=True,
    ),
)
