"""``storyteller ais claim …``: scene claims, the rooms storytellers hold for a while so others
leave them alone."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from storyteller_daemon.cli.support import (
    JsonFlag,
    command_group,
    format_time,
    open_store,
    print_json,
    register,
    run_async,
    say,
    table,
)

if TYPE_CHECKING:
    from storyteller_daemon.domain.scenes import SceneClaim

claims = command_group("Scene claims: which storyteller holds which room, until when.")


def claim_json(claim: SceneClaim) -> dict[str, Any]:
    """A claim with stable keys."""
    return {
        "id": claim.id,
        "room_id": claim.room_id,
        "storyteller": {"id": claim.storyteller_id, "name": claim.storyteller_name},
        "claimed_at": claim.claimed_at.isoformat(),
        "expires_at": claim.expires_at.isoformat(),
        "released_at": claim.released_at.isoformat() if claim.released_at else None,
        "reason": claim.reason,
    }


@register(claims, "list")
@run_async
async def list_claims(
    ctx: typer.Context,
    everything: Annotated[
        bool, typer.Option("--all", help="Also claims that ended (the newest 50).")
    ] = False,
    json_out: JsonFlag = False,
) -> None:
    """List the scene claims holding now (or, with --all, the newest ones)."""
    async with open_store(ctx) as store:
        found = await (store.claims.recent() if everything else store.claims.active())
    if json_out:
        print_json([claim_json(c) for c in found])
        return
    if not found:
        say("No scene claims hold now." if not everything else "No scene claims.")
        return
    rows = [
        (c.id, c.room_id, c.storyteller_name, format_time(c.expires_at), c.reason) for c in found
    ]
    table("Scene claims", ("Id", "Room", "Name", "Until", "Title"), rows)
