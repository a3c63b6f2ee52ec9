"""A world written down: what a game's read queries answer, kept in one JSON file.

`take_snapshot` asks a `WorldClient` everything its read queries can tell: the zones and their
rooms (names, descriptions, who is in them), the exits between them (found by asking for a path
of one exit between every two rooms, and what kind of door it passes through by asking again
with stricter door rules), the characters in those rooms with their descriptions and plans (a
character elsewhere has no room to stand in), the landmarks, the prog catalogue, each room's
date and time and the calendars they are read by, and the items the caller names by id (no
query lists a world's items). Nothing is sent that changes the world.

`read_snapshot` and `write_snapshot` keep it as JSON; `world_adapter.sim.snapshot` builds an
in-process world from it. A snapshot asks ``rooms × rooms`` path queries: limit it to some zones
for a large game.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from progs.types import ProgSignature
from world_adapter.codec import CodecError, decode, encode
from world_adapter.facts import (
    CalendarInfo,
    CharacterInfo,
    CharacterPlan,
    DateTimeReading,
    DoorRule,
    EntityInfo,
    EntityKind,
    LandmarkInfo,
    PathRule,
    RoomInfo,
)
from world_adapter.protocol import WorldClient

SNAPSHOT_FORMAT = 1
"""The version of the file's layout; a file of another version is refused."""


class SnapshotError(ValueError):
    """A snapshot cannot be taken, read or built into a world; the message is one line."""


@dataclass(frozen=True)
class SnapshotExit:
    """A way from one room to a neighbouring one, as a path of one exit shows it.

    Attributes:
        direction: The path's movement token (``n``, ``enter door``).
        closed: A door on the way is closed (a path that respects closed doors avoids it).
        locked: The closed door is locked.
        fireable: The locked door can be shot through (a grille, bars).
    """

    origin: int
    destination: int
    direction: str
    closed: bool = False
    locked: bool = False
    fireable: bool = False


@dataclass(frozen=True)
class WorldSnapshot:
    """Everything the snapshot recorded (see the module docstring)."""

    game: str
    taken_at: datetime
    zones: dict[int, tuple[int, ...]]
    rooms: tuple[RoomInfo, ...]
    exits: tuple[SnapshotExit, ...] = ()
    characters: tuple[CharacterInfo, ...] = ()
    plans: tuple[CharacterPlan, ...] = ()
    online_players: tuple[int, ...] = ()
    landmarks: tuple[LandmarkInfo, ...] = ()
    progs: tuple[ProgSignature, ...] = ()
    room_times: dict[int, tuple[DateTimeReading, ...]] = field(default_factory=dict)
    calendars: tuple[CalendarInfo, ...] = ()
    items: tuple[EntityInfo, ...] = ()
    format: int = SNAPSHOT_FORMAT


