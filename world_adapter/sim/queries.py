"""The sim town's knowledge beyond who is where: landmarks, doors and paths, plans, timekeeping,
and the framework objects, items, outfits and effects that progs take as arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from progs.types import ProgType
from world_adapter.errors import WorldCommandError
from world_adapter.facts import (
    MAX_PATH_EXITS,
    CalendarInfo,
    CharacterPlan,
    CharacterSummary,
    DateTimeReading,
    LandmarkInfo,
    LandmarkSummary,
    PathRule,
    RoomPath,
)
from world_adapter.sim.actions import Town
from world_adapter.sim.belongings import Belongings
from world_adapter.sim.framework import Framework
from world_adapter.sim.map import Exit, TownMap
from world_adapter.sim.pathing import DoorState, DoorStates, find_path
from world_adapter.sim.people import CharacterSheet
from world_adapter.sim.timekeeping import Timekeeping


@dataclass(frozen=True)
class _Plans:
    short_term: str | None
    long_term: str | None
    updated_at: datetime | None


class KnowingTown(Town):
    """A town that can answer the storyteller's questions about its places, people and time.

    Args:
        town_map: The geography.
        people: Every character.
        timekeeping: Calendars, clocks and each zone's reckoning (None: no room has a calendar).
        framework: Races, clans, currencies... (None: none).
        belongings: Items, outfits and effects (None: none).
        epoch: Epoch of the event cursors.
        clock: Returns the current timezone-aware time; plan ages and game time follow it.
        buffer_size: How many of the newest events stay available for replay.

    Raises:
        ValueError: If the data is inconsistent (see `TownState`), or timekeeping, items,
            outfits or effects refer to zones, rooms, characters, doors or shards that do not
            exist.
    """

    def __init__(
        self,
        town_map: TownMap,
        people: Iterable[CharacterSheet],
        *,
        timekeeping: Timekeeping | None = None,
        framework: Framework | None = None,
        belongings: Belongings | None = None,
        epoch: str,
        clock: Callable[[], datetime] | None = None,
        buffer_size: int = 10_000,
    ) -> None:
        super().__init__(town_map, people, epoch=epoch, clock=clock, buffer_size=buffer_size)
        self.timekeeping = timekeeping
        self.framework = framework or Framework()
        self.belongings = belongings or Belongings()
        self._doors = DoorStates(town_map)
        self._check_references()
        self._plans: dict[int, _Plans] = {}
        self._started_at: datetime | None = None

    def now(self) -> datetime:
        """The current time; the first reading is taken as the moment the world started.

        Starting plans (`CharacterSheet.plans`) are dated from that moment, so building a world
        does not read its clock.
        """
        moment = super().now()
        if self._started_at is None:
            self._started_at = moment
            for sheet in self.all_sheets():
                if sheet.plans is not None and sheet.id not in self._plans:
                    self._plans[sheet.id] = _Plans(
                        sheet.plans.short_term.strip() or None,
                        sheet.plans.long_term.strip() or None,
                        moment - sheet.plans.age_at_start,
                    )
        return moment

    def _check_references(self) -> None:
        owners = {
            "character": {s.id for s in self.all_sheets()},
            "item": set(self.belongings.items),
            "cell": {r.id for r in self.town_map.rooms},
            "zone": {z.id for z in self.town_map.zones},
            "shard": {s.id for s in self.framework.entries(ProgType.SHARD)},
        }
        doors = {e.door.id for r in self.town_map.rooms for e in r.exits if e.door is not None}
        reckoned = self.timekeeping.zone_ids if self.timekeeping else frozenset()
        missing = [f"zone {z}" for z in sorted(reckoned - owners["zone"])]
        for item in self.belongings.items.values():
            if item.holder_id is not None and item.holder_id not in owners["character"]:
                missing.append(f"character {item.holder_id}")
            if item.room_id is not None and item.room_id not in owners["cell"]:
                missing.append(f"room {item.room_id}")
            missing.extend(f"door {d}" for d in sorted(item.opens - doors))
        missing.extend(
            f"character {o.owner_id}"
            for o in self.belongings.outfits
            if o.owner_id not in owners["character"]
        )
        missing.extend(
            f"{e.owner_type} {e.owner_id}"
            for e in self.belongings.effects
            if e.owner_id not in owners[e.owner_type]
        )
        if missing:
            raise ValueError(f"The world's data refers to {', '.join(missing)}, not in the world.")

    # ------------------------------------------------------------------ landmarks

    def character_summary(self, character_id: int) -> CharacterSummary:
        """A character as lists of characters show it (raises like `sheet`)."""
        sheet = self.sheet(character_id)
        location_id = self.status(character_id).location_id
        return CharacterSummary(
            id=sheet.id,
            name=sheet.name,
            gender=sheet.gender,
            short_description=sheet.short_description,
            location_id=location_id,
            location_name=self.room_of(location_id).name,
            is_player=sheet.is_player,
        )

    async def landmarks(self) -> list[LandmarkSummary]:
        """Every landmark, in map order."""
        return [
            LandmarkSummary(lm.name, room.id, room.name) for room, lm in self.town_map.landmarks
        ]

    async def landmark(self, name: str) -> LandmarkInfo | None:
        """A landmark by case-insensitive name, with the online characters in its room."""
        wanted = name.strip().casefold()
        for room, landmark in self.town_map.landmarks:
            if landmark.name.casefold() == wanted:
                return LandmarkInfo(
                    name=landmark.name,
                    room_id=room.id,
                    room_name=room.name,
                    room_description=room.description,
                    descriptions=landmark.descriptions,
                    occupants=tuple(self.character_summary(i) for i in self.occupants(room.id)),
                )
        return None

    # ------------------------------------------------------------------ doors and paths

    def door_state(self, door_id: int) -> DoorState:
        """Whether a door is closed and locked now (raises `WorldCommandError` if unknown)."""
        return self._doors.state(door_id)

    def set_door(self, door_id: int, *, closed: bool, locked: bool = False) -> None:
        """Open, close, lock or unlock a door; nobody sees it happen and no event is recorded.

        Raises:
            WorldCommandError: If the door does not exist or would be locked while open.
        """
        self._doors.set(door_id, closed=closed, locked=locked)

    def can_cross(self, character_id: int) -> bool:
        """Whether a character could walk through an exit now: not unconscious, out or dead."""
        return self.status(character_id).state is None

    async def path(
        self,
        origin_room_id: int,
        destination_room_id: int,
        rule: PathRule,
        *,
        max_exits: int = MAX_PATH_EXITS,
    ) -> RoomPath:
        """The shortest path the rule allows, through doors as they are now.

        Raises:
            WorldCommandError: If a room or the rule's character does not exist, or
                `max_exits` is negative.
        """
        self.room_of(origin_room_id)
        self.room_of(destination_room_id)
        if max_exits < 0:
            raise WorldCommandError(f"max_exits must not be negative, not {max_exits}.")
        keys: frozenset[int] = frozenset()
        able = True
        if rule.character_id is not None:
            self.sheet(rule.character_id)
            keys = self.belongings.keys_of(rule.character_id)
            able = not rule.character_must_cross or self.can_cross(rule.character_id)

        def usable(exit_: Exit) -> bool:
            return able and self._doors.allows(exit_, rule.doors, keys)

        steps = find_path(
            self.town_map, origin_room_id, destination_room_id, usable, max_exits=max_exits
        )
        return RoomPath(origin_room_id, destination_room_id, steps or (), steps is not None)

    # ------------------------------------------------------------------ plans

    def set_plans(self, character_id: int, short_term: str | None, long_term: str | None) -> None:
        """Change a character's plans now (blank text clears a plan).

        Raises:
            WorldCommandError: If the character does not exist.
        """
        self.sheet(character_id)
        now = self.now()
        self._plans[character_id] = _Plans(
            (short_term or "").strip() or None, (long_term or "").strip() or None, now
        )

    async def character_plan(self, character_id: int) -> CharacterPlan | None:
        """Any character's plans and their age by the world's clock; None for an unknown id."""
        try:
            sheet = self.sheet(character_id)
        except WorldCommandError:
            return None
        now = self.now()
        plans = self._plans.get(character_id, _Plans(None, None, None))
        ago = None
        if plans.updated_at is not None:
            # A clock set back must not make plans younger than new.
            ago = max(timedelta(0), now - plans.updated_at)
        return CharacterPlan(
            sheet.id,
            sheet.name,
            sheet.short_description,
            plans.short_term,
            plans.long_term,
            ago,
            sheet.is_player,
        )

    async def recent_plans(self, within: timedelta) -> list[CharacterPlan]:
        """Online player characters whose plans changed within `within`, by id."""
        found = []
        for sheet in self.all_sheets():
            if not (sheet.is_player and self.status(sheet.id).online):
                continue
            plan = await self.character_plan(sheet.id)
            if plan is not None and plan.updated_ago is not None and plan.updated_ago <= within:
                found.append(plan)
        return found

    # ------------------------------------------------------------------ time

    async def room_times(
        self, room_ids: Collection[int] | None = None
    ) -> dict[int, tuple[DateTimeReading, ...]]:
        """Room id → its readings (its zone's calendars); unknown rooms are left out."""
        known = [r.id for r in self.town_map.rooms]
        wanted = known if room_ids is None else [r for r in known if r in set(room_ids)]
        now = self.now()
        return {
            room_id: (
                self.timekeeping.readings(self.zone_id_of(room_id), now) if self.timekeeping else ()
            )
            for room_id in wanted
        }

    async def calendar(self, ref: str, year: int | None = None) -> CalendarInfo | None:
        """A calendar by id, name, short name or alias, laid out for `year` if given.

        Raises:
            WorldCommandError: If `year` is out of the calendar's range.
        """
        found = self.timekeeping.find_calendar(ref) if self.timekeeping else None
        if found is None:
            return None
        try:
            return found.info(year)
        except ValueError as exc:
            raise WorldCommandError(str(exc)) from None
