"""A clean stop hands a cluster daemon's storytellers over in order, on a fake clock over real
databases: the pipeline says at once which storytellers still have a pass or a turn under way
(the others start nothing more, their pending events stay in the backlog) and again as each
ends; the keeper leaves the cluster and releases the rest at once, each busy one as its work
ends, what is left at the drain deadline; two daemons on PostgreSQL hand over through NOTIFY
without waiting for a renewal. The keeper gives storytellers lease rows only when they change."""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, replace

import pytest
from sqlalchemy import text

from storyteller_daemon.config import AttentionConfig, ClusterConfig
from storyteller_daemon.domain.storytellers import EventKind, Storyteller
from storyteller_daemon.domain.work import WorkState
from storyteller_daemon.runtime.cluster import LeasedSettings, LeaseKeeper
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.pipeline.routing import Router
from storyteller_daemon.storage.fence import Fence
from storyteller_daemon.storage.lease_signals import lease_signals
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock, eventually, settle
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
from world_adapter.events import Crime, Cursor, RoomEcho
from world_adapter.sim import SimWorld

CFG = ClusterConfig(enabled=True, lease_seconds=10.0, renew_seconds=2.0)
WINDOW = AttentionConfig(quiet_seconds=30, max_wait_seconds=60)
"""Room echoes wait for a window; crimes are urgent and judged at once."""


async def _watcher(store: Store, name: str, room: int) -> Storyteller:
    st = await store.storytellers.create(name)
    return await store.storytellers.save(
        replace(
            st,
            paused=False,
            subscriptions=frozenset({EventKind.ROOM, EventKind.CRIME}),
            surveillance=st.surveillance.toggled("include", room),
        )
    )


def _echo(room: int, seq: int) -> RoomEcho:
    return RoomEcho(
        cursor=Cursor("e", seq), cell_id=room, zone_id=1, occurred_at=_T0, text=f"echo {seq}"
    )


def _crime(room: int, seq: int) -> Crime:
    return Crime(
        cursor=Cursor("e", seq),
        cell_id=room,
        zone_id=1,
        occurred_at=_T0,
        crime_id=seq,
        crime_type="Theft",
        legal_authority="Harbour Ward",
        criminal_id=7,
        victim_id=None,
        witness_count=1,
    )


_T0 = FakeClock().now()


async def test_the_drain_names_the_storytellers_still_working_as_their_work_ends(
    store: Store,
) -> None:
    """Turning has a turn running, Judging a pass waiting for the model, Waiting an echo in
    its window, Idle nothing: only the first two are named at once; Waiting's window passes
    without a pass (its event stays pending), Judging drops out as its pass ends (its
    interesting event waits for the next holder's turn), Turning as its turn ends."""
    clock = FakeClock()
    plain = store.stamped_by(clock)
    turning = await _watcher(plain, "Turning", 101)
    judging = await _watcher(plain, "Judging", 102)
    waiting = await _watcher(plain, "Waiting", 103)
    idle = await _watcher(plain, "Idle", 104)
    runner = ScriptedTurnRunner(release=asyncio.Event(), judge_gate=asyncio.Event())
    wired = wired_pipeline(
        plain,
        clock=clock,
        runner=runner,
        storytellers=[turning, judging, waiting, idle],
        attention=WINDOW,
    )
    pipeline = wired.pipeline
    task = asyncio.create_task(pipeline.run())
    try:
        await eventually(lambda: pipeline.restored, "the pipeline's start")
        assert await pipeline.direct(turning, "a bell tolls")
        await asyncio.wait_for(runner.started.wait(), 5)
        assert await pipeline.ingest(_crime(102, 1)) == 1
        await eventually(lambda: len(runner.asked) == 1, "Judging's request")
        assert await pipeline.ingest(_echo(103, 2)) == 1
        assert pipeline.working() == {turning.id, judging.id}

        heard: list[frozenset[int | None]] = []

        async def working(ids: frozenset[int]) -> None:
            heard.append(frozenset(ids))

        pipeline.stop_intake()
        drain = asyncio.create_task(pipeline.drain(working))
        await eventually(lambda: heard == [{turning.id, judging.id}], "the first word")
        await clock.advance(WINDOW.max_wait_seconds + 1)  # Waiting's window has passed
        await settle()
        assert len(runner.asked) == 1  # no pass started for Waiting

        runner.judge_gate.set()  # type: ignore[union-attr]
        await eventually(lambda: len(heard) == 2, "Judging's pass ending")
        assert heard[1] == {turning.id}
        runner.release.set()
        await asyncio.wait_for(drain, 5)
        assert heard == [{turning.id, judging.id}, {turning.id}, frozenset()]
        assert [key for _, key in runner.begun] == [runner.begun[0][1]]  # Turning's turn only
        assert judging.id is not None and waiting.id is not None
        assert [i.state for i in await plain.backlog.items(judging.id)] == [WorkState.INTERESTED]
        assert [i.state for i in await plain.backlog.items(waiting.id)] == [WorkState.PENDING]
    finally:
        runner.release.set()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _tellers(store: Store, count: int, first: int = 0) -> list[int]:
    ids = []
    for n in range(first, first + count):
        st = await store.storytellers.create(f"Teller {n}")
        assert st.id is not None
        ids.append(st.id)
    return ids


