"""The event inbox on SQLite and PostgreSQL: stored once, cursor in the same transaction,
pending until dispatched, pruned, and read back exactly."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from storyteller_daemon.errors import StorageError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.inbox import InboxRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing import FakeClock
from world_adapter.events import (
    CharacterState,
    Crime,
    Cursor,
    RoomEcho,
    Speech,
    StateChange,
    WorldEvent,
)

AT = datetime(2026, 11, 22, 18, 0, tzinfo=UTC)


def echo(seq: int, epoch: str = "boot-1", text: str = "Maren waves.") -> RoomEcho:
    return RoomEcho(cursor=Cursor(epoch, seq), cell_id=101, zone_id=1, occurred_at=AT, text=text)


def inbox_of(store: Store) -> InboxRepository:
    return InboxRepository(store.db, clock=FakeClock(AT))


async def test_events_are_stored_once_and_the_cursor_follows(store: Store) -> None:
    inbox = inbox_of(store)
    assert await inbox.cursor("game") is None
    first = await inbox.store_events("game", [echo(1), echo(2), echo(3)])
    assert [s.event.cursor.seq for s in first] == [1, 2, 3]
    assert await inbox.cursor("game") == Cursor("boot-1", 3)
    again = await inbox.store_events("game", [echo(2), echo(3), echo(4), echo(4)])
    assert [s.event.cursor.seq for s in again] == [4]
    assert await inbox.cursor("game") == Cursor("boot-1", 4)
    assert await inbox.count("game") == 4


async def test_a_replay_from_before_the_cursor_changes_nothing(store: Store) -> None:
    inbox = inbox_of(store)
    await inbox.store_events("game", [echo(5), echo(6)])
    assert await inbox.store_events("game", [echo(1), echo(6)]) == []
    assert await inbox.cursor("game") == Cursor("boot-1", 6)
    assert await inbox.count("game") == 2


async def test_a_new_epoch_moves_the_cursor_and_starts_over_at_seq_one(store: Store) -> None:
    inbox = inbox_of(store)
    await inbox.store_events("game", [echo(40)])
    stored = await inbox.store_events("game", [echo(1, "boot-2"), echo(2, "boot-2")])
    assert len(stored) == 2
    assert await inbox.cursor("game") == Cursor("boot-2", 2)


async def test_worlds_are_kept_apart(store: Store) -> None:
    inbox = inbox_of(store)
    await inbox.store_events("one", [echo(1)])
    assert len(await inbox.store_events("two", [echo(1)])) == 1
    assert await inbox.cursor("two") == Cursor("boot-1", 1)


async def test_pending_events_come_back_until_dispatched(store: Store) -> None:
    inbox = inbox_of(store)
    events: list[WorldEvent] = [
        echo(1, text="Ünïcode ✓"),
        Speech(
            cursor=Cursor("boot-1", 2),
            cell_id=101,
            zone_id=None,
            occurred_at=AT,
            speaker_id=1001,
            speaker_name="Maren",
            text="Fair winds.",
            target_id=1002,
            target_kind="character",
        ),
        Crime(
            cursor=Cursor("boot-1", 3),
            cell_id=103,
            zone_id=1,
            occurred_at=AT,
            crime_id=1,
            crime_type="Theft",
            legal_authority="Watch",
            criminal_id=2003,
        ),
        StateChange(
            cursor=Cursor("boot-1", 4),
            cell_id=202,
            zone_id=2,
            occurred_at=AT,
            character_id=2002,
            state=CharacterState.DEAD,
        ),
    ]
    stored = await inbox.store_events("game", events)
    pending = await inbox.pending("game")
    assert [p.event for p in pending] == events
    await inbox.mark_dispatched([stored[0].id, stored[2].id])
    assert [p.event.cursor.seq for p in await inbox.pending("game")] == [2, 4]
    assert await inbox.count("game", pending_only=True) == 2
    await inbox.mark_dispatched([p.id for p in await inbox.pending("game")])
    assert await inbox.pending("game") == []


async def test_pruning_keeps_the_newest_and_everything_pending(store: Store) -> None:
    inbox = inbox_of(store)
    stored = await inbox.store_events("game", [echo(n) for n in range(1, 11)])
    await inbox.mark_dispatched([s.id for s in stored[:8]])
    assert await inbox.prune("game", keep=3) == 7
    assert await inbox.count("game") == 3
    assert [p.event.cursor.seq for p in await inbox.pending("game")] == [9, 10]
    assert await inbox.prune("game", keep=3) == 0
    assert await inbox.cursor("game") == Cursor("boot-1", 10)
    with pytest.raises(ValueError, match="negative"):
        await inbox.prune("game", keep=-1)


async def test_large_batches_are_stored_in_one_call(store: Store) -> None:
    inbox = inbox_of(store)
    events = [echo(n) for n in range(1, 1_201)]
    assert len(await inbox.store_events("game", events)) == 1_200
    assert len(await inbox.store_events("game", events[-700:] + [echo(1_201)])) == 1
    await inbox.mark_dispatched(list(range(1, 1_202)))
    assert await inbox.count("game", pending_only=True) == 0


async def test_a_payload_that_cannot_be_read_back_is_a_storage_error(sqlite_store: Store) -> None:
    from sqlalchemy import update

    from storyteller_daemon.storage.models.world import InboxRow

    inbox = inbox_of(sqlite_store)
    await inbox.store_events("game", [echo(1)])
    db: Database = sqlite_store.db
    async with db.session() as session:
        await session.execute(update(InboxRow).values(payload='{"kind": "dance"}'))
    with pytest.raises(StorageError, match="cannot be read back"):
        await inbox.pending("game")


async def test_the_daemons_of_a_cluster_store_each_event_once_each_with_its_own_cursor(
    store: Store,
) -> None:
    inbox = inbox_of(store)
    first = await inbox.store_events("bridge", [echo(1), echo(2)], cursor_key="bridge@st-1")
    second = await inbox.store_events("bridge", [echo(2), echo(3)], cursor_key="bridge@st-2")
    assert [s.event.cursor.seq for s in first] == [1, 2]
    assert [s.event.cursor.seq for s in second] == [3]  # 2 was stored by st-1: it routes it
    assert await inbox.count("bridge") == 3
    assert await inbox.cursor("bridge@st-1") == Cursor("boot-1", 2)
    assert await inbox.cursor("bridge@st-2") == Cursor("boot-1", 3)
    assert await inbox.cursor("bridge") is None


async def test_a_daemon_new_to_the_cluster_starts_where_a_daemon_moved_last(store: Store) -> None:
    clock = FakeClock(AT)
    inbox = InboxRepository(store.db, clock)
    assert await inbox.latest_cursor("bridge") is None
    await inbox.store_events("bridge", [echo(5)], cursor_key="bridge@st-1")
    await clock.advance(1)
    await inbox.store_events("bridge", [echo(7)], cursor_key="bridge@st-2")
    await clock.advance(1)  # other worlds moved later: not this one's
    await inbox.store_events("bridge-other", [echo(9)], cursor_key="bridge-other@st-1")
    await inbox.store_events("bridg_", [echo(11)], cursor_key="bridg_@st-1")
    assert await inbox.latest_cursor("bridge") == Cursor("boot-1", 7)
    assert await inbox.latest_cursor("bridg_") == Cursor("boot-1", 11)


async def test_pending_events_received_before_a_time_are_those_a_dead_daemon_left(
    store: Store,
) -> None:
    clock = FakeClock(AT)
    inbox = InboxRepository(store.db, clock)
    old = await inbox.store_events("bridge", [echo(1), echo(2)], cursor_key="bridge@st-1")
    await clock.advance(30)
    await inbox.store_events("bridge", [echo(3)], cursor_key="bridge@st-2")
    await inbox.mark_dispatched([old[0].id])
    stale = await inbox.pending("bridge", received_before=clock.now())
    assert [s.event.cursor.seq for s in stale] == [2]
    assert [s.event.cursor.seq for s in await inbox.pending("bridge")] == [2, 3]
