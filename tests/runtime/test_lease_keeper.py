"""The lease keeper on a fake clock over real databases: the first share, evening out between
daemons, expiry and takeover, the release on a clean stop, and giving up on a failed renewal;
and the budget keeper of a cluster daemon following the others' spend."""

from __future__ import annotations

import asyncio
import functools
from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text

from storyteller_daemon.config import BudgetsConfig, ClusterConfig
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.runtime.cluster import LeaseKeeper
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper
from storyteller_daemon.storage.lease_signals import lease_signals
from storyteller_daemon.storage.ledger import LedgerEntry
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.alerts import RecordedAlerts
from storyteller_daemon.testing.clock import FakeClock, eventually, settle

CFG = ClusterConfig(enabled=True, lease_seconds=10.0, renew_seconds=2.0)


async def _storytellers(store: Store, count: int) -> list[int]:
    ids = []
    for n in range(count):
        st = await store.storytellers.create(f"Teller {n}")
        assert st.id is not None
        ids.append(st.id)
    return ids


def _keeper(store: Store, clock: FakeClock, name: str) -> tuple[LeaseKeeper, list[frozenset[int]]]:
    keeper = LeaseKeeper(store.stamped_by(clock).leases, CFG, name, clock)
    changes: list[frozenset[int]] = []
    keeper.listen(lambda: changes.append(keeper.held))
    return keeper, changes


async def test_daemons_even_out_to_their_fair_shares(store: Store) -> None:
    clock = FakeClock()
    ids = await _storytellers(store, 5)
    a, a_changes = _keeper(store, clock, "a")
    b, _ = _keeper(store, clock, "b")
    await a.start()
    assert a.held == frozenset(ids)  # alone: everything
    assert a_changes == [frozenset(ids)]
    await b.start()
    assert b.held == frozenset()  # nothing is free yet
    await a.tick()  # two live daemons: a's share is 3 of 5, it releases 2
    assert len(a.held) == 3
    await b.tick()
    assert len(b.held) == 2 and a.held.isdisjoint(b.held)
    assert {b.token(sid) for sid in b.held} == {2}  # a second owner: token 2
    c, _ = _keeper(store, clock, "c")
    await c.start()
    await a.tick()
    await b.tick()
    await c.tick()
    assert sorted(len(k.held) for k in (a, b, c)) == [1, 2, 2]
    assert a.held | b.held | c.held == frozenset(ids)


async def test_a_daemon_that_stops_renewing_loses_its_storytellers_after_the_lease(
    store: Store,
) -> None:
    clock = FakeClock()
    ids = await _storytellers(store, 4)
    a, a_changes = _keeper(store, clock, "a")
    b, _ = _keeper(store, clock, "b")
    await a.start()
    await b.start()
    await a.tick()
    await b.tick()
    assert len(a.held) == len(b.held) == 2
    a_had = a.held
    for _ in range(4):  # a is frozen: only b renews, 8 s of a 10 s lease
        await clock.advance(2)
        await b.tick()
    assert len(b.held) == 2
    await clock.advance(3)  # 11 s since a's last renewal
    await b.tick()
    assert b.held == frozenset(ids)
    assert all(b.token(sid) == 2 for sid in a_had)
    assert await a.holds_now(min(a_had)) is False  # the database says so before a prog call
    await a.tick()  # a wakes up: its renewal keeps nothing
    assert a_changes[-1] == frozenset()
    await b.tick()  # a is live again: b releases a's share for it to take
    await a.tick()
    assert len(a.held) == len(b.held) == 2


async def test_a_clean_stop_hands_everything_over_at_the_next_renewal(store: Store) -> None:
    clock = FakeClock()
    ids = await _storytellers(store, 4)
    a, _ = _keeper(store, clock, "a")
    b, _ = _keeper(store, clock, "b")
    await a.start()
    await b.start()
    await a.tick()
    await b.tick()
    await a.stop()
    assert a.held == frozenset()
    assert await store.stamped_by(clock).leases.live_instances() == ["b"]
    await b.tick()  # no waiting for a's leases to expire
    assert b.held == frozenset(ids)


