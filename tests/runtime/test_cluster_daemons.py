"""Two daemons over one database on a fake clock: they split the storytellers, each routes and
runs only its own, and on a clean stop of one the other takes its storytellers over and re-runs
the turn the stop cut off under the same key; a turn whose storyteller was taken over while it
ran ends without writing."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace

import pytest

from storyteller_daemon.app import build_runtime
from storyteller_daemon.config import ClusterConfig, parse_config
from storyteller_daemon.domain.storytellers import EventKind
from storyteller_daemon.errors import ConfigError, LeaseLost
from storyteller_daemon.runtime.cluster import LeasedSettings, LeaseKeeper
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.storage.fence import Fence
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock, eventually, settle
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
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


def _node(url: str, clock: FakeClock, name: str, *, inbox: bool = False) -> Node:
    store = Store.open(url, clock=clock)
    keeper = LeaseKeeper(store.leases, CFG, name, clock)
    fenced = store.fenced_by(Fence(name, keeper.token))
    runner = ScriptedTurnRunner()
    pipeline = wired_pipeline(fenced, clock=clock, runner=runner).pipeline
    world = SimWorld.harbour_town()
    daemon = Daemon(
        settings=LeasedSettings(store.storytellers, keeper),
        world=world,
        pipeline=pipeline,
        clock=clock,
        reload_seconds=60.0,  # only lease changes reload in this test
        drain_seconds=0.05,
        leases=keeper,
        inbox=store.inbox if inbox else None,
        world_key=f"sim@{name}",
        catch_up_seconds=2 * CFG.lease_seconds if inbox else 0.0,
        followed=store.storytellers,
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


@pytest.mark.postgres
async def test_events_of_the_gap_reach_a_storyteller_taken_over_from_a_dead_daemon(
    pg_url: str,
) -> None:
    """A daemon killed outright holds its storytellers until their leases expire; events that
    came meanwhile are offered again to them by the daemon that takes them over."""
    clock = FakeClock()
    a = _node(pg_url, clock, "a", inbox=True)
    try:
        await a.store.db.upgrade()
        ids = []
        for name, room in (("North", 102), ("South", 101)):
            st = await a.store.storytellers.create(name)
            watching = replace(
                st,
                paused=False,
                subscriptions=frozenset({EventKind.ROOM}),
                surveillance=st.surveillance.toggled("include", room),
            )
            ids.append((await a.store.storytellers.save(watching)).id)
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
        assert a.runner.turns == [] and await a.store.backlog.items(ids[0]) == []
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
