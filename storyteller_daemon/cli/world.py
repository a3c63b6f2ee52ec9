"""``storyteller world``: look at the configured world, read-only.

Zones, rooms, progs, characters and who is online, as the world's own queries answer them, so
an admin can find the ids a pack names (surveillance zones and rooms, prog names and their
parameter types); `snapshot` writes all of it to one JSON file that a scenario can run over.
Nothing here changes the world: only the protocol's read queries are sent.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from storyteller_daemon.cli.support import JsonFlag, console, print_json, run_async, state, table
from storyteller_daemon.errors import NotFoundError, ValidationError

if TYPE_CHECKING:
    from storyteller_daemon.app.world_access import ReachedWorld


app = typer.Typer(
    help="The configured world, read-only: zones, rooms, progs, characters.",
    no_args_is_help=True,
)

_PROG_WIDE = frozenset({"Name", "Parameters", "Returns", "Description"})

Timeout = Annotated[
    float, typer.Option("--timeout", help="Seconds the game may take to answer.", min=0.1)
]


@asynccontextmanager
async def _world(ctx: typer.Context, seconds: float) -> AsyncIterator[ReachedWorld]:
    from storyteller_daemon.app.world_access import reach_world

    async with reach_world(state(ctx).config(), os.environ, seconds=seconds) as world:
        yield world


def _encode(value: Any, hint: Any) -> Any:
    from world_adapter.codec import encode

    return encode(value, hint)


def _ids(ids: Any) -> str:
    return ", ".join(str(i) for i in sorted(ids))


@app.command("zones")
@run_async
async def zones(ctx: typer.Context, seconds: Timeout = 5.0, as_json: JsonFlag = False) -> None:
    """Every zone and the rooms in it."""
    async with _world(ctx, seconds) as world:
        found = await world.ask(world.client.zones())
    if as_json:
        print_json([{"zone": z, "rooms": sorted(found[z])} for z in sorted(found)])
        return
    rows = [(z, len(found[z]), _ids(found[z])) for z in sorted(found)]
    table(f"Zones of {world.identity}", ["Zone", "Rooms", "Room ids"], rows, wide={"Room ids"})


@app.command("rooms")
@run_async
async def rooms(
    ctx: typer.Context,
    zone: Annotated[int | None, typer.Option(help="Only the rooms of this zone.")] = None,
    seconds: Timeout = 5.0,
    as_json: JsonFlag = False,
) -> None:
    """The rooms of every zone (or of one), with their names."""
    from world_adapter.facts import RoomInfo

    async with _world(ctx, seconds) as world:
        found = await world.ask(world.client.zones())
        if zone is not None and zone not in found:
            raise NotFoundError(
                f"{world.where} has no zone {zone} (zones: {_ids(found) or 'none'})"
            )
        cells = found[zone] if zone is not None else frozenset().union(*found.values())
        infos = [await world.ask(world.client.room(cell)) for cell in sorted(cells)]
    listed = [info for info in infos if info is not None]
    if as_json:
        print_json(_encode(listed, list[RoomInfo]))
        return
    rows = [(r.id, r.name, r.zone_id, len(r.occupant_ids)) for r in listed]
    table("Rooms", ["Id", "Name", "Zone", "Occupants"], rows, wide={"Name", "Occupants"})


@app.command("room")
@run_async
async def room(
    ctx: typer.Context,
    room_id: Annotated[int, typer.Argument(help="The room's id.", metavar="ID")],
    seconds: Timeout = 5.0,
    as_json: JsonFlag = False,
) -> None:
    """One room: its name, zone, description and occupants."""
    from world_adapter.facts import RoomInfo

    async with _world(ctx, seconds) as world:
        info = await world.ask(world.client.room(room_id))
        if info is None:
            raise NotFoundError(f"{world.where} has no room {room_id}")
    if as_json:
        print_json(_encode(info, RoomInfo))
        return
    console.print(f"Room {info.id}: {info.name}", markup=False)
    console.print(f"zone: {info.zone_id if info.zone_id is not None else 'none'}", markup=False)
    console.print(f"occupants: {_ids(info.occupant_ids) or 'none'}", markup=False)
    if info.description:
        console.print(info.description, markup=False)


@app.command("progs")
@run_async
async def progs(ctx: typer.Context, seconds: Timeout = 5.0, as_json: JsonFlag = False) -> None:
    """The prog catalogue: each prog's typed parameters, return type and description."""
    from progs.types import ProgSignature

    async with _world(ctx, seconds) as world:
        found = await world.ask(world.client.progs())
    found = sorted(found, key=lambda p: p.name.casefold())
    if as_json:
        print_json(_encode(found, list[ProgSignature]))
        return
    rows = [
        (
            p.name,
            p.id,
            ", ".join(f"{q.name}: {q.type.describe()}" for q in p.parameters) or "none",
            p.return_type.describe(),
            f"does not compile: {p.compile_error}" if p.compile_error else p.description,
        )
        for p in found
    ]
    table("Progs", ["Name", "Id", "Parameters", "Returns", "Description"], rows, wide=_PROG_WIDE)