async def test_the_keeper_hands_over_the_idle_at_once_and_the_busy_as_their_work_ends(
    store: Store,
) -> None:
    clock = FakeClock()
    leases = store.stamped_by(clock).leases
    ids = await _tellers(store, 4)
    a = LeaseKeeper(leases, CFG, "a", clock)
    b = LeaseKeeper(leases, CFG, "b", clock)
    await a.start()
    await b.start()
    await a.tick()
    await b.tick()
    assert len(b.held) == 2
    busy, idle = sorted(b.held)
    changes: list[frozenset[int]] = []
    b.listen(lambda: changes.append(b.held))

    await b.hand_over({busy})  # the stop begins: b leaves and lets Idle go
    assert b.held == {busy} and changes == [{busy}]
    assert await leases.live_instances() == ["a"]
    assert (await leases.holders())[idle][0] is None
    await a.tick()  # b no longer counts in the share: a takes what is free
    assert a.held == frozenset(ids) - {busy}
    await clock.advance(CFG.lease_seconds - 1)
    await b.tick()  # b renews Busy while its turn runs, takes nothing, stays out
    await clock.advance(2)  # 11 s since it took Busy: the renewal kept it
    assert (await leases.holders())[busy][0] == "b"
    assert "b" not in await leases.live_instances()
    await a.tick()
    assert busy not in a.held

    await b.hand_over(set())  # Busy's turn ended
    assert b.held == frozenset()
    await a.tick()
    assert a.held == frozenset(ids)
    await b.stop()
    assert a.held == frozenset(ids) and await leases.live_instances() == ["a"]


async def test_what_is_still_busy_at_the_drain_deadline_is_released_by_the_stop(
    store: Store,
) -> None:
    clock = FakeClock()
    leases = store.stamped_by(clock).leases
    ids = await _tellers(store, 3)
    b = LeaseKeeper(leases, CFG, "b", clock)
    await b.start()
    await b.hand_over({ids[0]})
    assert b.held == {ids[0]}
    assert {sid: owner for sid, (owner, _) in (await leases.holders()).items()} == {
        ids[0]: "b",
        ids[1]: None,
        ids[2]: None,
    }
    await b.stop()  # the deadline: the turn is cut off, its lease released all the same
    assert all(owner is None for owner, _ in (await leases.holders()).values())


async def test_lease_rows_are_synced_only_when_the_storytellers_change(store: Store) -> None:
    clock = FakeClock()
    leases = store.stamped_by(clock).leases
    ids = await _tellers(store, 2)
    a = LeaseKeeper(leases, CFG, "a", clock)
    await a.start()
    assert a.syncs == 1 and a.held == frozenset(ids)
    a.storytellers_are(ids)  # the first poll: told once, checked once
    await a.tick()
    a.storytellers_are(ids)
    await a.tick()
    await a.tick()
    assert a.syncs == 2
    (new,) = await _tellers(store, 1, first=2)
    await a.tick()
    assert new not in a.held  # nobody said so yet
    a.storytellers_are([*ids, new])
    await a.tick()
    assert a.syncs == 3 and a.held == frozenset([*ids, new])


@dataclass
class Node:
    store: Store
    keeper: LeaseKeeper
    runner: ScriptedTurnRunner
    daemon: Daemon
    stop: asyncio.Event
    task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.daemon.run(self.stop))
        await asyncio.wait_for(self.daemon.ready.wait(), 5)
        await settle()

    async def halt(self) -> None:
        self.stop.set()
        if self.task is not None:
            await asyncio.wait_for(self.task, 10)


