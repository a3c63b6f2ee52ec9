"""The sim world's event stream: cell filters, resuming, waiting, expiry and cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from world_adapter.errors import CursorExpired
from world_adapter.events import Cursor, WorldEvent
from world_adapter.sim import SimWorld

MAREN, OSRIC, ILSA, PER, AGNA = 1001, 1002, 1003, 2003, 2002


async def _take(stream: AsyncIterator[WorldEvent], n: int) -> list[WorldEvent]:
    return [await anext(stream) for _ in range(n)]


async def _until_waiting(world: SimWorld, count: int) -> None:
    """Let other tasks run until `count` subscriptions wait (each yield is not a timed sleep)."""
    for _ in range(100):
        if world.waiting_subscriptions == count:
            return
        await asyncio.sleep(0)
    raise AssertionError(f"{world.waiting_subscriptions} subscriptions wait, not {count}")


async def test_replay_filters_by_cell() -> None:
    world = SimWorld.harbour_town()
    world.emote(MAREN, "waves.")  # 101
    world.emote(OSRIC, "drinks.")  # 103
    world.emote(AGNA, "hollers.")  # 102
    world.emote(ILSA, "prays.")  # 202
    events = await _take(world.subscribe(frozenset({101, 202}), Cursor("sim-1", 0)), 2)
    assert [(e.cursor.seq, e.cell_id) for e in events] == [(1, 101), (4, 202)]


async def test_resuming_after_a_cursor_loses_and_repeats_nothing() -> None:
    world = SimWorld.harbour_town()
    seen = [world.emote(PER, f"hauls rope {n}.") for n in range(5)]
    stream = world.subscribe(frozenset({101}), seen[1].cursor)
    first = await _take(stream, 3)
    later = [world.emote(MAREN, f"counts {n}.") for n in range(2)]
    second = await _take(stream, 2)
    assert [e.cursor.seq for e in first + second] == [3, 4, 5, 6, 7]
    assert first + second == seen[2:] + later


async def test_none_means_only_new_events() -> None:
    world = SimWorld.harbour_town()
    world.emote(PER, "hauls rope.")
    stream = world.subscribe(frozenset({101}), None)
    fresh = world.emote(MAREN, "waves.")
    assert await _take(stream, 1) == [fresh]


async def test_a_waiting_subscriber_wakes_for_a_matching_event_only() -> None:
    world = SimWorld.harbour_town()
    stream = world.subscribe(frozenset({103}), world.cursor)
    reader = asyncio.create_task(anext(stream))
    await _until_waiting(world, 1)
    world.emote(MAREN, "waves.")  # 101: not watched
    await _until_waiting(world, 1)
    assert not reader.done()
    wanted = world.emote(OSRIC, "orders another.")
    assert await reader == wanted
    assert world.waiting_subscriptions == 0


async def test_several_subscribers_see_the_same_event() -> None:
    world = SimWorld.harbour_town()
    readers = [
        asyncio.create_task(anext(world.subscribe(frozenset({101}), None))) for _ in range(3)
    ]
    await _until_waiting(world, 3)
    event = world.emote(PER, "coils rope.")
    assert await asyncio.gather(*readers) == [event, event, event]


async def test_a_cursor_from_another_epoch_expires_when_iteration_starts() -> None:
    world = SimWorld.harbour_town(epoch="sim-2")
    stream = world.subscribe(frozenset({101}), Cursor("sim-1", 0))
    with pytest.raises(
        CursorExpired, match="from epoch 'sim-1', but the world is in epoch 'sim-2'"
    ):
        await anext(stream)


async def test_a_cursor_older_than_the_buffer_expires() -> None:
    world = SimWorld.harbour_town(buffer_size=3)
    for n in range(5):
        world.emote(PER, f"hauls rope {n}.")
    with pytest.raises(CursorExpired, match="oldest held event is sim-1:3"):
        await anext(world.subscribe(frozenset({101}), Cursor("sim-1", 1)))
    events = await _take(world.subscribe(frozenset({101}), Cursor("sim-1", 2)), 3)
    assert [e.cursor.seq for e in events] == [3, 4, 5]


async def test_a_cursor_ahead_of_the_world_expires() -> None:
    world = SimWorld.harbour_town()
    world.emote(PER, "hauls rope.")
    with pytest.raises(CursorExpired, match="ahead of the newest event sim-1:1"):
        await anext(world.subscribe(frozenset({101}), Cursor("sim-1", 2)))


async def test_a_subscriber_left_behind_by_the_buffer_is_told() -> None:
    world = SimWorld.harbour_town(buffer_size=2)
    stream = world.subscribe(frozenset({101}), world.cursor)
    world.emote(PER, "hauls rope.")
    assert (await anext(stream)).cursor.seq == 1
    for n in range(3):
        world.emote(PER, f"hauls rope {n}.")
    with pytest.raises(CursorExpired, match="no longer held"):
        await anext(stream)


async def test_cancelling_a_waiting_subscriber_leaves_nothing_behind() -> None:
    world = SimWorld.harbour_town()

    async def consume() -> None:
        async for _ in world.subscribe(frozenset({101}), None):
            pass

    task = asyncio.create_task(consume())
    await _until_waiting(world, 1)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert world.waiting_subscriptions == 0
    assert asyncio.all_tasks() == {asyncio.current_task()}
    world.emote(PER, "hauls rope.")  # nobody left to wake


async def test_breaking_out_and_closing_ends_the_subscription() -> None:
    world = SimWorld.harbour_town()
    world.emote(PER, "hauls rope.")
    stream = world.subscribe(frozenset({101}), Cursor("sim-1", 0))
    async for event in stream:
        assert event.cursor.seq == 1
        break
    await stream.aclose()
    world.emote(PER, "hauls more rope.")
    with pytest.raises(StopAsyncIteration):
        await anext(stream)
    assert stream.cells == frozenset({101})
