"""The durable backlog's intake on real SQLite and real PostgreSQL."""

from __future__ import annotations

from storyteller_daemon.domain.work import Decision, NewWork, WorkState
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock


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


async def test_urgent_work_is_chosen_before_older_work_and_listed_in_order(store: Store) -> None:
    """A crime behind a pile of echoes is judged in the next batch and claimed for the next
    turn; a batch still lists its events in the order they came."""
    clock = FakeClock()
    backlog = store.stamped_by(clock).backlog
    st = await store.storytellers.create("Watcher")
    assert st.id is not None
    sid = st.id

    def new(n: int, kind: str, state: WorkState) -> NewWork:
        return NewWork(sid, f"w:{n}", kind, kind if kind == "crime" else "echo", 101, "{}", state)

    pending = [new(n, "crime" if n == 5 else "room_echo", WorkState.PENDING) for n in range(6)]
    await backlog.add(pending)
    batch = await backlog.pending(sid, 3, first=("crime",))
    assert [i.source for i in batch] == ["w:0", "w:1", "w:5"]
    assert [i.source for i in await backlog.pending(sid, 3)] == ["w:0", "w:1", "w:2"]
    interested = [
        new(n, "crime" if n == 13 else "room_echo", WorkState.INTERESTED) for n in range(10, 14)
    ]
    await backlog.add(interested)
    claim = await backlog.claim_turn(sid, lambda items: "t-1", 5, first=("crime",))
    assert claim is not None and [i.source for i in claim.items] == ["w:13"]


async def test_decisions_move_only_pending_items_and_say_how_many(store: Store) -> None:
    a = await store.storytellers.create("Watcher A")
    b = await store.storytellers.create("Watcher B")
    assert a.id is not None and b.id is not None
    backlog = BacklogRepository(store.db, store.clock)
    one, two, three, done = await backlog.add(
        [_work(a.id, "w:1"), _work(a.id, "w:2"), _work(b.id, "w:1"), _work(b.id, "w:3")]
    )
    assert await backlog.decide([Decision(done.id, WorkState.IGNORED, "ambience")]) == 1

    moved = await backlog.decide(
        [
            Decision(one.id, WorkState.IGNORED, "dull", "rule:dull"),
            Decision(two.id, WorkState.INTERESTED, "a thief"),
            Decision(three.id, WorkState.IGNORED, "dull"),
            Decision(done.id, WorkState.INTERESTED, "decided already"),
        ]
    )

    assert moved == 3
    states = {
        w.id: (w.state, w.reason)
        for sid in (a.id, b.id)
        for w in await backlog.items(sid, limit=10)
    }
    assert states == {
        one.id: (WorkState.IGNORED, "dull"),
        two.id: (WorkState.INTERESTED, "a thief"),
        three.id: (WorkState.IGNORED, "dull"),
        done.id: (WorkState.IGNORED, "ambience"),
    }
    assert await backlog.decide([Decision(one.id, WorkState.INTERESTED)]) == 0
