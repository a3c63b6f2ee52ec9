"""`SimWorld`: the harbour town as an in-process `WorldClient`, with scripted background life."""

from __future__ import annotations

import asyncio
import random
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from progs.types import ProgSignature
from world_adapter.errors import WorldCommandError
from world_adapter.events import Cursor, WorldEvent
from world_adapter.facts import (
    CharacterInfo,
    CharacterSummary,
    EntityInfo,
    EntityKind,
    ProgOutcome,
    RoomInfo,
)
from world_adapter.protocol import WorldClient
from world_adapter.sim.activity import ScriptedActivity
from world_adapter.sim.arguments import bind_arguments
from world_adapter.sim.belongings import Belongings
from world_adapter.sim.framework import Framework
from world_adapter.sim.harbour_framework import HARBOUR_BELONGINGS, HARBOUR_FRAMEWORK
from world_adapter.sim.harbour_map import HARBOUR_TOWN_MAP
from world_adapter.sim.harbour_people import HARBOUR_TOWN_PEOPLE
from world_adapter.sim.harbour_time import HARBOUR_TIMEKEEPING
from world_adapter.sim.map import TownMap
from world_adapter.sim.people import CharacterSheet
from world_adapter.sim.progs import HARBOUR_TOWN_PROGS, SimProg
from world_adapter.sim.queries import KnowingTown
from world_adapter.sim.subscription import Subscription
from world_adapter.sim.timekeeping import Timekeeping


