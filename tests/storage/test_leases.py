"""Storyteller leases on real SQLite and real PostgreSQL, on a fake clock: take, renew, expiry,
release, the fencing token, the fence check; and daemons racing on PostgreSQL."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import text

from storyteller_daemon.errors import LeaseLost
from storyteller_daemon.storage.fence import check_lease
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock


async def _storytellers(store: Store, count: int) -> list[int]:
    ids = []
    for n in range(count):
        st = await store.storytellers.create(f"Teller {n}")
        assert st.id is not None
        ids.append(st.id)
    return ids


async def test_take_renew_expire_and_a_new_owner_gets_a_greater_token(store: Store) -> None:
    clock = FakeClock()
    leases = store.stamped_by(clock).leases
    ids = await _storytellers(store, 3)
    assert await leases.sync() == 3
    await leases.join("a", 10)
    await leases.join("b", 10)
    assert await leases.live_instances() == ["a", "b"]

    a = await leases.take("a", 2, 10)
    assert a == {ids[0]: 1, ids[1]: 1}
    b = await leases.take("b", 5, 10)
    assert b == {ids[2]: 1}  # what a holds is not free
    assert await leases.take("b", 5, 10) == {}

    await clock.advance(8)
    assert await leases.renew("a", a, 10) == a  # renewed at 8: good until 18
    await clock.advance(5)  # 13: b's lease (until 10) has expired, a's has not
    assert await leases.take("a", 5, 10) == {ids[2]: 2}
    assert await leases.renew("b", b, 10) == {}  # b lost it: nothing renewed
    holders = await leases.holders()
    assert holders[ids[2]] == ("a", 2)


async def test_release_frees_at_once_and_only_with_the_right_token(store: Store) -> None:
    clock = FakeClock()
    leases = store.stamped_by(clock).leases
    ids = await _storytellers(store, 2)
    await leases.sync()
    a = await leases.take("a", 2, 10)
    assert await leases.release("a", {ids[0]: a[ids[0]] + 1}) == 0  # a stale claim frees nothing
    assert await leases.release("b", a) == 0  # nor another daemon's
    assert await leases.release("a", a) == 2
    assert await leases.take("b", 5, 10) == {ids[0]: 2, ids[1]: 2}


async def test_an_instance_is_live_until_its_renewal_expires_and_leaving_ends_it(
    store: Store,
) -> None:
    clock = FakeClock()
    leases = store.stamped_by(clock).leases
    await leases.join("a", 10)
    await leases.join("b", 10)
    await clock.advance(6)
    await leases.beat("a", 10)
    await clock.advance(6)
    assert await leases.live_instances() == ["a"]
    await leases.leave("a")
    assert await leases.live_instances() == []


async def test_joining_again_frees_what_the_previous_run_under_the_name_held(store: Store) -> None:
    clock = FakeClock()
    leases = store.stamped_by(clock).leases
    await _storytellers(store, 2)
    await leases.sync()
    old = await leases.take("a", 2, 10)
    await leases.join("a", 10)  # restarted after kill -9: the old process's tokens are void
    new = await leases.take("a", 2, 10)
    assert new == {sid: token + 1 for sid, token in old.items()}
    assert await leases.renew("a", old, 10) == {}


async def test_sync_follows_storytellers_created_and_deleted(store: Store) -> None:
    ids = await _storytellers(store, 2)
    assert await store.leases.sync() == 2
    await store.storytellers.delete(ids[0])
    await _storytellers(store, 1)
    assert await store.leases.sync() == 2
    assert ids[0] not in await store.leases.holders()


async def test_the_fence_refuses_a_write_once_the_lease_has_a_new_owner(store: Store) -> None:
    clock = FakeClock()
    leases = store.stamped_by(clock).leases
    (sid,) = await _storytellers(store, 1)
    await leases.sync()
    token = (await leases.take("a", 1, 10))[sid]
    async with store.db.session() as session:
        await check_lease(session, "a", sid, token)
    await clock.advance(11)
    assert await leases.take("b", 1, 10) == {sid: token + 1}
    with pytest.raises(LeaseLost, match="no longer holds storyteller"):
        async with store.db.session() as session:
            await check_lease(session, "a", sid, token)


@pytest.mark.postgres
async def test_daemons_taking_at_once_never_share_a_storyteller(pg_url: str) -> None:
    clock = FakeClock()
    stores = [Store.open(pg_url, clock=clock) for _ in range(3)]
    try:
        await stores[0].db.upgrade()
        await _storytellers(stores[0], 30)
        await stores[0].leases.sync()
        taken = await asyncio.gather(
            *(s.leases.take(name, 30, 10) for s, name in zip(stores, "abc", strict=True))
        )
        owned = [sid for held in taken for sid in held]
        assert len(owned) == len(set(owned)) == 30
        holders = await stores[0].leases.holders()
        for held, name in zip(taken, "abc", strict=True):
            assert all(holders[sid] == (name, 1) for sid in held)
    finally:
        for s in stores:
            await s.close()


@pytest.mark.postgres
async def test_a_take_waits_for_a_fenced_write_in_flight_then_the_write_is_settled(
    pg_url: str,
) -> None:
    """The fence's FOR SHARE lock orders a take after a write in flight, and a write after
    the take: the old owner's write either commits first or is refused."""
    clock = FakeClock()
    writer, taker = Store.open(pg_url, clock=clock), Store.open(pg_url, clock=clock)
    try:
        await writer.db.upgrade()
        (sid,) = await _storytellers(writer, 1)
        await writer.leases.sync()
        token = (await writer.leases.take("a", 1, 10))[sid]
        await clock.advance(11)  # a's lease has expired, but a is still writing
        inside, finish = asyncio.Event(), asyncio.Event()

        async def write() -> None:
            async with writer.db.session() as session:
                await check_lease(session, "a", sid, token)
                inside.set()
                await finish.wait()

        writing = asyncio.create_task(write())
        await inside.wait()
        taking = asyncio.create_task(taker.leases.take("b", 1, 10))
        # SKIP LOCKED: b does not wait for the share lock, it skips the row this round
        assert await asyncio.wait_for(taking, 10) == {}
        finish.set()
        await writing
        assert await taker.leases.take("b", 1, 10) == {sid: token + 1}
        with pytest.raises(LeaseLost):
            async with writer.db.session() as session:
                await check_lease(session, "a", sid, token)
    finally:
        await writer.close()
        await taker.close()