@app.command("character")
@run_async
async def character(
    ctx: typer.Context,
    character_id: Annotated[int, typer.Argument(help="The character's id.", metavar="ID")],
    seconds: Timeout = 5.0,
    as_json: JsonFlag = False,
) -> None:
    """One character, player or not."""
    from world_adapter.facts import CharacterInfo

    async with _world(ctx, seconds) as world:
        info = await world.ask(world.client.character(character_id))
        if info is None:
            raise NotFoundError(f"{world.where} has no character {character_id}")
    if as_json:
        print_json(_encode(info, CharacterInfo))
        return
    kind = "player" if info.is_player else "non-player"
    console.print(f"Character {info.id}: {info.name} ({kind})", markup=False)
    where = f"{info.location_name} ({info.location_id})" if info.location_id else "nowhere"
    console.print(f"in: {where}", markup=False)
    console.print(f"{info.gender} {info.race}, {info.culture}, {info.age_category}", markup=False)
    console.print(info.short_description, markup=False)


@app.command("online")
@run_async
async def online(ctx: typer.Context, seconds: Timeout = 5.0, as_json: JsonFlag = False) -> None:
    """Player characters in the game now, and where they are."""
    from world_adapter.facts import CharacterSummary

    async with _world(ctx, seconds) as world:
        found = await world.ask(world.client.online_players())
    if as_json:
        print_json(_encode(found, list[CharacterSummary]))
        return
    rows = [(c.id, c.name, c.location_name, c.location_id) for c in found]
    table("Online players", ["Id", "Name", "Room", "Room id"], rows, wide={"Name", "Room"})


@app.command("snapshot")
@run_async
async def snapshot(
    ctx: typer.Context,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Write the snapshot to this file (default: standard output)."),
    ] = None,
    zone: Annotated[
        list[int] | None, typer.Option("--zone", help="Only this zone's rooms (repeatable).")
    ] = None,
    item: Annotated[
        list[int] | None, typer.Option("--item", help="Also record this item (repeatable).")
    ] = None,
    seconds: Timeout = 5.0,
) -> None:
    """The world as its read queries see it now, as JSON: rooms, exits, characters, progs.

    A scenario runs over the file with `world = "FILE"`. Exits are found by asking for a path
    between every two rooms, so limit a large game to some zones with --zone.
    """
    from storyteller_daemon.clock import SystemClock
    from world_adapter.snapshot import SnapshotError, dump_snapshot, take_snapshot, write_snapshot

    async with _world(ctx, seconds) as world:
        try:
            taken = await world.ask(
                take_snapshot(
                    world.client,
                    game=world.identity,
                    taken_at=SystemClock().now(),
                    zones=zone or None,
                    items=item or (),
                )
            )
        except SnapshotError as exc:
            raise NotFoundError(f"{world.where}: {exc}") from None
    if out is None:
        sys.stdout.write(dump_snapshot(taken))
        return
    try:
        write_snapshot(taken, out)
    except OSError as exc:
        raise ValidationError(f"cannot write {out}: {exc.strerror or exc}") from None
    console.print(
        f"{out}: {len(taken.rooms)} rooms, {len(taken.exits)} exits, "
        f"{len(taken.characters)} characters, {len(taken.progs)} progs of {world.identity}",
        markup=False,
    )
