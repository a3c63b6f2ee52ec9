"""Fencing on real SQLite and real PostgreSQL: once another daemon took a storyteller's lease,
every write the old owner's backlog and turn journal make for it is refused by the database
(`LeaseLost`) and changes nothing; with the current token the same writes go through."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import pytest
from sqlalchemy import event

from storyteller_daemon.domain.work import Decision, NewWork, WorkState
from storyteller_daemon.errors import LeaseLost
from storyteller_daemon.storage.fence import Fence
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock


@dataclass
class Scene:
    sid: int
    old: Store
    """The store of daemon "a", fenced by the token it held before "b" took over."""
    new: Store
    """The store of daemon "b", fenced by the token it holds now."""
    plain: Store
    clock: FakeClock
    pending_id: int
    turn_key: str


def _work(sid: int, source: str, state: WorkState = WorkState.PENDING) -> NewWork:
    return NewWork(sid, source, "room_echo", "echo", 101, '{"kind": "room_echo"}', state)


@pytest.fixture
async def scene(store: Store) -> Scene:
    clock = FakeClock()
    plain = store.stamped_by(clock)
    st = await plain.storytellers.create("Harbour Watch")
    assert st.id is not None
    await plain.leases.sync()
    old_token = (await plain.leases.take("a", 1, 10))[st.id]
    items = await plain.backlog.add(
        [_work(st.id, "w:1"), _work(st.id, "w:2", WorkState.INTERESTED)]
    )
    claim = await plain.backlog.claim_turn(st.id, lambda _: "turn-1", 5)
    assert claim is not None
    await plain.journal.note("turn-1", "round:1", "{}")
    await clock.advance(11)  # a was frozen past its lease; b takes the storyteller over
    new_token = (await plain.leases.take("b", 1, 10))[st.id]
    assert new_token == old_token + 1
    old = plain.fenced_by(Fence("a", {st.id: old_token}.get))
    new = plain.fenced_by(Fence("b", {st.id: new_token}.get))
    return Scene(st.id, old, new, plain, clock, items[0].id, "turn-1")


WRITES: dict[str, Callable[[Store, Scene], Awaitable[object]]] = {
    "add": lambda s, sc: s.backlog.add([_work(sc.sid, "w:3")]),
    "decide": lambda s, sc: s.backlog.decide([Decision(sc.pending_id, WorkState.IGNORED)]),
    "count_attempt": lambda s, sc: s.backlog.count_attempt([sc.pending_id]),
    "claim_turn": lambda s, sc: s.backlog.claim_turn(sc.sid, lambda _: "turn-2", 5),
    "finish_turn": lambda s, sc: s.backlog.finish_turn(sc.turn_key, WorkState.DONE, None),
    "stopped": lambda s, sc: s.backlog.stopped(sc.turn_key),
    "expire": lambda s, sc: s.backlog.expire(
        sc.sid, received_before=sc.clock.now(), reason="too old"
    ),
    "journal note": lambda s, sc: s.journal.note(sc.turn_key, "round:2", "{}"),
    "journal forget": lambda s, sc: s.journal.forget(sc.turn_key),
}


async def _snapshot(sc: Scene) -> tuple[object, ...]:
    items = await sc.plain.backlog.items(sc.sid)
    return (
        sorted((i.id, i.state, i.attempts, i.cut_by_stop, i.reason) for i in items),
        await sc.plain.journal.entries(sc.turn_key),
    )


@pytest.mark.parametrize("write", sorted(WRITES))
async def test_a_write_with_a_stale_token_is_refused_and_changes_nothing(
    scene: Scene, write: str
) -> None:
    before = await _snapshot(scene)
    with pytest.raises(LeaseLost, match="no longer holds storyteller"):
        await WRITES[write](scene.old, scene)
    assert await _snapshot(scene) == before
    await WRITES[write](scene.new, scene)  # the new owner's token is good


async def test_a_write_for_a_storyteller_never_held_is_refused_before_the_database(
    scene: Scene,
) -> None:
    stranger = scene.plain.fenced_by(Fence("c", {}.get))
    with pytest.raises(LeaseLost, match="does not hold storyteller"):
        await stranger.backlog.add([_work(scene.sid, "w:9")])


async def test_a_journalled_call_whose_lease_is_gone_keeps_neither_entry_nor_writes(
    scene: Scene,
) -> None:
    async def write() -> str:
        await scene.old.situations.create(scene.sid, "A fire on the quay", "It spreads.")
        return '{"ok": true}'

    with pytest.raises(LeaseLost):
        await scene.old.journal.once(scene.turn_key, "call:1:1", write)
    assert await scene.plain.situations.list(scene.sid) == []
    assert "call:1:1" not in await scene.plain.journal.entries(scene.turn_key)


async def test_a_world_events_work_routed_by_any_daemon_is_stored_for_the_holder(
    scene: Scene,
) -> None:
    """The daemon that stored a world event adds its work for every storyteller that hears
    it, held or not: it moves nothing, and the holder judges it."""
    stranger = scene.plain.fenced_by(Fence("c", {}.get))
    added = await stranger.backlog.add([_work(scene.sid, "bridge:boot-1:9")], routed=True)
    assert [item.source for item in added] == ["bridge:boot-1:9"]
    assert await scene.old.backlog.add([_work(scene.sid, "bridge:boot-1:9")], routed=True) == []


async def test_a_write_for_many_storytellers_checks_their_leases_in_one_query(
    store: Store,
) -> None:
    """The fence reads every storyteller of a write in one ``IN (...) FOR SHARE`` query, and
    one whose token is stale is named in the refusal."""
    clock = FakeClock()
    plain = store.stamped_by(clock)
    ids: list[int] = []
    for n in range(3):
        st = await plain.storytellers.create(f"Teller {n}")
        assert st.id is not None
        ids.append(st.id)
    await plain.leases.sync()
    tokens = await plain.leases.take("a", 3, 10)
    statements: list[str] = []

    def seen(_conn: object, _cursor: object, statement: str, *_rest: object) -> None:
        if "storyteller_leases" in statement:
            statements.append(statement)

    engine = store.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", seen)
    try:
        fenced = plain.fenced_by(Fence("a", tokens.get))
        await fenced.backlog.add([_work(sid, f"w:{sid}") for sid in ids])
        assert len(statements) == 1
        if store.db.dialect == "postgresql":
            assert "FOR SHARE" in statements[0]
        stale = {**tokens, ids[1]: tokens[ids[1]] - 1}
        with pytest.raises(LeaseLost, match=rf"storyteller #{ids[1]} \(fencing token"):
            await plain.fenced_by(Fence("a", stale.get)).backlog.add(
                [_work(sid, f"w:{sid}:again") for sid in ids]
            )
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    for sid in ids:  # the refused write added nothing, for any of them
        assert [i.source for i in await plain.backlog.items(sid)] == [f"w:{sid}"]
