"""World look-ups cached between the events that change them.

Every prompt names the room an event happened in and the characters it involves, and the
settings poll asks for zone membership every few seconds; over a bridge each of those is a
request to the game. `CachedWorld` keeps the answers to ``room``, ``character``, ``entity``
(the kind of thing a prog argument's id names) and ``zones``:

* answers are kept for a time to live on the injected monotonic clock (a missing room or
  character, for a shorter one), and at most `max_entries` of them (least recently used first);
* the event stream invalidates what it shows to have changed: a state change (a character fell
  unconscious or died) drops that character; an event whose zone disagrees with the cached zone
  membership of its room drops the zones;
* errors are never cached, and concurrent look-ups of one key share one request.

The bridge protocol carries no notice of renamed rooms or redescribed characters, so those are
seen once their time to live runs out. Everything else (`subscribe`, prog calls, players online,
landmarks, time) passes straight through.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from progs.types import ProgSignature
from storyteller_daemon.clock import Clock
from world_adapter.events import Cursor, StateChange, WorldEvent
from world_adapter.facts import (
    MAX_PATH_EXITS,
    CalendarInfo,
    CharacterInfo,
    CharacterPlan,
    CharacterSummary,
    DateTimeReading,
    EntityInfo,
    EntityKind,
    LandmarkInfo,
    LandmarkSummary,
    PathRule,
    ProgOutcome,
    RoomInfo,
    RoomPath,
)
from world_adapter.protocol import WorldClient

_ZONES = ("zones", 0)
"""The in-flight key of a zones request."""


@dataclass
class CacheStats:
    """What the cache saved, for metrics and benchmarks."""

    hits: int = 0
    misses: int = 0
    invalidations: int = 0
    evictions: int = 0


class CachedWorld:
    """A `WorldClient` that remembers rooms, characters and zones (see the module docstring).

    Args:
        inner: the world to ask.
        clock: the runtime clock, which entries age on.
        ttl_seconds: how long an answer is kept.
        missing_ttl_seconds: how long "no such room or character" is kept.
        zones_ttl_seconds: how long zone membership is kept.
        max_entries: rooms and characters kept at most.
    """

    def __init__(
        self,
        inner: WorldClient,
        clock: Clock,
        *,
        ttl_seconds: float = 300.0,
        missing_ttl_seconds: float = 30.0,
        zones_ttl_seconds: float = 60.0,
        max_entries: int = 4096,
    ) -> None:
        self.inner = inner
        self._now = clock.monotonic
        self._ttl = ttl_seconds
        self._missing_ttl = missing_ttl_seconds
        self._zones_ttl = zones_ttl_seconds
        self._max = max_entries
        self._entries: OrderedDict[tuple[str, int], tuple[float, Any]] = OrderedDict()
        self._zones: tuple[float, dict[int, frozenset[int]]] | None = None
        self._flights: dict[tuple[str, int], asyncio.Future[Any]] = {}
        self.stats = CacheStats()

    # ------------------------------------------------------------------ invalidation

    def observe(self, event: WorldEvent) -> None:
        """Drop what the event shows to have changed."""
        if isinstance(event, StateChange):
            self._drop(("character", event.character_id))
        if self._zones is not None and event.zone_id is not None:
            cells = self._zones[1].get(event.zone_id)
            if cells is None or event.cell_id not in cells:
                self._zones = None
                self._flights.pop(_ZONES, None)
                self.stats.invalidations += 1

    def invalidate_all(self) -> None:
        """Forget everything, including answers still on their way (they are not kept)."""
        self._entries.clear()
        self._zones = None
        self._flights.clear()
        self.stats.invalidations += 1

    def _drop(self, key: tuple[str, int]) -> None:
        # A request in flight may carry the answer from before the change: detach it, so its
        # answer reaches its callers but is not kept, and the next look-up asks again.
        in_flight = self._flights.pop(key, None) is not None
        if self._entries.pop(key, None) is not None or in_flight:
            self.stats.invalidations += 1

    # ------------------------------------------------------------------ cached look-ups

    async def room(self, room_id: int) -> RoomInfo | None:
        """The room, from the cache when fresh."""
        result: RoomInfo | None = await self._cached(("room", room_id), self.inner.room)
        return result

    async def character(self, character_id: int) -> CharacterInfo | None:
        """The character, from the cache when fresh."""
        result: CharacterInfo | None = await self._cached(
            ("character", character_id), self.inner.character
        )
        return result

    async def entity(self, kind: EntityKind, entity_id: int) -> EntityInfo | None:
        """The thing of this kind with this id, from the cache when fresh."""
        result: EntityInfo | None = await self._cached(
            (f"entity {kind.value}", entity_id), lambda i: self.inner.entity(kind, i)
        )
        return result

    async def zones(self) -> dict[int, frozenset[int]]:
        """Zone membership, from the cache when fresh."""
        if self._zones is not None and self._now() - self._zones[0] < self._zones_ttl:
            self.stats.hits += 1
            return dict(self._zones[1])
        zones: dict[int, frozenset[int]] = await self._shared(_ZONES, self.inner.zones)
        return dict(zones)

    async def _cached(self, key: tuple[str, int], fetch: Callable[[int], Awaitable[Any]]) -> Any:
        entry = self._entries.get(key)
        if entry is not None:
            at, value = entry
            if self._now() - at < (self._ttl if value is not None else self._missing_ttl):
                self._entries.move_to_end(key)
                self.stats.hits += 1
                return value
            del self._entries[key]
        return await self._shared(key, lambda: fetch(key[1]))

    async def _shared(self, key: tuple[str, int], fetch: Callable[[], Awaitable[Any]]) -> Any:
        """One request per key at a time; its answer is kept when it lands, whoever waits."""
        flight = self._flights.get(key)
        if flight is not None:  # someone is asking already: share the answer
            self.stats.hits += 1
            return await asyncio.shield(flight)
        self.stats.misses += 1
        flight = asyncio.ensure_future(fetch())
        self._flights[key] = flight
        flight.add_done_callback(lambda done: self._landed(key, done))
        return await asyncio.shield(flight)

    def _landed(self, key: tuple[str, int], flight: asyncio.Future[Any]) -> None:
        if self._flights.get(key) is not flight:
            # Invalidated while in flight: its answer may predate the change. Retrieve the
            # outcome so an error nobody awaits is not reported as never retrieved.
            if not flight.cancelled():
                flight.exception()
            return
        del self._flights[key]
        if flight.cancelled() or flight.exception() is not None:
            return  # errors are never kept
        if key == _ZONES:
            self._zones = (self._now(), dict(flight.result()))
            return
        self._entries[key] = (self._now(), flight.result())
        self._entries.move_to_end(key)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
            self.stats.evictions += 1

    # ------------------------------------------------------------------ passed through

    def subscribe(self, cells: frozenset[int], after: Cursor | None) -> AsyncIterator[WorldEvent]:
        """The inner world's stream."""
        return self.inner.subscribe(cells, after)

    async def online_players(self) -> list[CharacterSummary]:
        """Players online (never cached: it changes all the time)."""
        return await self.inner.online_players()

    async def progs(self) -> list[ProgSignature]:
        """The prog catalogue."""
        return await self.inner.progs()

    async def execute_prog(
        self, prog: str, arguments: Mapping[str, Any], idempotency_key: str
    ) -> ProgOutcome:
        """Run a prog."""
        return await self.inner.execute_prog(prog, arguments, idempotency_key)

    async def landmarks(self) -> list[LandmarkSummary]:
        """Every landmark."""
        return await self.inner.landmarks()

    async def landmark(self, name: str) -> LandmarkInfo | None:
        """One landmark."""
        return await self.inner.landmark(name)

    async def path(
        self,
        origin_room_id: int,
        destination_room_id: int,
        rule: PathRule,
        *,
        max_exits: int = MAX_PATH_EXITS,
    ) -> RoomPath:
        """A path between two rooms."""
        return await self.inner.path(origin_room_id, destination_room_id, rule, max_exits=max_exits)

    async def character_plan(self, character_id: int) -> CharacterPlan | None:
        """A character's plans."""
        return await self.inner.character_plan(character_id)

    async def recent_plans(self, within: timedelta) -> list[CharacterPlan]:
        """Recently changed plans."""
        return await self.inner.recent_plans(within)

    async def room_times(
        self, room_ids: Collection[int] | None = None
    ) -> dict[int, tuple[DateTimeReading, ...]]:
        """The date and time in rooms."""
        return await self.inner.room_times(room_ids)

    async def calendar(self, ref: str, year: int | None = None) -> CalendarInfo | None:
        """A calendar."""
        return await self.inner.calendar(ref, year)

    async def close(self) -> None:
        """Close the inner world's connections, if it has any."""
        close = getattr(self.inner, "close", None)
        if close is not None:
            await close()
