"""A daemon's presence on the suite's PostgreSQL: held by the database for as long as its
session lives, so a daemon whose session ended (its process died) is seen gone at once and its
leases are freed before they expire, while a live daemon's are not; a second process under the
same name is refused."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from storyteller_daemon.config import ClusterConfig
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.runtime.cluster import LeaseKeeper
from storyteller_daemon.storage.presence import PRESENCE_LOCK, Presence
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock

pytestmark = pytest.mark.postgres

CFG = ClusterConfig(enabled=True, lease_seconds=10.0, renew_seconds=2.0)


@pytest.fixture
async def pg_store(pg_url: str) -> AsyncIterator[Store]:
    store = Store.open(pg_url, clock=FakeClock())
    await store.db.upgrade()
    try:
        yield store
    finally:
        await store.close()


async def _die(store: Store, instance: str) -> None:
    """End the session holding `instance`'s presence, as the server does when its process
    is killed."""
    async with store.db.session() as session:
        ended = await session.scalar(
            text(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_locks "
                "WHERE locktype = 'advisory' AND granted AND classid = :ns "
                "AND objid = (hashtext(:name)::bigint & 4294967295)::oid AND objsubid = 2"
            ),
            {"ns": PRESENCE_LOCK, "name": instance},
        )
    assert ended == 1


async def test_a_name_a_live_daemon_is_present_under_is_refused(pg_store: Store) -> None:
    first, second = Presence("a", pg_store.db), Presence("a", pg_store.db)
    await first.hold()
    try:
        with pytest.raises(ConfigError, match="a daemon named 'a' already runs"):
            await second.hold()
        await first.release()
        await second.hold()  # the name is free once its holder stopped
    finally:
        await first.release()
        await second.release()


async def test_a_dead_daemons_leases_are_freed_at_the_next_renewal_a_live_ones_are_not(
    pg_store: Store,
) -> None:
    clock = FakeClock()
    for n in range(6):
        await pg_store.storytellers.create(f"Teller {n}")
    leases = pg_store.stamped_by(clock).leases
    keepers = {
        name: LeaseKeeper(leases, CFG, name, clock, presence=Presence(name, pg_store.db))
        for name in ("a", "b", "c")
    }
    try:
        for keeper in keepers.values():
            await keeper.start()
        for _ in range(2):
            for keeper in keepers.values():
                await keeper.tick()
        assert sorted(len(k.held) for k in keepers.values()) == [2, 2, 2]
        a, b, c = keepers.values()
        await a.tick()  # b and c are present: nothing of theirs is free, none expired
        assert len(a.held) == 2 and a.held.isdisjoint(b.held | c.held)
        held_by_b = b.held
        await _die(pg_store, "b")
        await a.tick()  # b's presence is gone; no clock has moved, its leases have not expired
        await c.tick()
        assert held_by_b <= a.held | c.held
        assert "b" not in await leases.live_instances()
        assert sorted(len(k.held) for k in (a, c)) == [3, 3]
        # restarted at once (systemd): its name is free although its last renewal is recent
        await b.stop()  # what is left of the dead one in this process (its session is gone)
        keepers["b"] = LeaseKeeper(leases, CFG, "b", clock, presence=Presence("b", pg_store.db))
        await keepers["b"].start()
        for keeper in (a, c, keepers["b"]):
            await keeper.tick()
        assert sorted(len(k.held) for k in keepers.values()) == [2, 2, 2]
    finally:
        for keeper in keepers.values():
            await keeper.stop()