@pytest.mark.postgres
async def test_a_renewal_never_holds_one_lease_row_while_it_waits_for_another(
    pg_url: str,
) -> None:
    """A write in flight share-locks its lease row: the renewal renews the other rows at once
    and commits them, then renews that row alone once the write is done, so it can never be
    one half of a deadlock with the daemon's guarded writes."""
    clock = FakeClock()
    writer, keeper, prober = (Store.open(pg_url, clock=clock) for _ in range(3))
    try:
        await writer.db.upgrade()
        first, busy, last = await _storytellers(writer, 3)
        await writer.leases.sync()
        held = await keeper.leases.take("a", 3, 10)
        inside, finish = asyncio.Event(), asyncio.Event()

        async def write() -> None:
            async with writer.db.session() as session:
                await check_lease(session, "a", busy, held[busy])
                inside.set()
                await finish.wait()

        writing = asyncio.create_task(write())
        await inside.wait()
        await clock.advance(5)
        renewing = asyncio.create_task(keeper.leases.renew("a", held, 10))
        holders = {}
        for _ in range(200):  # until the free rows' renewal is committed (the busy one waits)
            await asyncio.sleep(0.05)
            async with prober.db.reading() as connection:
                rows = await connection.exec_driver_sql(
                    "SELECT storyteller_id, expires_at FROM storyteller_leases"
                )
                holders = dict(rows.all())
            if holders[first] != holders[busy]:
                break
        assert holders[first] == holders[last] > holders[busy]
        assert not renewing.done()  # it waits for the write, holding no other row
        async with prober.db.session() as session:  # the free rows are not locked
            await session.execute(
                text(
                    "SELECT 1 FROM storyteller_leases WHERE storyteller_id IN "
                    f"({first}, {last}) FOR UPDATE NOWAIT"
                )
            )
        finish.set()
        await writing
        assert await asyncio.wait_for(renewing, 10) == held
    finally:
        for store in (writer, keeper, prober):
            await store.close()
