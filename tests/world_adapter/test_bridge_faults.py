"""Faults end to end: the daemon (real pipeline, real SQLite inbox) following the sim world's
bridge server over loopback while connections are cut, the daemon is killed and restarted, the
game restarts into a new epoch, or the token is wrong. Nothing may be lost or dispatched twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace

import pytest
from test_bridge_doubles import TOKEN, RecordingSleep, served, sim_world

from storyteller_daemon.domain.storytellers import EventKind
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.storage.inbox import InboxRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing import RecordedAlerts
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.pipeline import wired_pipeline
from world_adapter.bridge.client import BridgeWorldClient
from world_adapter.bridge.world_server import WorldServer
from world_adapter.errors import FatalStreamError
from world_adapter.events import Cursor, WorldEvent
from world_adapter.sim import SimWorld

MAREN = 1001
EVENTS = 10_000
WAIT = 30.0  # a guard against hanging, not a sleep: every wait below ends on a condition


class SeenEvents:
    """The pipeline's `observe` hook: notes each event it takes in, in order."""

    def __init__(self) -> None:
        self.seen: list[Cursor] = []
        self._target = 0
        self._reached = asyncio.Event()

    def __call__(self, event: WorldEvent) -> None:
        self.seen.append(event.cursor)
        if len(self.seen) >= self._target:
            self._reached.set()

    async def wait_seen(self, count: int) -> None:
        self._target = count
        if len(self.seen) < count:
            self._reached.clear()
        await asyncio.wait_for(self._reached.wait(), WAIT)


@dataclass
class RunningDaemon:
    daemon: Daemon
    pipeline: SeenEvents
    """What the pipeline was given (`seen`, `wait_seen`)."""
    client: BridgeWorldClient
    stop: asyncio.Event
    task: asyncio.Task[None]
    sleep: RecordingSleep = field(default_factory=RecordingSleep)
    clock: FakeClock = field(default_factory=FakeClock)
    alerts: RecordedAlerts = field(default_factory=RecordedAlerts)

    async def finish(self) -> None:
        self.stop.set()
        try:
            await asyncio.wait_for(self.task, WAIT)
        finally:
            await self.client.close()

    async def kill(self) -> None:
        """Stop it the hard way: no drain, the task is simply cancelled."""
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)
        await self.client.close()


@pytest.fixture
async def watched_store(sqlite_store: Store) -> Store:
    st = await sqlite_store.storytellers.create("Harbour Watch")
    # Paused, so the pipeline drops every event right after intake: only intake is measured.
    await sqlite_store.storytellers.save(
        replace(
            st,
            subscriptions=frozenset({EventKind.ROOM}),
            surveillance=Surveillance(zones=frozenset({1, 2})),
        )
    )
    return sqlite_store


