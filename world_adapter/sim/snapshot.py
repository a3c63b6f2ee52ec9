"""A sim world built from a snapshot file (`world_adapter.snapshot`), for tests and evals.

`load_snapshot` turns what a game answered into a `SnapshotWorld`: the sim world's machinery
(events, moves, speech, crimes, paths, plans, the bridge's `WorldServer`) over the snapshot's
rooms, exits, characters and progs. What a snapshot cannot hold is said here:

* zones are named ``Zone N`` (the protocol gives their ids only) and have no legal authority;
* exits join rooms both ways in the sim: an exit whose way back the snapshot did not record is
  left out, and so is a second exit with the same direction out of one room; each door found is
  its own door, named ``a door``;
* the characters are those who were in the game (in a room or online); each starts where it was;
* a prog's body is the game's and is not in the snapshot: running a prog checks its arguments
  against its signature as the sim does, records the call in `SnapshotWorld.prog_calls` and
  answers a plain value of its return type (true, 0, an empty dictionary or collection, or a
  text saying the prog ran in a snapshot); a prog that did not compile still does not;
* each room's date and time stay as they were read; calendars answer as they were read;
* items are those the snapshot named, known by id and name only.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from progs.types import ProgSignature, ProgType
from world_adapter.errors import WorldCommandError
from world_adapter.facts import (
    CalendarInfo,
    DateTimeReading,
    EntityInfo,
    EntityKind,
)
from world_adapter.sim.map import BRIEF_DIRECTIONS, Door, Exit, Landmark, Room, TownMap, Zone
from world_adapter.sim.people import CharacterSheet, PlanSheet
from world_adapter.sim.progs import ProgBody, SimProg
from world_adapter.sim.queries import KnowingTown
from world_adapter.sim.world import SimWorld
from world_adapter.snapshot import SnapshotError, SnapshotExit, WorldSnapshot, read_snapshot

_COMMANDS = {brief: direction for direction, brief in BRIEF_DIRECTIONS.items()}


@dataclass(frozen=True)
class ProgCall:
    """A prog the daemon ran in a snapshot world, with its arguments as given."""

    prog: str
    arguments: Mapping[str, Any]


class SnapshotWorld(SimWorld):
    """A `SimWorld` over a snapshot: times, calendars and items answer as they were read."""

    def __init__(
        self,
        snapshot: WorldSnapshot,
        *,
        epoch: str = "snapshot-1",
        clock: Callable[[], datetime] | None = None,
        buffer_size: int = 10_000,
    ) -> None:
        self.prog_calls: list[ProgCall] = []
        try:
            super().__init__(
                _town_map(snapshot),
                _people(snapshot),
                [_prog(signature, self.prog_calls) for signature in snapshot.progs],
                epoch=epoch,
                clock=clock,
                buffer_size=buffer_size,
            )
        except ValueError as exc:
            raise SnapshotError(f"the snapshot does not make a world: {exc}") from None
        self.snapshot = snapshot
        self._items = {item.id: item for item in snapshot.items}

    async def entity(self, kind: EntityKind, entity_id: int) -> EntityInfo | None:
        """Characters, rooms and exits as the sim knows them; items as the snapshot named."""
        if kind is EntityKind.ITEM:
            return self._items.get(entity_id)
        return await super().entity(kind, entity_id)

    async def room_times(
        self, room_ids: Collection[int] | None = None
    ) -> dict[int, tuple[DateTimeReading, ...]]:
        """Each room's readings as the snapshot took them (unknown rooms are left out)."""
        known = [r.id for r in self.town_map.rooms]
        asked = None if room_ids is None else set(room_ids)
        wanted = known if asked is None else [r for r in known if r in asked]
        return {r: self.snapshot.room_times.get(r, ()) for r in wanted}

    async def calendar(self, ref: str, year: int | None = None) -> CalendarInfo | None:
        """A recorded calendar by id, name, short name or alias (case-insensitively).

        Raises:
            WorldCommandError: `year` is not the year the snapshot laid out (if any).
        """
        wanted = ref.strip().casefold()
        for info in self.snapshot.calendars:
            names = {str(info.id), info.name.casefold(), info.short_name.casefold()}
            if wanted in names | {info.alias.casefold()}:
                if year is None:
                    return info
                if info.year is not None and info.year.year == year:
                    return info
                raise WorldCommandError(
                    f"The snapshot did not lay out year {year} of calendar {info.name}."
                )
        return None