class SimWorld(KnowingTown, WorldClient):
    """A small world that lives inside the daemon's process.

    Tests and the demo drive it with `emote`, `say`, `move`, `commit_crime`, `set_door`,
    `set_plans`... or let `run_activity` animate it; the daemon reads it through the
    `WorldClient` methods (landmarks, paths, plans and time come from `KnowingTown`).

    Args:
        town_map: The geography.
        people: Every character.
        progs: The prog catalogue.
        timekeeping: Calendars, clocks and each zone's reckoning (None: no calendars).
        framework: Races, clans, currencies... that prog arguments name (None: none).
        belongings: Items, outfits and effects (None: none).
        seed: Seed of the scripted activity's random generator.
        epoch: Epoch of the event cursors.
        clock: Returns the current timezone-aware time (default: UTC now).
        buffer_size: How many of the newest events stay available for replay.
        remembered_prog_calls: How many idempotency keys (with their outcomes) are kept.

    Raises:
        ValueError: If the data is inconsistent (see `KnowingTown`), prog ids or names repeat,
            or `remembered_prog_calls` is below one.
    """

    def __init__(
        self,
        town_map: TownMap,
        people: Iterable[CharacterSheet],
        progs: Iterable[SimProg],
        *,
        timekeeping: Timekeeping | None = None,
        framework: Framework | None = None,
        belongings: Belongings | None = None,
        seed: int = 7,
        epoch: str = "sim-1",
        clock: Callable[[], datetime] | None = None,
        buffer_size: int = 10_000,
        remembered_prog_calls: int = 1_000,
    ) -> None:
        super().__init__(
            town_map,
            people,
            timekeeping=timekeeping,
            framework=framework,
            belongings=belongings,
            epoch=epoch,
            clock=clock,
            buffer_size=buffer_size,
        )
        self._progs = tuple(progs)
        for kind, values in (
            ("id", [p.signature.id for p in self._progs]),
            ("name", [p.signature.name.lower() for p in self._progs]),
        ):
            if len(set(values)) != len(values):
                raise ValueError(f"Prog {kind}s must be unique.")
        if remembered_prog_calls < 1:
            raise ValueError(
                f"remembered_prog_calls must be at least 1, not {remembered_prog_calls}."
            )
        self._outcomes: OrderedDict[str, ProgOutcome] = OrderedDict()
        self._remembered = remembered_prog_calls
        self._activity = ScriptedActivity(self, random.Random(seed))

    @classmethod
    def harbour_town(
        cls,
        *,
        seed: int = 7,
        epoch: str = "sim-1",
        clock: Callable[[], datetime] | None = None,
        buffer_size: int = 10_000,
    ) -> SimWorld:
        """The harbour town with its people, progs, calendars and belongings; no events yet."""
        return cls(
            HARBOUR_TOWN_MAP,
            HARBOUR_TOWN_PEOPLE,
            HARBOUR_TOWN_PROGS,
            timekeeping=HARBOUR_TIMEKEEPING,
            framework=HARBOUR_FRAMEWORK,
            belongings=HARBOUR_BELONGINGS,
            seed=seed,
            epoch=epoch,
            clock=clock,
            buffer_size=buffer_size,
        )

    # ------------------------------------------------------------------ WorldClient

    def subscribe(self, cells: frozenset[int], after: Cursor | None) -> Subscription:
        """Events in `cells` after `after`, oldest first, then new ones as they happen.

        With `after` None the subscription starts at the newest event at the time of this
        call. The cursor is checked when iteration starts: one from another epoch, ahead of
        the newest event, or older than the replay buffer raises CursorExpired.
        """
        return Subscription(self._log, cells, after)

    @property
    def waiting_subscriptions(self) -> int:
        """How many subscriptions are currently waiting for a new event."""
        return self._log.waiting

    async def zones(self) -> dict[int, frozenset[int]]:
        """Zone id → the rooms currently in it."""
        return self.zone_cells()

    async def online_players(self) -> list[CharacterSummary]:
        """Online player characters, by id."""
        return [
            self.character_summary(sheet.id)
            for sheet in self.all_sheets()
            if sheet.is_player and self.status(sheet.id).online
        ]

    async def character(self, character_id: int) -> CharacterInfo | None:
        """Any character, online or not, player or NPC; None for an unknown id."""
        try:
            sheet = self.sheet(character_id)
        except WorldCommandError:
            return None
        location_id = self.status(character_id).location_id
        return CharacterInfo(
            id=sheet.id,
            name=sheet.name,
            gender=sheet.gender,
            race=sheet.race,
            ethnicity=sheet.ethnicity,
            culture=sheet.culture,
            age=sheet.age,
            age_category=sheet.age_category,
            birthday=sheet.birthday,
            short_description=sheet.short_description,
            full_description=sheet.full_description,
            location_id=location_id,
            location_name=self.room_of(location_id).name,
            is_player=sheet.is_player,
        )

    async def room(self, room_id: int) -> RoomInfo | None:
        """A room with its current zone and online occupants; None for an unknown id."""
        try:
            room = self.room_of(room_id)
        except WorldCommandError:
            return None
        return RoomInfo(
            id=room.id,
            name=room.name,
            zone_id=self.zone_id_of(room.id),
            description=room.description,
            occupant_ids=tuple(self.occupants(room.id)),
        )

    async def entity(self, kind: EntityKind, entity_id: int) -> EntityInfo | None:
        """The character, room, item or exit with this id; None for an unknown id."""
        name: str | None = None
        match kind:
            case EntityKind.CHARACTER:
                name = next((c.name for c in self.all_sheets() if c.id == entity_id), None)
            case EntityKind.LOCATION:
                name = next((r.name for r in self.town_map.rooms if r.id == entity_id), None)
            case EntityKind.ITEM if entity_id in self.belongings.items:
                name = self.belongings.items[entity_id].name
            case EntityKind.EXIT if entity_id in self.town_map.passages:
                name = self.town_map.passages[entity_id].name
        return None if name is None else EntityInfo(kind, entity_id, name)

    async def progs(self) -> list[ProgSignature]:
        """The prog catalogue."""
        return [p.signature for p in self._progs]

    async def execute_prog(
        self, prog: str, arguments: Mapping[str, Any], idempotency_key: str
    ) -> ProgOutcome:
        """Run a prog by id or case-insensitive name with arguments by parameter name.

        A key seen before returns the stored outcome with ``replayed=True`` and runs nothing;
        failed runs are not stored, so the same key may be retried.

        Raises:
            WorldCommandError: If the key is blank, the prog is unknown or does not compile,
                or the arguments do not fit its parameters.
        """
        if not idempotency_key.strip():
            raise WorldCommandError("The idempotency key must not be blank.")
        stored = self._outcomes.get(idempotency_key)
        if stored is not None:
            self._outcomes.move_to_end(idempotency_key)
            return replace(stored, replayed=True)
        sim_prog = next((p for p in self._progs if p.signature.matches(prog)), None)
        if sim_prog is None:
            raise WorldCommandError(f"No prog with id or name '{prog}' exists.")
        signature = sim_prog.signature
        if sim_prog.body is None:
            raise WorldCommandError(
                f"Prog {signature.name} does not compile: {signature.compile_error}"
            )
        bound = bind_arguments(self, signature, arguments)
        outcome = ProgOutcome(
            prog=signature.name,
            return_type=signature.return_type.describe(),
            value=sim_prog.body(self, bound),
        )
        self._outcomes[idempotency_key] = outcome
        if len(self._outcomes) > self._remembered:
            self._outcomes.popitem(last=False)
        return outcome

    def replay(self, event: WorldEvent) -> WorldEvent:
        """Append an event from a recorded stream, given this world's next cursor; return it.

        Benchmarks play labelled streams into the world this way; the event's room should be
        one of this world's rooms, since queries about it are answered from the map.
        """
        stamped = replace(event, cursor=self._log.next_cursor())
        self._record(stamped)
        return stamped

    # ------------------------------------------------------------------ scripted activity

    def step(self) -> WorldEvent | None:
        """One step of scripted background activity; returns its main event, if any."""
        return self._activity.step()

    async def run_activity(
        self,
        interval_seconds: float,
        *,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        steps: int | None = None,
    ) -> None:
        """Wait `interval_seconds`, take a step, and repeat (forever when `steps` is None).

        Raises:
            ValueError: If the interval is not positive or `steps` is negative.
        """
        if interval_seconds <= 0:
            raise ValueError(f"The activity interval must be positive, not {interval_seconds}.")
        if steps is not None and steps < 0:
            raise ValueError(f"The number of activity steps must not be negative, not {steps}.")
        taken = 0
        while steps is None or taken < steps:
            await sleep(interval_seconds)
            self.step()
            taken += 1
