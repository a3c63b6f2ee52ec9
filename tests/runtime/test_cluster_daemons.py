"""Two daemons over one database on a fake clock: they split the storytellers, each routes and
runs only its own, and on a clean stop of one the other takes its storytellers over and re-runs
the turn the stop cut off under the same key; a turn whose storyteller was taken over while it
ran ends without writing."""

from __future__ import annotations

import asyncio
import functools
from dataclasses import dataclass, replace

import pytest
from sqlalchemy import text

from storyteller_daemon.app import build_runtime
from storyteller_daemon.config import ClusterConfig, parse_config
from storyteller_daemon.domain.storytellers import EventKind
from storyteller_daemon.errors import ConfigError, LeaseLost
from storyteller_daemon.runtime.cluster import LeasedSettings, LeaseKeeper
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.pipeline.routing import Router
from storyteller_daemon.storage.fence import Fence
from storyteller_daemon.storage.notifications import RELISTEN_SECONDS
from storyteller_daemon.storage.store import Store
from storyteller_daemon.storage.work_notices import WORK_CHANNEL, send_work_notice, work_notices
from storyteller_daemon.testing.clock import FakeClock, eventually, settle
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
from world_adapter.events import Cursor, RoomEcho
from world_adapter.sim import SimWorld

CFG = ClusterConfig(enabled=True, lease_seconds=10.0, renew_seconds=2.0)


@dataclass
class Node:
    name: str
    store: Store
    keeper: LeaseKeeper
    runner: ScriptedTurnRunner
    daemon: Daemon
    world: SimWorld
    stop: asyncio.Event
    task: asyncio.Task[None] | None = None

    @property
    def routed(self) -> set[int]:
        return {s.id for s in self.daemon.pipeline.router.storytellers if s.id is not None}

    async def start(self) -> None:
        self.task = asyncio.create_task(self.daemon.run(self.stop))
        await asyncio.wait_for(self.daemon.ready.wait(), 5)
        await settle()

    async def halt(self) -> None:
        self.stop.set()
        if self.task is not None:
            await asyncio.wait_for(self.task, 5)


def _node(
    url: str, clock: FakeClock, name: str, *, inbox: bool = False, world: SimWorld | None = None
) -> Node:
    store = Store.open(url, clock=clock)
    keeper = LeaseKeeper(store.leases, CFG, name, clock)
    fenced = store.fenced_by(Fence(name, keeper.token))
    runner = ScriptedTurnRunner()
    pipeline = wired_pipeline(
        fenced,
        clock=clock,
        runner=runner,
        everyone=Router(),
        elsewhere=functools.partial(send_work_notice, store.db),
        source="sim",
    ).pipeline
    world = world or SimWorld.harbour_town()
    daemon = Daemon(
        settings=LeasedSettings(store.storytellers, keeper),
        world=world,
        pipeline=pipeline,
        clock=clock,
        reload_seconds=60.0,  # only lease changes reload in this test
        drain_seconds=0.05,
        leases=keeper,
        inbox=store.inbox if inbox else None,
        world_key="sim",
        cursor_key=f"sim@{name}",
        followed=store.storytellers,
        work_notices=functools.partial(work_notices, store.db, clock),
        sweep_seconds=CFG.lease_seconds,
    )
    keeper.listen(daemon.watch.poll_now)
    return Node(name, fenced, keeper, runner, daemon, world, asyncio.Event())


async def _subscribed(world: SimWorld) -> None:
    """Return once the daemon's stream waits for events (it read its stored cursor first);
    each yield lets the database answer, none is a timed sleep."""
    await eventually(lambda: bool(world.waiting_subscriptions), "the daemon's subscription")


async def _renewal(clock: FakeClock, *nodes: Node) -> None:
    """One renewal round of every running node, and the reload a changed share asks for."""
    before = [(n.keeper.renewals + n.keeper.failures, n.keeper.held, n.daemon.polls) for n in nodes]
    await clock.advance(CFG.renew_seconds)
    for node, (ticks, held, polls) in zip(nodes, before, strict=True):
        await asyncio.wait_for(node.keeper.wait_ticks(ticks + 1), 5)
        if node.keeper.held != held:
            await asyncio.wait_for(node.daemon.wait_polls(polls + 1), 5)
    await settle()