def load_snapshot(
    path: str | Path,
    clock: Callable[[], datetime] | None = None,
    epoch: str = "snapshot-1",
    *,
    buffer_size: int = 10_000,
) -> SnapshotWorld:
    """The world the snapshot in `path` describes, on `clock` (default: UTC now), its event
    cursors of `epoch`.

    Raises:
        SnapshotError: The file cannot be read or does not describe a world (one line naming
            the file and the problem).
    """
    path = Path(path)
    snapshot = read_snapshot(path)
    try:
        return SnapshotWorld(snapshot, epoch=epoch, clock=clock, buffer_size=buffer_size)
    except SnapshotError as exc:
        raise SnapshotError(f"{path}: {exc}") from None


def _town_map(snapshot: WorldSnapshot) -> TownMap:
    zone_of = {room: zone for zone, rooms in snapshot.zones.items() for room in rooms}
    marks: dict[int, list[Landmark]] = {}
    for mark in snapshot.landmarks:
        marks.setdefault(mark.room_id, []).append(Landmark(mark.name, mark.descriptions))
    exits = _paired_exits(snapshot.exits, {r.id for r in snapshot.rooms})
    rooms = tuple(
        Room(
            info.id,
            info.name,
            zone_of.get(info.id, info.zone_id if info.zone_id is not None else 0),
            info.description,
            exits=tuple(exits.get(info.id, ())),
            landmarks=tuple(marks.get(info.id, ())),
        )
        for info in snapshot.rooms
    )
    zone_ids = sorted({room.zone_id for room in rooms} | set(snapshot.zones))
    return TownMap(zones=tuple(Zone(z, f"Zone {z}", "") for z in zone_ids), rooms=rooms)


def _paired_exits(seen: tuple[SnapshotExit, ...], rooms: set[int]) -> dict[int, list[Exit]]:
    """Exits by room: each recorded exit whose way back was recorded too, ids given in pairs."""
    by_pair = {(e.origin, e.destination): e for e in seen}
    out: dict[int, list[Exit]] = {}
    next_id = 1
    for (origin, destination), there in sorted(by_pair.items()):
        back = by_pair.get((destination, origin))
        if origin > destination or back is None or not {origin, destination} <= rooms:
            continue
        commands = (_command(there.direction), _command(back.direction))
        if commands[0] in _used(out, origin) or commands[1] in _used(out, destination):
            continue
        door = None
        if there.closed or back.closed:
            door = Door(
                next_id,
                "a door",
                closed=True,
                locked=there.locked and back.locked,
                fireable=there.fireable and back.fireable,
            )
        out.setdefault(origin, []).append(Exit(commands[0], destination, door, id=next_id))
        out.setdefault(destination, []).append(Exit(commands[1], origin, door, id=next_id))
        next_id += 1
    return out


def _used(exits: dict[int, list[Exit]], room: int) -> set[str]:
    return {e.command for e in exits.get(room, ())}


def _command(direction: str) -> str:
    return _COMMANDS.get(direction, direction)


def _people(snapshot: WorldSnapshot) -> list[CharacterSheet]:
    plans = {p.character_id: p for p in snapshot.plans}
    sheets = []
    for info in snapshot.characters:
        if info.location_id is None:
            continue
        plan = plans.get(info.id)
        sheet_plan = None
        if plan is not None and ((plan.short_term or "").strip() or (plan.long_term or "").strip()):
            ago = plan.updated_ago if plan.updated_ago is not None else timedelta(0)
            sheet_plan = PlanSheet(plan.short_term or "", plan.long_term or "", ago)
        sheets.append(
            CharacterSheet(
                id=info.id,
                name=info.name,
                gender=info.gender,
                race=info.race,
                ethnicity=info.ethnicity,
                culture=info.culture,
                age=info.age,
                age_category=info.age_category,
                birthday=info.birthday,
                short_description=info.short_description,
                full_description=info.full_description,
                is_player=info.is_player,
                start_room_id=info.location_id,
                plans=sheet_plan,
            )
        )
    return sheets


def _prog(signature: ProgSignature, calls: list[ProgCall]) -> SimProg:
    if signature.compile_error:
        return SimProg(signature, None)
    return SimProg(signature, _recording_body(signature, calls))


def _recording_body(signature: ProgSignature, calls: list[ProgCall]) -> ProgBody:
    def body(town: KnowingTown, arguments: Mapping[str, Any]) -> Any:
        calls.append(ProgCall(signature.name, {k: _plain(v) for k, v in arguments.items()}))
        returns = signature.return_type
        if returns.collection:
            return []
        match returns.element:
            case ProgType.BOOLEAN:
                return True
            case ProgType.NUMBER:
                return 0
            case ProgType.DICTIONARY:
                return {}
            case ProgType.TEXT:
                return f"{signature.name} ran in a world snapshot; the game's prog did not run."
            case _:
                return None

    return body


def _plain(value: Any) -> Any:
    """A resolved argument as the caller named it: an object's id, a value as it is."""
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return getattr(value, "id", value)
