"""The durable backlog's intake on real SQLite and real PostgreSQL."""

from __future__ import annotations

from storyteller_daemon.domain.work import NewWork, WorkState
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.store import Store


def _work(sid: int, source: str, state: WorkState = WorkState.PENDING) -> NewWork:
    return NewWork(
        storyteller_id=sid,
        source=source,
        kind="room_echo",
        turn_class="echo",
        room_id=101,
        payload='{"kind": "room_echo"}',
        state=state,
    )


async def test_one_event_for_many_storytellers_is_stored_once_each_in_order(store: Store) -> None:
    a = await store.storytellers.create("Watcher A")
    b = await store.storytellers.create("Watcher B")
    assert a.id is not None and b.id is not None
    backlog = BacklogRepository(store.db, store.clock)
    offered = [
        _work(a.id, "w:1"),
        _work(b.id, "w:1"),
        _work(a.id, "w:2", WorkState.INTERESTED),
        _work(a.id, "w:1"),  # the same event twice in one offer
    ]
    stored = await backlog.add(offered)
    assert [(w.storyteller_id, w.source, w.state) for w in stored] == [
        (a.id, "w:1", WorkState.PENDING),
        (b.id, "w:1", WorkState.PENDING),
        (a.id, "w:2", WorkState.INTERESTED),
    ]
    assert len({w.id for w in stored}) == 3
    assert sorted(w.id for w in await backlog.pending(a.id, 10)) == [stored[0].id]
    listed = {w.id: w for w in await backlog.items(a.id, limit=10)}
    assert listed[stored[2].id].source == "w:2"
    assert listed[stored[2].id].received_at == stored[2].received_at


async def test_a_replayed_offer_adds_only_what_is_new(store: Store) -> None:
    a = await store.storytellers.create("Watcher A")
    b = await store.storytellers.create("Watcher B")
    assert a.id is not None and b.id is not None
    backlog = BacklogRepository(store.db, store.clock)
    await backlog.add([_work(a.id, f"w:{n}") for n in range(700)])  # more than one look-up
    again = await backlog.add(
        [_work(a.id, f"w:{n}") for n in range(690, 710)] + [_work(b.id, "w:5")]
    )
    assert [(w.storyteller_id, w.source) for w in again] == [
        *[(a.id, f"w:{n}") for n in range(700, 710)],
        (b.id, "w:5"),
    ]
    assert await backlog.add([_work(a.id, "w:3")]) == []