async def start_daemon(store: Store, url: str, token: str = TOKEN) -> RunningDaemon:
    clock = FakeClock()  # pings and settings polls never fire: the test drives everything
    sleep = RecordingSleep()
    client = BridgeWorldClient(url, token, clock=clock, sleep=sleep, rng=random.Random(5))
    seen, alerts = SeenEvents(), RecordedAlerts()
    pipeline = wired_pipeline(store, clock=clock, model_available=False, observe=seen).pipeline
    daemon = Daemon(
        settings=store.storytellers,
        world=client,
        pipeline=pipeline,
        clock=clock,
        drain_seconds=5,
        inbox=InboxRepository(store.db, store.clock),
        world_key="bridge",
        alerts=alerts,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    return RunningDaemon(daemon, seen, client, stop, task, sleep, clock, alerts)


async def generate(world: SimWorld, count: int) -> None:
    """`count` room echoes in room 101, handing the loop over between chunks."""
    for n in range(count):
        world.emote(MAREN, f"counts {n}.")
        if n % 500 == 499:
            await asyncio.sleep(0)


def epoch_cursors(epoch: str, count: int, start: int = 1) -> list[Cursor]:
    return [Cursor(epoch, seq) for seq in range(start, start + count)]


@contextlib.asynccontextmanager
async def daemon_on(store: Store, server: WorldServer) -> AsyncIterator[RunningDaemon]:
    running = await start_daemon(store, server.url)
    try:
        yield running
    finally:
        if running.task.done():
            await running.client.close()
        else:
            await running.finish()


async def test_ten_thousand_events_with_a_cut_every_500_lose_and_repeat_nothing(
    watched_store: Store,
) -> None:
    world = sim_world()
    inbox = InboxRepository(watched_store.db, watched_store.clock)
    async with served(world, cut_every=500) as server, daemon_on(watched_store, server) as running:
        await asyncio.wait_for(server.wait_subscriptions(1), WAIT)
        started = time.perf_counter()
        await generate(world, EVENTS)
        await running.pipeline.wait_seen(EVENTS)
        elapsed = time.perf_counter() - started
    expected = epoch_cursors("boot-1", EVENTS)
    assert running.pipeline.seen == expected  # all of them, once each, in order
    assert await inbox.count("bridge") == EVENTS
    assert await inbox.count("bridge", pending_only=True) == 0
    assert await inbox.cursor("bridge") == Cursor("boot-1", EVENTS)
    assert server.stats.cuts >= EVENTS // 500 - 1
    assert running.client.stats.duplicates == 0 and running.sleep.delays == []
    print(f"\n10,000 events, {server.stats.cuts} cuts: {elapsed:.2f} s")  # the measured figure


async def test_a_daemon_killed_mid_stream_resumes_from_its_database(watched_store: Store) -> None:
    world = sim_world()
    inbox = InboxRepository(watched_store.db, watched_store.clock)
    async with served(world) as server:
        first = await start_daemon(watched_store, server.url)
        await asyncio.wait_for(server.wait_subscriptions(1), WAIT)
        await generate(world, EVENTS)
        await first.pipeline.wait_seen(3_000)
        await first.kill()
        stored_before = await inbox.count("bridge")
        assert 3_000 <= stored_before < EVENTS or stored_before == EVENTS
        second = await start_daemon(watched_store, server.url)  # a new client, the same database
        try:
            await second.pipeline.wait_seen(EVENTS - len(first.pipeline.seen))
        finally:
            await second.finish()
    assert first.pipeline.seen + second.pipeline.seen == epoch_cursors("boot-1", EVENTS)
    assert await inbox.count("bridge") == EVENTS
    assert await inbox.cursor("bridge") == Cursor("boot-1", EVENTS)


async def test_events_stored_but_never_dispatched_are_dispatched_first_on_restart(
    watched_store: Store,
) -> None:
    world = sim_world()
    events = [world.emote(MAREN, f"counts {n}.") for n in range(5)]
    inbox = InboxRepository(watched_store.db, watched_store.clock)
    await inbox.store_events("bridge", events[:3])  # a daemon that died before dispatching
    async with served(world) as server, daemon_on(watched_store, server) as running:
        await running.pipeline.wait_seen(5)
    assert running.pipeline.seen == epoch_cursors("boot-1", 5)
    assert await inbox.count("bridge", pending_only=True) == 0


async def test_a_game_restart_is_a_gap_with_a_warning_and_the_new_epoch_is_kept_whole(
    watched_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    old = sim_world("boot-1")
    inbox = InboxRepository(watched_store.db, watched_store.clock)
    async with served(old) as game, daemon_on(watched_store, game) as running:
        await asyncio.wait_for(game.wait_subscriptions(1), WAIT)
        await generate(old, 5)
        await running.pipeline.wait_seen(5)
        new = sim_world("boot-2")
        await generate(new, 3)  # happened before the daemon got back
        await game.restart(new)
        await running.pipeline.wait_seen(8)
        await generate(new, 2)
        await running.pipeline.wait_seen(10)
        assert game.subscriptions == 3  # the first, the one that met the gap, the resumption
    assert running.pipeline.seen == epoch_cursors("boot-1", 5) + epoch_cursors("boot-2", 5)
    assert running.daemon.stream_gaps == 1
    assert [(a.kind, a.severity) for a in running.alerts.alerts] == [("stream_gap", "warning")]
    assert "world cannot replay from boot-1:5; continuing from boot-2:0" in caplog.text
    assert await inbox.cursor("bridge") == Cursor("boot-2", 5)
    assert running.sleep.delays == []  # the connection had delivered events: resumed at once


async def test_a_wrong_token_stops_the_daemon_instead_of_retrying(watched_store: Store) -> None:
    world = sim_world()
    async with served(world) as server:
        running = await start_daemon(watched_store, server.url, token="not-the-token")
        with pytest.raises(FatalStreamError, match="refused the bridge token"):
            await asyncio.wait_for(running.task, WAIT)
        await running.client.close()
    assert server.stats.refused == 1 and running.sleep.delays == []
    assert [(a.kind, a.severity) for a in running.alerts.alerts] == [("world_refused", "error")]


async def test_a_token_revoked_while_running_stops_the_daemon_after_draining(
    watched_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    world = sim_world()
    async with served(world) as server, daemon_on(watched_store, server) as running:
        await asyncio.wait_for(server.wait_subscriptions(1), WAIT)
        server.check_token = lambda token: False  # type: ignore[method-assign]
        server.cut_all()
        with pytest.raises(FatalStreamError, match="4001"):
            await asyncio.wait_for(running.task, WAIT)
    assert running.daemon.world_status == "refused"
    assert "the world refused the daemon, which stops" in caplog.text
    # The cut connection had delivered nothing, so one backed-off attempt, refused: no retry.
    assert len(running.sleep.delays) == 1 and server.stats.refused == 1


@pytest.mark.parametrize("hostile", ["a\udc00b", "\ud800", "x\udfff\ud800y", "nul\x00here"])
async def test_text_no_database_can_store_is_kept_and_intake_goes_on(
    watched_store: Store, hostile: str
) -> None:
    world = sim_world()
    inbox = InboxRepository(watched_store.db, watched_store.clock)
    async with served(world) as server, daemon_on(watched_store, server) as running:
        await asyncio.wait_for(server.wait_subscriptions(1), WAIT)
        world.emote(MAREN, hostile)
        world.emote(MAREN, "waves.")
        await running.pipeline.wait_seen(2)
    assert await inbox.count("bridge") == 2
    assert await inbox.count("bridge", pending_only=True) == 0
    assert await inbox.cursor("bridge") == Cursor("boot-1", 2)
    assert running.client.stats.bad_frames == 0