@pytest.mark.postgres
async def test_two_daemons_split_the_storytellers_and_hand_over_on_a_clean_stop(
    pg_url: str,
) -> None:
    clock = FakeClock()
    a, b = _node(pg_url, clock, "a"), _node(pg_url, clock, "b")
    try:
        await a.store.db.upgrade()
        ids = []
        for name in ("North", "South"):
            st = await a.store.storytellers.create(name)
            ids.append((await a.store.storytellers.save(replace(st, paused=False))).id)
        await a.start()
        assert a.routed == set(ids)  # alone, it runs everything
        await b.start()
        assert b.routed == set()
        for _ in range(3):
            await _renewal(clock, a, b)
        assert len(a.routed) == len(b.routed) == 1
        assert a.routed | b.routed == set(ids)
        assert a.routed == a.keeper.held and b.routed == b.keeper.held

        (mine,) = b.routed
        b.runner.release.clear()
        st = await b.store.storytellers.get(mine)
        assert await b.daemon.pipeline.direct(st, "a bell tolls")
        await asyncio.wait_for(b.runner.started.wait(), 5)
        (_, key) = b.runner.begun[0]
        await b.halt()  # the drain deadline cuts the turn off, then b releases its leases
        assert b.runner.turns == []
        stale = b.store.backlog
        await _renewal(clock, a)
        assert a.routed == set(ids)
        await asyncio.wait_for(a.runner.wait_until(lambda: bool(a.runner.turns)), 5)
        assert [(t.text, k) for t, k in a.runner.turns] == [("a bell tolls", key)]
        with pytest.raises(LeaseLost):  # b's backlog can no longer move the storyteller's work
            await stale.expire(mine, received_before=clock.now(), reason="late")
    finally:
        b.runner.release.set()
        await b.halt()
        await a.halt()
        await a.store.close()
        await b.store.close()


async def _watching(store: Store, name: str, room: int) -> int:
    st = await store.storytellers.create(name)
    watching = replace(
        st,
        paused=False,
        subscriptions=frozenset({EventKind.ROOM}),
        surveillance=st.surveillance.toggled("include", room),
    )
    sid = (await store.storytellers.save(watching)).id
    assert sid is not None
    return sid


@pytest.mark.postgres
async def test_an_event_routed_while_its_storyteller_had_no_live_daemon_reaches_its_next_one(
    pg_url: str,
) -> None:
    """A daemon killed outright holds its storytellers until their leases expire; the daemon
    that stores an event meanwhile routes it to them all the same, and the one that takes them
    over finds it in the backlog."""
    clock = FakeClock()
    a = _node(pg_url, clock, "a", inbox=True)
    try:
        await a.store.db.upgrade()
        ids = [await _watching(a.store, "North", 102), await _watching(a.store, "South", 101)]
        dead = a.store.stamped_by(clock).leases
        await dead.sync()
        await dead.join("dead", CFG.lease_seconds)
        assert list(await dead.take("dead", 1, CFG.lease_seconds)) == [ids[0]]
        await a.start()
        assert a.routed == {ids[1]}  # its fair share; the dead daemon still looks alive
        await asyncio.wait_for(_subscribed(a.world), 5)
        # in North's room, which a follows though it does not run North (yet)
        event = a.world.emote(2002, "drops a lantern in the market.")
        await asyncio.wait_for(a.daemon.wait_cursor(event.cursor), 5)
        (waiting,) = await a.store.backlog.items(ids[0])  # routed to North, held by nobody live
        assert a.runner.turns == [] and waiting.state.value == "pending"
        for _ in range(6):  # 12 s: the dead daemon's lease and presence expire
            await _renewal(clock, a)
        assert a.routed == set(ids)
        await asyncio.wait_for(a.runner.wait_until(lambda: len(a.runner.turns) == 1), 5)
        items = await a.store.backlog.items(ids[0])
        assert [(i.kind, i.turn_key) for i in items] == [("room_echo", a.runner.turns[0][1])]
        assert "drops a lantern" in a.runner.turns[0][0].event.text  # type: ignore[union-attr]
    finally:
        await a.halt()
        await a.store.close()


@pytest.mark.postgres
async def test_each_event_is_stored_once_and_routed_once_whichever_daemon_runs_its_storyteller(
    pg_url: str,
) -> None:
    """Two daemons follow one game: each event is stored by the daemon that has it first and
    routed by it to every storyteller that hears it; the other daemon, told of the work for
    the storyteller it runs, judges it and runs the turn."""
    clock = FakeClock()
    world = SimWorld.harbour_town()
    a = _node(pg_url, clock, "a", inbox=True, world=world)
    b = _node(pg_url, clock, "b", inbox=True, world=world)
    try:
        await a.store.db.upgrade()
        north, south = (
            await _watching(a.store, "North", 102),
            await _watching(a.store, "South", 101),
        )
        await a.start()
        await b.start()
        for _ in range(3):
            await _renewal(clock, a, b)
        assert {frozenset(a.routed), frozenset(b.routed)} == {
            frozenset({north}),
            frozenset({south}),
        }
        await asyncio.wait_for(
            eventually(lambda: world.waiting_subscriptions == 2, "both subscriptions"), 5
        )
        events = [
            world.emote(2002, "drops a lantern in the market."),  # room 102: North
            world.emote(2003, "shouts at the harbourmaster."),  # room 101: South
        ]
        for node in (a, b):
            await asyncio.wait_for(node.daemon.wait_cursor(events[-1].cursor), 5)
        for node in (a, b):
            await asyncio.wait_for(
                node.runner.wait_until(lambda n=node: len(n.runner.turns) == 1), 5
            )
        assert await a.store.inbox.count("sim") == 2  # stored once
        for sid in (north, south):
            (item,) = await a.store.backlog.items(sid)  # routed once
            holder = a if sid in a.routed else b
            assert item.turn_key == holder.runner.turns[0][1]
        stored = a.daemon.pipeline.stats.events_in + b.daemon.pipeline.stats.events_in
        assert stored == 2
    finally:
        await b.halt()
        await a.halt()
        await a.store.close()
        await b.store.close()


