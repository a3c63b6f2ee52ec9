"""Cached world look-ups: time to live, least-recently-used bound, invalidation by events."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import pytest

from storyteller_daemon.runtime.lookup_cache import CachedWorld
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.world import InstrumentedWorld, WorldCall
from world_adapter.errors import WorldCommandError
from world_adapter.events import CharacterState, Cursor, RoomEcho, StateChange
from world_adapter.sim import SimWorld
from world_adapter.sim.harbour_map import HARBOUR_TOWN_MAP
from world_adapter.sim.harbour_people import HARBOUR_TOWN_PEOPLE
from world_adapter.sim.progs import HARBOUR_TOWN_PROGS

T0 = datetime(2026, 1, 1, tzinfo=UTC)
QUAY, MAREN = 101, 1001


Counting = InstrumentedWorld[SimWorld]


def counting() -> Counting:
    """The sim world, counting look-ups; `hold` makes them wait; `fail` makes them fail."""
    return InstrumentedWorld(SimWorld(HARBOUR_TOWN_MAP, HARBOUR_TOWN_PEOPLE, HARBOUR_TOWN_PROGS))


@pytest.fixture
def world() -> Counting:
    return counting()


def cached(world: Counting, clock: FakeClock, **options: Any) -> CachedWorld:
    return CachedWorld(world, clock, **options)


async def test_a_room_is_asked_for_once_within_its_time_to_live(world: Counting) -> None:
    clock = FakeClock(T0)
    lookups = cached(world, clock, ttl_seconds=60)
    first = await lookups.room(QUAY)
    assert first is not None and await lookups.room(QUAY) == first
    assert world.calls == [WorldCall("room", (QUAY,))]
    await clock.advance(61)
    await lookups.room(QUAY)
    assert world.calls == [WorldCall("room", (QUAY,))] * 2
    assert (lookups.stats.hits, lookups.stats.misses) == (1, 2)


async def test_a_missing_room_is_remembered_for_less_time(world: Counting) -> None:
    clock = FakeClock(T0)
    lookups = cached(world, clock, ttl_seconds=300, missing_ttl_seconds=10)
    assert await lookups.room(999) is None
    assert await lookups.room(999) is None
    await clock.advance(11)
    await lookups.room(999)
    assert world.calls == [WorldCall("room", (999,))] * 2


async def test_the_least_recently_used_entry_goes_first(world: Counting) -> None:
    lookups = cached(world, FakeClock(T0), max_entries=2)
    await lookups.room(101)
    await lookups.room(102)
    await lookups.room(101)  # 102 is now the least recently used
    await lookups.room(103)
    world.calls.clear()
    await lookups.room(101)
    await lookups.room(102)
    assert world.calls == [WorldCall("room", (102,))]
    assert lookups.stats.evictions == 2


async def test_a_state_change_forgets_that_character(world: Counting) -> None:
    lookups = cached(world, FakeClock(T0))
    await lookups.character(MAREN)
    fell = StateChange(
        cursor=Cursor("e", 1),
        cell_id=QUAY,
        zone_id=1,
        occurred_at=T0,
        character_id=MAREN,
        state=CharacterState.UNCONSCIOUS,
    )
    lookups.observe(fell)
    await lookups.character(MAREN)
    assert world.calls == [WorldCall("character", (MAREN,))] * 2


async def test_an_event_from_a_room_that_moved_zones_refreshes_the_zones(world: Counting) -> None:
    lookups = cached(world, FakeClock(T0), zones_ttl_seconds=600)
    zones = await lookups.zones()
    assert QUAY in zones[1]
    same = RoomEcho(cursor=Cursor("e", 1), cell_id=QUAY, zone_id=1, occurred_at=T0, text="x")
    lookups.observe(same)
    await lookups.zones()
    assert world.count("zones") == 1  # nothing moved: still cached
    moved = RoomEcho(cursor=Cursor("e", 2), cell_id=QUAY, zone_id=2, occurred_at=T0, text="x")
    lookups.observe(moved)
    await lookups.zones()
    assert world.count("zones") == 2


async def test_errors_are_not_cached(world: Counting) -> None:
    lookups = cached(world, FakeClock(T0))
    world.fail("room", WorldCommandError("the game did not answer"), times=1)
    with pytest.raises(WorldCommandError):
        await lookups.room(QUAY)
    assert await lookups.room(QUAY) is not None


async def test_concurrent_look_ups_share_one_request_and_survive_a_cancelled_caller(
    world: Counting,
) -> None:
    lookups = cached(world, FakeClock(T0))
    world.hold("room")
    first = asyncio.create_task(lookups.room(QUAY))
    second = asyncio.create_task(lookups.room(QUAY))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    world.release("room")
    assert (await second) is not None
    assert world.calls == [WorldCall("room", (QUAY,))]
    await asyncio.gather(first, return_exceptions=True)


async def test_everything_else_passes_through(world: Counting) -> None:
    lookups = cached(world, FakeClock(T0))
    assert await lookups.progs() == await world.progs()
    assert await lookups.landmarks() == await world.landmarks()
    assert await lookups.online_players() == await world.online_players()


def fell(character_id: int = MAREN) -> StateChange:
    return StateChange(
        cursor=Cursor("e", 9),
        cell_id=QUAY,
        zone_id=1,
        occurred_at=T0,
        character_id=character_id,
        state=CharacterState.DEAD,
    )


async def test_a_change_during_a_look_up_is_not_undone_by_its_older_answer(
    world: Counting,
) -> None:
    lookups = cached(world, FakeClock(T0))
    world.hold("room")
    asking = asyncio.create_task(lookups.room(QUAY))
    await asyncio.sleep(0)
    lookups.invalidate_all()  # the answer on its way predates this
    world.release("room")
    assert await asking is not None  # the caller still gets it...
    await lookups.room(QUAY)
    assert world.calls == [WorldCall("room", (QUAY,))] * 2  # ...but it was not kept


async def test_a_state_change_during_a_character_look_up_wins() -> None:
    world = counting()
    lookups = cached(world, FakeClock(T0))
    world.hold("character")
    asking = asyncio.create_task(lookups.character(MAREN))
    await asyncio.sleep(0)
    lookups.observe(fell())
    world.release("character")
    await asking
    await lookups.character(MAREN)
    assert world.calls == [WorldCall("character", (MAREN,))] * 2


async def test_an_answer_is_kept_even_when_the_caller_that_asked_was_cancelled(
    world: Counting,
) -> None:
    lookups = cached(world, FakeClock(T0))
    world.hold("room")
    first = asyncio.create_task(lookups.room(QUAY))
    second = asyncio.create_task(lookups.room(QUAY))
    await asyncio.sleep(0)
    first.cancel()
    await asyncio.sleep(0)
    world.release("room")
    assert await second is not None
    await asyncio.gather(first, return_exceptions=True)
    await lookups.room(QUAY)
    assert world.calls == [WorldCall("room", (QUAY,))]


async def test_concurrent_zone_polls_share_one_request(world: Counting) -> None:
    lookups = cached(world, FakeClock(T0))
    first, second = await asyncio.gather(lookups.zones(), lookups.zones())
    assert first == second and world.calls == [WorldCall("zones")]