async def _listening(store: Store, count: int) -> None:
    """Return once `count` sessions LISTEN on the lease channel (each yield lets them start)."""
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE query LIKE 'LISTEN %' AND datname = current_database()"
    )
    for _ in range(10_000):
        async with store.db.session() as session:
            if (await session.scalar(query) or 0) >= count:
                return
        await asyncio.sleep(0)
    raise AssertionError("the keepers never listened")


async def _write_held(
    store: Store, keeper: LeaseKeeper, storyteller_id: int
) -> tuple[asyncio.Task[None], asyncio.Event]:
    """A guarded write of `keeper`'s daemon that holds its lease row (share-locked by the
    fence) until the returned event is set; returns once it holds it."""
    inside, finish = asyncio.Event(), asyncio.Event()

    async def write() -> None:
        async with store.db.session() as session:
            await Fence(keeper.instance, keeper.token).check(session, [storyteller_id])
            inside.set()
            await finish.wait()

    writing = asyncio.create_task(write())
    await inside.wait()
    return writing, finish


def _node(url: str, clock: FakeClock, name: str, handover_seconds: float | None = None) -> Node:
    store = Store.open(url, clock=clock)
    keeper = LeaseKeeper(
        store.leases, CFG, name, clock, signals=functools.partial(lease_signals, store.db, clock)
    )
    runner = ScriptedTurnRunner()
    pipeline = wired_pipeline(
        store.fenced_by(Fence(name, keeper.token)), clock=clock, runner=runner, everyone=Router()
    ).pipeline
    daemon = Daemon(
        settings=LeasedSettings(store.storytellers, keeper),
        world=SimWorld.harbour_town(),
        pipeline=pipeline,
        clock=clock,
        reload_seconds=60.0,
        drain_seconds=30.0,  # real time: the turn is let go long before
        handover_seconds=handover_seconds,
        leases=keeper,
        world_key=f"sim@{name}",
        followed=store.storytellers,
    )
    keeper.listen(daemon.watch.poll_now)
    return Node(store, keeper, runner, daemon, asyncio.Event())


async def _b_busy_with_a_turn(clock: FakeClock, a: Node, b: Node, *, each: int) -> int:
    """a and b started on `each` storytellers apiece; one of b's runs a turn that waits for
    `b.runner.release`: its id."""
    await a.store.db.upgrade()
    for n in range(each * 2):
        st = await a.store.storytellers.create(f"Teller {n}")
        await a.store.storytellers.save(replace(st, paused=False))
    await a.start()
    await _listening(a.store, 1)  # b's join wakes a from here
    await b.start()
    await eventually(lambda: len(a.keeper.held) == each, "a's release for b")
    await _listening(a.store, 2)
    if len(b.keeper.held) < each:  # b did not listen yet when a released: its next renewal
        await clock.advance(CFG.renew_seconds)
    await eventually(lambda: len(b.keeper.held) == each, "b's share")
    await eventually(lambda: len(b.daemon.pipeline.router.storytellers) == each, "b's routes")
    busy = min(b.keeper.held)
    b.runner.release.clear()
    st = await b.store.storytellers.get(busy)
    assert st is not None and await b.daemon.pipeline.direct(st, "a bell tolls")
    await asyncio.wait_for(b.runner.started.wait(), 5)
    return busy


@pytest.mark.postgres
async def test_a_stopping_daemon_hands_its_idle_storytellers_over_before_its_turn_ends(
    pg_url: str,
) -> None:
    """b stops with a turn of one storyteller running: a holds b's other storytellers before
    that turn ends (woken by NOTIFY: the fake clock never moves), and the last one once it has,
    while b, drained, exits."""
    clock = FakeClock()
    a, b = _node(pg_url, clock, "a"), _node(pg_url, clock, "b")
    try:
        busy = await _b_busy_with_a_turn(clock, a, b, each=3)
        everyone = a.keeper.held | b.keeper.held

        b.stop.set()
        await eventually(lambda: a.keeper.held == everyone - {busy}, "the idle handed over")
        assert b.keeper.held == {busy} and b.runner.turns == []
        assert b.task is not None and not b.task.done()
        b.runner.release.set()
        await asyncio.wait_for(b.task, 10)
        await eventually(lambda: a.keeper.held == everyone, "the busy one handed over")
        assert [key for _, key in b.runner.turns] == [b.runner.begun[0][1]]  # it ended there
    finally:
        b.runner.release.set()
        await b.halt()
        await a.halt()
        await a.store.close()
        await b.store.close()