async def test_the_keeper_renews_on_the_clock_and_gives_up_when_renewal_fails(
    store: Store,
) -> None:
    """A failed renewal keeps the storytellers while their leases have time left for another
    try (the database may have picked the renewal to undo, once); renewals failing until the
    leases could run out give them up, and a renewal that works again takes them back."""
    clock = FakeClock()
    await _storytellers(store, 2)
    a, changes = _keeper(store, clock, "a")
    await a.start()
    task = asyncio.create_task(a.run())
    try:
        await settle()
        await clock.advance(2)
        await asyncio.wait_for(a.wait_ticks(2), 5)
        assert a.renewals == 2 and len(a.held) == 2
        async with store.db.session() as session:  # the database stops answering for leases
            await session.execute(text("DROP TABLE cluster_instances"))
        await settle()
        await clock.advance(2)
        await asyncio.wait_for(a.wait_ticks(3), 5)
        await settle()
        assert a.failures == 1 and len(a.held) == 2  # 8 s of its leases left: kept
        for ticks in range(4, 7):  # 6, 4 then 2 s left: the last try comes too late
            await clock.advance(2)
            await asyncio.wait_for(a.wait_ticks(ticks), 5)
            await settle()
        assert a.failures == 4 and a.held == frozenset()
        assert changes[-1] == frozenset()
        assert a.token(1) is None
        async with store.db.session() as session:  # the database answers again
            await session.execute(
                text(
                    "CREATE TABLE cluster_instances (name VARCHAR(100) PRIMARY KEY, "
                    "started_at TIMESTAMP WITH TIME ZONE NOT NULL, "
                    "renewed_at TIMESTAMP WITH TIME ZONE NOT NULL, "
                    "expires_at TIMESTAMP WITH TIME ZONE NOT NULL)"
                )
            )
        await clock.advance(2)
        await asyncio.wait_for(a.wait_ticks(7), 5)
        assert len(a.held) == 2  # it joined again and took its storytellers back
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_taking_over_from_a_daemon_that_still_looks_alive_is_alerted(store: Store) -> None:
    clock = FakeClock()
    ids = await _storytellers(store, 2)
    alerts = RecordedAlerts()
    a, _ = _keeper(store, clock, "a")
    b = LeaseKeeper(store.stamped_by(clock).leases, CFG, "b", clock, alerts=alerts)
    await a.start()
    await b.start()
    await a.tick()
    await b.tick()
    assert len(a.held) == len(b.held) == 1
    leases = store.stamped_by(clock).leases
    for _ in range(6):  # a says it is alive but renews none of its leases (12 s)
        await clock.advance(2)
        await leases.beat("a", CFG.lease_seconds)
        await b.tick()
    assert b.held == frozenset(ids)
    assert alerts.kinds == ["lease_takeover"]
    assert f"took over storytellers {sorted(a.held)} from a" in alerts.alerts[0].detail
    await a.stop()
    await clock.advance(11)
    await b.tick()  # nothing left to take from anyone: no new alert
    assert alerts.kinds == ["lease_takeover"]


class _Reads:
    """The ledger, telling when a re-read of today's spend has been answered."""

    def __init__(self, ledger: Any) -> None:
        self.ledger = ledger
        self.answered = asyncio.Event()

    async def spend_on(self, day: Any) -> Any:
        spend = await self.ledger.spend_on(day)
        self.answered.set()  # the keeper takes it before the waiter runs (no await between)
        return spend


async def test_a_cluster_daemon_counts_what_the_others_spent(store: Store) -> None:
    clock = FakeClock(datetime(2026, 3, 1, 12, tzinfo=UTC))
    (sid,) = await _storytellers(store, 1)
    budget = BudgetKeeper(BudgetsConfig(daily_usd=1.0), {}, clock)
    await budget.load(store.ledger)
    reads = _Reads(store.ledger)
    following = asyncio.create_task(budget.follow(reads, CFG.renew_seconds))
    try:
        await settle()
        # another daemon's requests, as its recorder writes them
        await store.ledger.add(
            [LedgerEntry(clock.now(), "turn", "gpt-5", storyteller_id=sid, cost_usd=0.6)] * 2
        )
        assert budget.spent(sid) == 0.0  # not before the renewal interval
        await clock.advance(CFG.renew_seconds)
        await asyncio.wait_for(reads.answered.wait(), 60)  # the database answers in real time
        assert budget.spent(sid) == pytest.approx(1.2)
    finally:
        following.cancel()
        await asyncio.gather(following, return_exceptions=True)


