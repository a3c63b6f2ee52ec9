"""The shipped world double: every WorldClient call passed on and recorded; faults, fixed
answers and holds, for a number of calls or for good; a subscription fails or waits when it is
first iterated."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from storyteller_daemon.testing.clock import settle
from storyteller_daemon.testing.world import WORLD_METHODS, InstrumentedWorld, WorldCall
from world_adapter.errors import CursorExpired, WorldCommandError
from world_adapter.events import WorldEvent
from world_adapter.facts import DoorRule, EntityKind, PathRule
from world_adapter.protocol import WorldClient
from world_adapter.sim import SimWorld

QUAY, WAREHOUSE_LANE, MAREN = 101, 106, 1001
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def world() -> InstrumentedWorld[SimWorld]:
    return InstrumentedWorld(SimWorld.harbour_town(clock=lambda: T0))


async def test_every_method_is_passed_on_and_recorded(world: InstrumentedWorld[SimWorld]) -> None:
    client: WorldClient = world  # a WorldClient wherever the daemon needs one
    sim = world.inner
    rule = PathRule(DoorRule.RESPECT_CLOSED)
    [landmark, *_] = await sim.landmarks()
    assert await client.zones() == await sim.zones()
    assert await client.online_players() == await sim.online_players()
    assert await client.character(MAREN) == await sim.character(MAREN)
    assert await client.room(QUAY) == await sim.room(QUAY)
    assert await client.entity(EntityKind.EXIT, 22) == await sim.entity(EntityKind.EXIT, 22)
    assert await client.progs() == await sim.progs()
    assert await client.landmarks() == await sim.landmarks()
    assert await client.landmark(landmark.name) == await sim.landmark(landmark.name)
    assert await client.path(QUAY, WAREHOUSE_LANE, rule, max_exits=5) == await sim.path(
        QUAY, WAREHOUSE_LANE, rule, max_exits=5
    )
    assert await client.character_plan(MAREN) == await sim.character_plan(MAREN)
    assert await client.recent_plans(timedelta(hours=1)) == await sim.recent_plans(
        timedelta(hours=1)
    )
    assert await client.room_times([QUAY]) == await sim.room_times([QUAY])
    assert await client.calendar("1") == await sim.calendar("1")
    outcome = await client.execute_prog("EchoToRoom", {"Room": QUAY, "Text": "Gulls."}, "k1")
    assert outcome.prog == "EchoToRoom" and "Gulls." in sim.output_of(MAREN)
    emitted = asyncio.create_task(first_event(client))
    await settle()
    echo = sim.emote(MAREN, "waves.")
    assert await emitted == echo
    assert {call.method for call in world.calls} == WORLD_METHODS
    assert world.calls_to("path") == [
        WorldCall("path", (QUAY, WAREHOUSE_LANE, rule), {"max_exits": 5})
    ]
    assert world.calls_to("execute_prog")[0].args[0] == "EchoToRoom"
    assert world.count("room") == 1 and world.count("subscribe") == 1


async def test_a_fault_for_some_calls_then_the_world_again(
    world: InstrumentedWorld[SimWorld],
) -> None:
    down = WorldCommandError("the game did not answer")
    assert world.fail("room", down, times=2) is world
    for _ in range(2):
        with pytest.raises(WorldCommandError, match="did not answer"):
            await world.room(QUAY)
    assert await world.room(QUAY) is not None
    assert world.calls == [WorldCall("room", (QUAY,))] * 3  # failed calls are recorded too


async def test_a_fault_for_good(world: InstrumentedWorld[SimWorld]) -> None:
    world.fail("progs", WorldCommandError("bridge down"))
    for _ in range(3):
        with pytest.raises(WorldCommandError):
            await world.progs()


async def test_fixed_answers_are_used_in_order(world: InstrumentedWorld[SimWorld]) -> None:
    world.answer("zones", {}, times=1).answer("zones", {9: frozenset({1})}, times=1)
    world.fail("zones", WorldCommandError("gone"), times=1)
    assert await world.zones() == {}
    assert await world.zones() == {9: frozenset({1})}
    with pytest.raises(WorldCommandError):
        await world.zones()
    assert await world.zones() == await world.inner.zones()
    world.answer("online_players", [])
    assert await world.online_players() == [] and await world.online_players() == []


async def test_held_calls_wait_for_release(world: InstrumentedWorld[SimWorld]) -> None:
    world.hold("character")
    asking = asyncio.create_task(world.character(MAREN))
    await settle()
    assert not asking.done() and world.count("character") == 1  # recorded while it waits
    assert await world.room(QUAY) is not None  # other methods are not held
    world.release("character")
    assert await asking == await world.inner.character(MAREN)


async def test_a_subscription_fails_or_waits_when_first_iterated(
    world: InstrumentedWorld[SimWorld],
) -> None:
    world.fail("subscribe", CursorExpired("the game keeps 1000 events"), times=1)
    stream = world.subscribe(frozenset({QUAY}), None)
    assert world.calls == []  # nothing happens until the stream is read
    with pytest.raises(CursorExpired):
        await anext(aiter(stream))
    world.hold("subscribe")
    reading = asyncio.create_task(first_event(world))
    await settle()
    world.inner.emote(MAREN, "waits.")  # before the subscription starts: not seen
    world.release("subscribe")
    await settle()
    later = world.inner.emote(MAREN, "waves.")
    assert await reading == later
    assert world.count("subscribe") == 2


async def first_event(world: WorldClient) -> WorldEvent:
    """The first event of a new subscription to the quay."""
    async for event in world.subscribe(frozenset({QUAY}), None):
        return event
    raise AssertionError("the subscription ended")


def test_mistakes_are_refused(world: InstrumentedWorld[SimWorld]) -> None:
    with pytest.raises(ValueError, match="'rooms' is not a WorldClient method"):
        world.fail("rooms", RuntimeError("x"))
    with pytest.raises(ValueError, match="not a WorldClient method"):
        world.hold("emote")
    with pytest.raises(ValueError, match="not a WorldClient method"):
        world.count("run_activity")
    with pytest.raises(ValueError, match="cannot be answered"):
        world.answer("subscribe", [])
    with pytest.raises(ValueError, match="at least 1"):
        world.answer("zones", {}, times=0)