@pytest.mark.postgres
async def test_a_turn_still_running_at_the_hand_over_deadline_is_cut_off_and_resumed_elsewhere(
    pg_url: str,
) -> None:
    """b stops with a turn that never ends: at its hand-over deadline (far shorter than its
    drain's) the turn is cut off, b exits, and a, holding every storyteller, runs the same turn
    again under its key, as a resumed turn whose stop-cut run does not count as an attempt."""
    clock = FakeClock()
    a, b = _node(pg_url, clock, "a"), _node(pg_url, clock, "b", handover_seconds=0.05)
    try:
        busy = await _b_busy_with_a_turn(clock, a, b, each=2)
        (_, key) = b.runner.begun[0]
        everyone = a.keeper.held | b.keeper.held

        b.stop.set()
        assert b.task is not None
        await asyncio.wait_for(b.task, 10)  # the drain's 30 s never came into it
        assert b.runner.turns == []  # cut off, not ended
        await eventually(lambda: a.keeper.held == everyone, "every storyteller handed over")
        await eventually(lambda: [k for _, k in a.runner.turns] == [key], "the turn run again")
        assert a.runner.interruptions == [(key, 1)]  # resumed; the stop's cut is no attempt
        ended: list[object] = []

        async def done() -> bool:
            ended[:] = [(i.state, i.turn_key) for i in await a.store.backlog.items(busy)]
            return ended == [(WorkState.DONE, key)]

        for _ in range(1000):  # the turn's end is stored just after the runner returns
            if await done():
                break
            await asyncio.sleep(0)
        assert ended == [(WorkState.DONE, key)]
    finally:
        b.runner.release.set()
        await b.halt()
        await a.halt()
        await a.store.close()
        await b.store.close()


@pytest.mark.postgres
async def test_a_hand_over_does_not_wait_for_a_renewal_waiting_on_a_write(pg_url: str) -> None:
    """A write in flight share-locks Busy's lease row, so the renewal waits for it; the
    hand-over meanwhile releases Idle and leaves, and the renewal, once done, keeps only
    Busy."""
    clock = FakeClock()
    store = Store.open(pg_url, clock=clock)
    try:
        await store.db.upgrade()
        busy, idle = await _tellers(store, 2)
        b = LeaseKeeper(store.leases, CFG, "b", clock)
        await b.start()
        assert b.held == {busy, idle}
        writing, finish = await _write_held(store, b, busy)
        await clock.advance(CFG.renew_seconds)
        renewing = asyncio.create_task(b.tick())
        await asyncio.wait_for(b.hand_over({busy}), 10)
        assert not renewing.done()  # still waiting for the write
        assert await store.leases.live_instances() == []
        assert (await store.leases.holders())[idle][0] is None
        finish.set()
        await writing
        await asyncio.wait_for(renewing, 10)
        assert b.held == {busy} and (await store.leases.holders())[idle][0] is None
        await b.stop()
    finally:
        await store.close()


@pytest.mark.postgres
async def test_a_daemon_takes_what_is_handed_over_while_its_renewal_waits_on_a_write(
    pg_url: str,
) -> None:
    """a's renewal waits for a write on one of its rows; b stops meanwhile, and a, woken by
    NOTIFY, takes b's storytellers at once; the renewal, once done, keeps them too."""
    clock = FakeClock()
    store = Store.open(pg_url, clock=clock)
    try:
        await store.db.upgrade()
        ids = await _tellers(store, 4)
        signals = functools.partial(lease_signals, store.db, clock)
        a = LeaseKeeper(store.leases, CFG, "a", clock, signals=signals)
        b = LeaseKeeper(store.leases, CFG, "b", clock)
        await a.start()
        await b.start()
        await a.tick()
        await b.tick()
        mine = min(a.held)
        running = asyncio.create_task(a.run())
        try:
            await _listening(store, 1)
            writing, finish = await _write_held(store, a, mine)
            renewals = a.renewals
            await clock.advance(CFG.renew_seconds)  # a's renewal starts, and waits on the write
            await b.stop()
            await eventually(lambda: a.held == frozenset(ids), "a taking b's storytellers")
            assert a.renewals == renewals  # the renewal still waits
            finish.set()
            await writing
            await asyncio.wait_for(a.wait_ticks(renewals + a.failures + 1), 10)
            assert a.held == frozenset(ids) and a.failures == 0
        finally:
            running.cancel()
            await asyncio.gather(running, return_exceptions=True)
    finally:
        await store.close()
