"""The one replay buffer: retention, where a subscriber resumes, gaps as data, listeners; and
`EventBuffer`, its asyncio face for the sim world and the bridge's world server.

The buffer's tests run against both copies, the project's (`world_adapter.replay`) and the
Evennia bridge's standard-library one, each with its own cursor type; test_replay_copies.py
checks that their source is the same text."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from types import ModuleType
from typing import Any

import pytest

from world_adapter import replay
from world_adapter.bridges.evennia import replaybuffer
from world_adapter.event_buffer import EventBuffer
from world_adapter.events import Cursor, RoomEcho

AT = datetime(2026, 11, 22, 18, 0, tzinfo=UTC)


@pytest.fixture(params=[replay, replaybuffer], ids=["project", "evennia"])
def copy(request: pytest.FixtureRequest) -> ModuleType:
    """One copy of the replay buffer's module."""
    module: ModuleType = request.param
    return module


def _buffer(copy: ModuleType, capacity: int = 3, count: int = 5) -> Any:
    """`count` items "a", "b"... under seqs 1, 2...; the newest `capacity` held."""
    buffer = copy.ReplayBuffer("e1", capacity)
    for seq in range(1, count + 1):
        buffer.add(seq, chr(ord("a") + seq - 1))
    return buffer


def test_the_newest_items_are_held_and_the_rest_counted(copy: ModuleType) -> None:
    buffer = _buffer(copy)
    assert buffer.held_after(0, 10) == [(3, "c"), (4, "d"), (5, "e")]
    assert (buffer.resume_point, buffer.last_seq, buffer.next_seq, buffer.evicted) == (2, 5, 6, 2)
    assert buffer.held_after(3, 1) == [(4, "d")]
    assert buffer.held_after(5, 10) == []


def test_retention_stays_exact_over_many_items(copy: ModuleType) -> None:
    buffer = _buffer(copy, capacity=4, count=1_000)
    assert [seq for seq, _ in buffer.held_after(0, 10)] == [997, 998, 999, 1000]
    assert (buffer.resume_point, buffer.evicted) == (996, 996)


def test_an_empty_buffer_resumes_after_its_start(copy: ModuleType) -> None:
    buffer = copy.ReplayBuffer("e1", 3, last_seq=7)
    assert (buffer.resume_point, buffer.last_seq) == (7, 7)
    assert buffer.start(copy.Cursor("e1", 7)) == copy.Start(7)
    assert buffer.start(copy.Cursor("e1", 6)) == copy.Start(
        7, copy.Gap(copy.GapReason.EXPIRED, copy.Cursor("e1", 6), copy.Cursor("e1", 7))
    )


def test_a_held_cursor_resumes_without_a_gap(copy: ModuleType) -> None:
    buffer = _buffer(copy)
    assert buffer.start(None) == copy.Start(5)
    assert buffer.start(copy.Cursor("e1", 2)) == copy.Start(2)
    assert buffer.start(copy.Cursor("e1", 5)) == copy.Start(5)
    assert buffer.behind(2) is None


def test_an_expired_cursor_gets_a_gap_to_the_oldest_held(copy: ModuleType) -> None:
    buffer = _buffer(copy)
    assert buffer.start(copy.Cursor("e1", 1)) == copy.Start(
        2, copy.Gap(copy.GapReason.EXPIRED, copy.Cursor("e1", 1), copy.Cursor("e1", 2))
    )
    assert buffer.behind(0) == copy.Gap(
        copy.GapReason.EXPIRED, copy.Cursor("e1", 0), copy.Cursor("e1", 2)
    )


def test_a_cursor_from_another_epoch_gets_a_gap_to_the_oldest_held(copy: ModuleType) -> None:
    buffer = _buffer(copy)
    assert buffer.start(copy.Cursor("e0", 9)) == copy.Start(
        2, copy.Gap(copy.GapReason.EPOCH, copy.Cursor("e0", 9), copy.Cursor("e1", 2))
    )
    fresh = copy.ReplayBuffer("e1", 3)
    assert fresh.start(copy.Cursor("e0", 9)) == copy.Start(
        0, copy.Gap(copy.GapReason.EPOCH, copy.Cursor("e0", 9), copy.Cursor("e1", 0))
    )