async def test_the_daemon_refuses_clustering_on_sqlite(sqlite_store: Store) -> None:
    cfg = parse_config({"cluster": {"enabled": True, "instance": "a"}}, "st.toml")
    with pytest.raises(ConfigError, match=r"cluster\.enabled: clustering needs PostgreSQL"):
        await build_runtime(
            cfg, environ={}, world=SimWorld.harbour_town(), store=sqlite_store, clock=FakeClock()
        )


@pytest.mark.postgres
async def test_a_clustered_daemon_is_wired_with_its_leases_and_fence(pg_url: str) -> None:
    cfg = parse_config({"cluster": {"enabled": True, "instance": "node-1"}}, "st.toml")
    store = Store.open(pg_url, clock=FakeClock())
    try:
        await store.db.upgrade()
        runtime = await build_runtime(
            cfg, environ={}, world=SimWorld.harbour_town(), store=store, clock=FakeClock()
        )
        assert runtime.leases is not None and runtime.leases.instance == "node-1"
        assert runtime.daemon.leases is runtime.leases
    finally:
        await store.close()


async def test_a_turn_whose_storyteller_was_taken_over_meanwhile_ends_without_a_write(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    clock = FakeClock()
    plain = store.stamped_by(clock)
    st = await plain.storytellers.save(
        replace(await plain.storytellers.create("Harbour Watch"), paused=False)
    )
    assert st.id is not None
    await plain.leases.sync()
    tokens = await plain.leases.take("a", 1, CFG.lease_seconds)
    runner = ScriptedTurnRunner()
    runner.release.clear()
    wired = wired_pipeline(
        plain.fenced_by(Fence("a", tokens.get)), clock=clock, runner=runner, storytellers=[st]
    )
    task = asyncio.create_task(wired.pipeline.run())
    try:
        assert await wired.pipeline.direct(st, "a bell tolls")
        await asyncio.wait_for(runner.started.wait(), 5)
        await clock.advance(CFG.lease_seconds + 1)  # a froze in its turn; b takes over
        assert await plain.leases.take("b", 1, CFG.lease_seconds) == {st.id: 2}
        runner.release.set()
        await asyncio.wait_for(runner.wait_until(lambda: bool(runner.turns)), 5)
        # the refused end of the turn is logged
        await eventually(lambda: "turn stage of storyteller" in caplog.text, "the refusal's log")
        assert f"daemon 'a' no longer holds storyteller #{st.id}" in caplog.text
        assert not [r for r in caplog.records if r.levelname == "ERROR"]
        (item,) = await plain.backlog.items(st.id)
        assert item.state.value == "running"  # b resumes it under the same key
        assert wired.stats.turns["crashed"] == 0
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def _one_storyteller_each(clock: FakeClock, a: Node, b: Node) -> tuple[int, int]:
    """North (room 102) and South (101), one held by each of a and b, a following the game;
    the room of b's storyteller and a character who acts there."""
    await a.store.db.upgrade()
    ids = {await _watching(a.store, "North", 102), await _watching(a.store, "South", 101)}
    await a.start()
    await b.start()
    for _ in range(3):
        await _renewal(clock, a, b)
    (theirs,) = b.routed
    await asyncio.wait_for(_subscribed(a.world), 5)
    return (102, 2002) if theirs == min(ids) else (101, 2003)


@pytest.mark.postgres
async def test_the_daemon_running_a_storyteller_is_told_at_once_of_work_another_stored(
    pg_url: str,
) -> None:
    """Only a hears the game here (b's world is silent): b learns of the work a stored for the
    storyteller b runs from a's notice, with no sweep (the clock does not move)."""
    clock = FakeClock()
    a = _node(pg_url, clock, "a", inbox=True)
    b = _node(pg_url, clock, "b", inbox=True)
    try:
        room, actor = await _one_storyteller_each(clock, a, b)
        sweeps = b.daemon.shared_work.sweeps if b.daemon.shared_work else -1
        event = a.world.emote(actor, "drops a lantern in the market.")
        assert event.cell_id == room
        await asyncio.wait_for(b.runner.wait_until(lambda: len(b.runner.turns) == 1), 5)
        assert a.runner.turns == []
        assert b.daemon.shared_work is not None and b.daemon.shared_work.sweeps == sweeps
        assert (a.daemon.pipeline.stats.events_in, b.daemon.pipeline.stats.events_in) == (1, 0)
    finally:
        await b.halt()
        await a.halt()
        await a.store.close()
        await b.store.close()


@pytest.mark.postgres
async def test_work_stored_while_a_daemon_could_not_listen_is_found_once_it_listens_again(
    pg_url: str,
) -> None:
    """The daemons' LISTEN connections for work notices end (the server terminated them); a
    stores work for b's storyteller meanwhile, and its notice is lost. b listens again a second
    later (on the clock) and sweeps at once, long before its sweep span: the turn runs."""
    clock = FakeClock()
    a = _node(pg_url, clock, "a", inbox=True)
    b = _node(pg_url, clock, "b", inbox=True)
    try:
        room, actor = await _one_storyteller_each(clock, a, b)
        work = b.daemon.shared_work
        assert work is not None
        sweeps = work.sweeps
        listeners = await _work_listeners(a.store)
        assert len(listeners) == 2
        async with a.store.db.session() as session:  # both daemons' connections end
            for pid in listeners:
                await session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        for _ in range(2000):
            if not await _work_listeners(a.store):
                break
            await asyncio.sleep(0.005)
        event = a.world.emote(actor, "drops a lantern in the market.")
        assert event.cell_id == room
        await eventually(lambda: a.daemon.pipeline.stats.events_in == 1, "a storing the event")
        await asyncio.sleep(0.05)
        assert b.runner.turns == [] and work.sweeps == sweeps  # the notice was lost
        await clock.advance(RELISTEN_SECONDS)  # well inside the sweep span
        await asyncio.wait_for(b.runner.wait_until(lambda: len(b.runner.turns) == 1), 5)
        assert work.sweeps == sweeps + 1 and a.runner.turns == []
    finally:
        await b.halt()
        await a.halt()
        await a.store.close()
        await b.store.close()


async def _work_listeners(store: Store) -> list[int]:
    """The backends listening for work notices (both daemons')."""
    async with store.db.session() as session:
        rows = await session.execute(
            text(
                "SELECT pid FROM pg_stat_activity WHERE query = :q AND datname = current_database()"
            ),
            {"q": f'LISTEN "{WORK_CHANNEL}"'},
        )
        return [int(pid) for (pid,) in rows]


@pytest.mark.postgres
async def test_events_a_daemon_stored_and_died_before_routing_are_routed_by_a_sweep(
    pg_url: str,
) -> None:
    clock = FakeClock()
    a = _node(pg_url, clock, "a", inbox=True)
    try:
        await a.store.db.upgrade()
        north = await _watching(a.store, "North", 102)
        await a.start()
        await asyncio.wait_for(_subscribed(a.world), 5)
        left = RoomEcho(
            cursor=Cursor("sim-1", 7_000),
            cell_id=102,
            zone_id=1,
            occurred_at=clock.now(),
            text="Agna drops a lantern in the market.",
        )
        # a daemon that died between storing the event and routing it
        await a.store.inbox.store_events("sim", [left], cursor_key="sim@dead")
        work = a.daemon.shared_work
        assert work is not None
        sweeps = work.sweeps
        for _ in range(20):  # until a sweep span after the event was stored has passed
            await _renewal(clock, a)
            if work.sweeps > sweeps + 1:
                break
        assert work.sweeps > sweeps + 1
        await asyncio.wait_for(a.runner.wait_until(lambda: len(a.runner.turns) == 1), 5)
        (item,) = await a.store.backlog.items(north)
        assert item.source == "sim:sim-1:7000"
        assert await a.store.inbox.pending("sim") == []
    finally:
        await a.halt()
        await a.store.close()


async def test_a_daemon_following_every_storyteller_needs_a_pipeline_routing_to_them_all(
    sqlite_store: Store,
) -> None:
    pipeline = wired_pipeline(sqlite_store).pipeline  # routes only to the storytellers it runs
    with pytest.raises(ValueError, match=r"Pipeline\(everyone=Router\(\)\)"):
        Daemon(
            settings=sqlite_store.storytellers,
            world=SimWorld.harbour_town(),
            pipeline=pipeline,
            clock=FakeClock(),
            followed=sqlite_store.storytellers,
        )