async def take_snapshot(
    client: WorldClient,
    *,
    game: str,
    taken_at: datetime,
    zones: Collection[int] | None = None,
    items: Iterable[int] = (),
) -> WorldSnapshot:
    """What `client` answers about its world now.

    Args:
        game: The world's identity (``sim``, or the game's name).
        taken_at: When the snapshot is taken (the caller's clock).
        zones: Only these zones' rooms (None: every zone).
        items: Ids of items to record (the protocol lists no items).

    Raises:
        SnapshotError: A zone or an item named does not exist.
        WorldAdapterError: The world stops answering.
    """
    every_zone = await client.zones()
    wanted = sorted(every_zone) if zones is None else sorted(set(zones))
    missing = [z for z in wanted if z not in every_zone]
    if missing:
        known = ", ".join(str(z) for z in sorted(every_zone)) or "none"
        raise SnapshotError(f"the world has no zone {missing[0]} (zones: {known})")
    cells = {z: tuple(sorted(every_zone[z])) for z in wanted}
    room_ids = sorted({r for rooms in cells.values() for r in rooms})
    rooms = [room for r in room_ids if (room := await client.room(r)) is not None]
    exits = await _exits(client, [r.id for r in rooms])
    online = sorted(c.id for c in await client.online_players() if c.location_id in room_ids)
    landmarks = [
        found
        for mark in await client.landmarks()
        if mark.room_id in room_ids and (found := await client.landmark(mark.name)) is not None
    ]
    present = {i for room in rooms for i in room.occupant_ids} | set(online)
    characters = [c for i in sorted(present) if (c := await client.character(i)) is not None]
    plans = [p for c in characters if (p := await client.character_plan(c.id)) is not None]
    times = await client.room_times(room_ids)
    calendars = await _calendars(client, times)
    found_items = []
    for item_id in sorted(set(items)):
        item = await client.entity(EntityKind.ITEM, item_id)
        if item is None:
            raise SnapshotError(f"the world has no item {item_id}")
        found_items.append(item)
    return WorldSnapshot(
        game=game,
        taken_at=taken_at,
        zones=cells,
        rooms=tuple(rooms),
        exits=tuple(exits),
        characters=tuple(characters),
        plans=tuple(plans),
        online_players=tuple(online),
        landmarks=tuple(landmarks),
        progs=tuple(sorted(await client.progs(), key=lambda p: p.id)),
        room_times=times,
        calendars=tuple(calendars),
        items=tuple(found_items),
    )


async def _exits(client: WorldClient, room_ids: list[int]) -> list[SnapshotExit]:
    found = []
    for origin in room_ids:
        for destination in room_ids:
            if origin == destination:
                continue
            way = await client.path(origin, destination, PathRule(DoorRule.IGNORE), max_exits=1)
            if not way.found or len(way.directions) != 1:
                continue
            passes = {}
            for rule in (DoorRule.RESPECT_CLOSED, DoorRule.INCLUDE_UNLOCKED):
                strict = await client.path(origin, destination, PathRule(rule), max_exits=1)
                passes[rule] = strict.found
            closed = not passes[DoorRule.RESPECT_CLOSED]
            locked = closed and not passes[DoorRule.INCLUDE_UNLOCKED]
            fireable = False
            if locked:
                shot = await client.path(
                    origin, destination, PathRule(DoorRule.INCLUDE_FIREABLE), max_exits=1
                )
                fireable = shot.found
            found.append(
                SnapshotExit(origin, destination, way.directions[0], closed, locked, fireable)
            )
    return found


async def _calendars(
    client: WorldClient, times: dict[int, tuple[DateTimeReading, ...]]
) -> list[CalendarInfo]:
    ids = sorted({reading.calendar_id for readings in times.values() for reading in readings})
    return [c for i in ids if (c := await client.calendar(str(i))) is not None]


def dump_snapshot(snapshot: WorldSnapshot) -> str:
    """`snapshot` as indented JSON, ending in a newline."""
    return json.dumps(encode(snapshot, WorldSnapshot), indent=2, ensure_ascii=False) + "\n"


def write_snapshot(snapshot: WorldSnapshot, path: Path) -> None:
    """Write `snapshot` to `path` as indented JSON."""
    path.write_text(dump_snapshot(snapshot), encoding="utf-8")


def read_snapshot(path: Path) -> WorldSnapshot:
    """The snapshot in `path`.

    Raises:
        SnapshotError: The file cannot be read, is not JSON, is of another format version or
            does not have a snapshot's shape (the message names the file and the place).
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SnapshotError(f"{path}: cannot read the snapshot: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{path}: not a JSON world snapshot: {exc}") from None
    if not isinstance(data, dict):
        raise SnapshotError(f"{path}: not a JSON world snapshot: expected an object")
    version = data.get("format")
    if version != SNAPSHOT_FORMAT:
        raise SnapshotError(
            f"{path}: format: {version!r} is not a snapshot format this version reads "
            f"({SNAPSHOT_FORMAT})"
        )
    try:
        snapshot: WorldSnapshot = decode(data, WorldSnapshot, strict=True)
    except CodecError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
    return snapshot