@pytest.mark.postgres
async def test_on_postgresql_a_newcomer_gets_its_share_without_waiting_for_a_renewal(
    pg_url: str,
) -> None:
    """LISTEN/NOTIFY: b's join wakes a, a's release wakes b; the fake clock never moves."""
    clock = FakeClock()
    store = Store.open(pg_url, clock=clock)
    tasks: list[asyncio.Task[None]] = []
    try:
        await store.db.upgrade()
        await _storytellers(store, 4)
        signals = functools.partial(lease_signals, store.db, clock)
        a = LeaseKeeper(store.leases, CFG, "a", clock, signals=signals)
        b = LeaseKeeper(store.leases, CFG, "b", clock, signals=signals)
        await a.start()
        tasks.append(asyncio.create_task(a.run()))
        tasks.append(asyncio.create_task(b.run()))
        await asyncio.wait_for(_listening(store, 2), 10)
        assert len(a.held) == 4
        await b.start()
        await asyncio.wait_for(_until_held(b, 2), 10)
        assert len(a.held) == 2 and a.held.isdisjoint(b.held)
        assert clock.monotonic() == 0.0
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await store.close()


async def _listening(store: Store, count: int) -> None:
    """Return once `count` sessions LISTEN on the lease channel (each yield lets them start)."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE query LIKE 'LISTEN %' AND datname = current_database()"
    )
    deadline = asyncio.get_running_loop().time() + 60
    while asyncio.get_running_loop().time() < deadline:
        async with store.db.session() as session:
            if (await session.scalar(query) or 0) >= count:
                return
        await asyncio.sleep(0)
    raise AssertionError("the keepers never listened")


async def _until_held(keeper: LeaseKeeper, count: int) -> None:
    # each yield lets the notifications and the database answer
    await eventually(
        lambda: len(keeper.held) == count, f"{keeper.instance} holding {count} storytellers"
    )


async def test_a_second_daemon_under_a_live_name_is_refused_until_the_name_expires(
    store: Store,
) -> None:
    clock = FakeClock()
    await _storytellers(store, 2)
    first, _ = _keeper(store, clock, "a")
    await first.start()
    twin, _ = _keeper(store, clock, "a")
    with pytest.raises(ConfigError, match=r"cluster\.instance: a daemon named 'a' already runs"):
        await twin.start()
    assert twin.held == frozenset() and len(first.held) == 2
    await clock.advance(CFG.renew_seconds)
    await first.tick()  # the first still holds everything: the twin freed nothing
    assert len(first.held) == 2 and first.taken == 2
    await clock.advance(CFG.lease_seconds + 1)  # the first was killed: its name expires
    await twin.start()
    assert len(twin.held) == 2


class _SlowBeat:
    """The real lease repository, whose presence beat waits until let go."""

    def __init__(self, leases: Any) -> None:
        self._leases = leases
        self.held_up = asyncio.Event()
        self.go = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._leases, name)

    async def beat(self, instance: str, lease_seconds: float) -> None:
        self.held_up.set()
        await self.go.wait()
        await self._leases.beat(instance, lease_seconds)


async def test_a_renewal_slower_than_the_interval_is_logged(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    await _storytellers(store, 2)
    slow = _SlowBeat(store.stamped_by(clock).leases)
    keeper = LeaseKeeper(slow, CFG, "a", clock)
    slow.go.set()
    await keeper.start()
    slow.go.clear()
    slow.held_up.clear()
    tick = asyncio.create_task(keeper.tick())
    await asyncio.wait_for(slow.held_up.wait(), 5)
    await clock.advance(CFG.renew_seconds + 1)  # the database, or the daemon, is slow
    slow.go.set()
    await asyncio.wait_for(tick, 5)
    assert "cluster: a renewal took 3.0 s, longer than renew_seconds (2.0 s)" in caplog.text
    await keeper.tick()  # on time
    assert caplog.text.count("a renewal took") == 1