def test_a_cursor_ahead_of_the_newest_item_gets_a_gap_to_the_head(copy: ModuleType) -> None:
    buffer = _buffer(copy)
    assert buffer.start(copy.Cursor("e1", 6)) == copy.Start(
        5, copy.Gap(copy.GapReason.AHEAD, copy.Cursor("e1", 6), copy.Cursor("e1", 5))
    )


def test_listeners_hear_every_new_item_until_removed(copy: ModuleType) -> None:
    buffer = copy.ReplayBuffer("e1", 3)
    heard: list[int] = []

    def listener() -> None:
        heard.append(buffer.last_seq)

    buffer.add_listener(listener)
    buffer.add(1, "a")
    buffer.add(2, "b")
    buffer.remove_listener(listener)
    buffer.remove_listener(listener)  # no longer added: ignored
    buffer.add(3, "c")
    assert heard == [1, 2]


def test_seqs_may_skip_values_but_never_go_back(copy: ModuleType) -> None:
    buffer = copy.ReplayBuffer("e1", 2)
    for seq in (3, 7, 8, 12):
        buffer.add(seq, str(seq))
    assert buffer.held_after(0, 10) == [(8, "8"), (12, "12")]
    assert buffer.held_after(9, 10) == [(12, "12")]
    assert buffer.resume_point == 7
    assert buffer.start(copy.Cursor("e1", 9)) == copy.Start(9)
    assert buffer.behind(6) == copy.Gap(
        copy.GapReason.EXPIRED, copy.Cursor("e1", 6), copy.Cursor("e1", 7)
    )
    for seq in (12, 11):
        with pytest.raises(ValueError, match="does not follow"):
            buffer.add(seq, "late")


def test_restarting_forgets_every_held_item(copy: ModuleType) -> None:
    buffer = _buffer(copy)
    buffer.restart_at(40)
    assert (buffer.held_after(0, 10), buffer.resume_point, buffer.last_seq) == ([], 40, 40)
    assert buffer.behind(5) == copy.Gap(
        copy.GapReason.EXPIRED, copy.Cursor("e1", 5), copy.Cursor("e1", 40)
    )
    buffer.add(41, "z")
    assert buffer.held_after(40, 10) == [(41, "z")]


@pytest.mark.parametrize("capacity", [0, -1])
def test_a_capacity_below_one_is_refused(copy: ModuleType, capacity: int) -> None:
    with pytest.raises(ValueError, match="capacity must be at least one"):
        copy.ReplayBuffer("e1", capacity)


def test_a_blank_epoch_is_refused(copy: ModuleType) -> None:
    with pytest.raises(ValueError, match="epoch must not be blank"):
        copy.ReplayBuffer(" ", 3)


# ---------------------------------------------------------------- EventBuffer


def _echo(seq: int) -> RoomEcho:
    return RoomEcho(cursor=Cursor("boot-1", seq), cell_id=101, zone_id=1, occurred_at=AT, text="x")


async def test_waiters_wake_when_an_event_beyond_their_seq_arrives() -> None:
    buffer = EventBuffer(Cursor("boot-1", 0), capacity=3)
    waiter = asyncio.create_task(buffer.wait_beyond(0))
    for _ in range(3):
        await asyncio.sleep(0)
    assert buffer.waiting == 1 and not waiter.done()
    buffer.append(_echo(2))
    await asyncio.wait_for(waiter, 1)
    assert buffer.waiting == 0
    await asyncio.wait_for(buffer.wait_beyond(1), 1)  # already there: returns at once
    assert (buffer.head, buffer.next_cursor()) == (Cursor("boot-1", 2), Cursor("boot-1", 3))


async def test_a_cancelled_waiter_leaves_nothing_behind() -> None:
    buffer = EventBuffer(Cursor("boot-1", 0), capacity=3)
    waiter = asyncio.create_task(buffer.wait_beyond(0))
    await asyncio.sleep(0)
    assert buffer.waiting == 1
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert buffer.waiting == 0
    buffer.append(_echo(1))  # nobody left to wake
