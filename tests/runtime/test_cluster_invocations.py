"""Two daemons of a cluster on PostgreSQL, both connected to one game over the real bridge: an
`invoke` given to the daemon that does not run the storyteller is answered by the one that
does (forwarded through the database), which runs the turn and sends the outcome to the game;
the same request id again is a duplicate whichever daemon it reaches."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

import pytest
from sqlalchemy import text

from storyteller_daemon.config import ClusterConfig
from storyteller_daemon.runtime.cluster import InvocationForwarder, LeasedSettings, LeaseKeeper
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.pipeline.routing import Router
from storyteller_daemon.storage.cluster_messages import cluster_messages, send_message
from storyteller_daemon.storage.fence import Fence
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock, settle
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
from world_adapter.bridge.client import BridgeWorldClient
from world_adapter.bridge.world_server import WorldServer
from world_adapter.invocations import GameInvocation, InvocationAnswer
from world_adapter.sim import SimWorld

CFG = ClusterConfig(enabled=True, lease_seconds=10.0, renew_seconds=2.0)
TOKEN = "cluster-token"
WAIT = 10.0  # a guard against hanging: every wait ends on a condition


@dataclass
class Node:
    store: Store
    keeper: LeaseKeeper
    runner: ScriptedTurnRunner
    daemon: Daemon
    forwarder: InvocationForwarder
    client: BridgeWorldClient
    stop: asyncio.Event
    task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self.task = asyncio.create_task(self.daemon.run(self.stop))
        await asyncio.wait_for(self.daemon.ready.wait(), WAIT)
        await settle()

    async def halt(self) -> None:
        self.stop.set()
        if self.task is not None:
            await asyncio.wait_for(self.task, WAIT)
        await self.client.close()
        await self.store.close()


def _node(url: str, clock: FakeClock, name: str, game: WorldServer) -> Node:
    store = Store.open(url, clock=clock)
    keeper = LeaseKeeper(store.leases, CFG, name, clock)
    fenced = store.fenced_by(Fence(name, keeper.token))
    runner = ScriptedTurnRunner()
    client = BridgeWorldClient(game.url, TOKEN, clock=clock, rng=random.Random(7))
    forwarder = InvocationForwarder(
        name,
        storytellers=store.storytellers,
        holders=store.leases.holders,
        send=functools.partial(send_message, store.db, name),
        listen=functools.partial(cluster_messages, store.db, clock, name),
        clock=clock,
    )
    daemon = Daemon(
        settings=LeasedSettings(store.storytellers, keeper),
        world=client,
        pipeline=wired_pipeline(fenced, clock=clock, runner=runner, everyone=Router()).pipeline,
        clock=clock,
        reload_seconds=60.0,  # only lease changes reload in this test
        drain_seconds=0.05,
        leases=keeper,
        world_key="bridge",
        cursor_key=f"bridge@{name}",
        followed=store.storytellers,
        invocations=client,
        forwarder=forwarder,
    )
    keeper.listen(daemon.watch.poll_now)
    return Node(fenced, keeper, runner, daemon, forwarder, client, asyncio.Event())


async def _renewal(clock: FakeClock, *nodes: Node) -> None:
    """One renewal round of every node, and the reload a changed share asks for."""
    before = [(n.keeper.renewals + n.keeper.failures, n.keeper.held, n.daemon.polls) for n in nodes]
    await clock.advance(CFG.renew_seconds)
    for node, (ticks, held, polls) in zip(nodes, before, strict=True):
        await asyncio.wait_for(node.keeper.wait_ticks(ticks + 1), WAIT)
        if node.keeper.held != held:
            await asyncio.wait_for(node.daemon.wait_polls(polls + 1), WAIT)
    await settle()


@pytest.fixture
async def game() -> AsyncIterator[WorldServer]:
    world = SimWorld.harbour_town(epoch="boot-1")
    server = WorldServer(world, TOKEN, cells=frozenset(r.id for r in world.town_map.rooms))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.mark.postgres
async def test_an_invocation_given_to_the_other_daemon_runs_on_the_storytellers_own(
    pg_url: str, game: WorldServer
) -> None:
    clock = FakeClock()
    a, b = _node(pg_url, clock, "a", game), _node(pg_url, clock, "b", game)
    try:
        await a.store.db.upgrade()
        names = {}
        for name in ("North", "South"):
            st = await a.store.storytellers.save(
                replace(await a.store.storytellers.create(name), paused=False)
            )
            assert st.id is not None
            names[st.id] = name
        await a.start()
        await b.start()
        for _ in range(3):
            await _renewal(clock, a, b)
        assert len(a.keeper.held) == len(b.keeper.held) == 1
        (theirs,) = a.keeper.held

        asked = GameInvocation("inv-1", names[theirs].lower(), "Ring the harbour bell.")
        answer = await asyncio.wait_for(b.daemon.answer_invocation(asked), WAIT)
        assert (answer.accepted, answer.reason, answer.duplicate) == (True, "queued", False)
        assert answer.turn_key == f"st{theirs}:direct:game:inv-1"
        assert (b.forwarder.forwarded, a.forwarder.answered) == (1, 1)
        outcome = await asyncio.wait_for(game.wait_outcome("inv-1"), WAIT)
        assert (outcome.turn_key, outcome.outcome) == (answer.turn_key, "completed")
        assert [(t.text, k) for t, k in a.runner.turns] == [
            ("Ring the harbour bell.", answer.turn_key)
        ]
        assert b.runner.turns == []

        again = await asyncio.wait_for(b.daemon.answer_invocation(asked), WAIT)
        assert again.accepted and again.duplicate and again.turn_key == answer.turn_key
        by_id = replace(asked, id="inv-2", storyteller=theirs)
        assert (await asyncio.wait_for(b.daemon.answer_invocation(by_id), WAIT)).accepted
        unknown = await b.daemon.answer_invocation(replace(asked, id="inv-3", storyteller="Nobody"))
        assert (unknown.accepted, unknown.reason) == (False, "unknown_storyteller")
        await asyncio.wait_for(a.runner.wait_until(lambda: len(a.runner.turns) == 2), WAIT)
        assert b.runner.turns == []  # a duplicate ran nothing; b ran nothing of a's
    finally:
        await b.halt()
        await a.halt()


@pytest.mark.postgres
async def test_an_invocation_no_daemon_answers_in_time_is_refused_as_not_running(
    pg_url: str,
) -> None:
    clock = FakeClock()
    store = Store.open(pg_url, clock=clock)
    try:
        await store.db.upgrade()
        st = await store.storytellers.create("North")
        assert st.id is not None
        await store.leases.sync()
        await store.leases.join("gone", CFG.lease_seconds)
        await store.leases.take("gone", 1, CFG.lease_seconds)  # held, but nobody listens
        sent: list[tuple[str, dict[str, object]]] = []

        async def send(to: str, message: dict[str, object]) -> None:
            sent.append((to, message))

        forwarder = InvocationForwarder(
            "b",
            storytellers=store.storytellers,
            holders=store.leases.holders,
            send=send,
            listen=functools.partial(cluster_messages, store.db, clock, "b"),
            clock=clock,
            answer_seconds=5.0,
        )
        asking = asyncio.create_task(forwarder.forward(GameInvocation("x-1", "North", "Hello.")))
        for _ in range(100_000):  # sent, and waiting for the answer on the clock
            if sent and clock.sleepers:
                break
            await asyncio.sleep(0)
        assert [to for to, _ in sent] == ["gone"]
        await clock.advance(5.0)
        answer = await asyncio.wait_for(asking, WAIT)
        assert (answer is not None) and (answer.accepted, answer.reason) == (False, "not_running")
        assert "daemon gone" in answer.message and "send the same request again" in answer.message
        await clock.advance(CFG.lease_seconds + 1)  # its lease expires: no daemon runs it
        free = await forwarder.forward(GameInvocation("x-1", st.id, "Hello."))
        assert free is not None and free.reason == "not_running" and "handed over" in free.message
    finally:
        await store.close()


@pytest.mark.postgres
async def test_a_message_longer_than_one_notification_arrives_whole_and_only_where_sent(
    pg_url: str,
) -> None:
    clock = FakeClock()
    store = Store.open(pg_url, clock=clock)
    heard: dict[str, list[tuple[str, dict[str, object]]]] = {"a": [], "b": []}
    text = '鐘🔔"\\\n' * 800  # 4,000 characters of 1 to 4 UTF-8 bytes, and escapes
    try:
        async with (
            cluster_messages(store.db, clock, "a", lambda s, m: heard["a"].append((s, m))),
            cluster_messages(store.db, clock, "b", lambda s, m: heard["b"].append((s, m))),
        ):
            await send_message(store.db, "b", "a", {"kind": "invoke", "text": text})
            await send_message(store.db, "a", "b", {"kind": "invoked"})
            for _ in range(100_000):
                if heard["a"] and heard["b"]:
                    break
                await asyncio.sleep(0)
    finally:
        await store.close()
    assert heard == {
        "a": [("b", {"kind": "invoke", "text": text})],
        "b": [("a", {"kind": "invoked"})],
    }


@pytest.mark.postgres
async def test_a_holder_that_has_not_loaded_its_new_storyteller_yet_says_not_running(
    pg_url: str,
) -> None:
    clock = FakeClock()
    store = Store.open(pg_url, clock=clock)
    try:
        await store.db.upgrade()
        await store.storytellers.create("North")
        await store.leases.sync()
        await store.leases.join("a", CFG.lease_seconds)
        await store.leases.take("a", 1, CFG.lease_seconds)

        def forwarder(name: str) -> InvocationForwarder:
            return InvocationForwarder(
                name,
                storytellers=store.storytellers,
                holders=store.leases.holders,
                send=functools.partial(send_message, store.db, name),
                listen=functools.partial(cluster_messages, store.db, clock, name),
                clock=clock,
            )

        a, b = forwarder("a"), forwarder("b")
        answered_by_a: list[str] = []

        async def not_routed_yet(invocation: GameInvocation) -> InvocationAnswer:
            """What a's daemon answers before its settings watch has routed the storyteller."""
            answered_by_a.append(invocation.id)
            return InvocationAnswer(invocation.id, False, "unknown_storyteller", "no such")

        serving = [asyncio.create_task(f.serve(not_routed_yet)) for f in (a, b)]
        try:
            for _ in range(1_000):  # until both listen (a message before then would be lost)
                if await _listeners(store) >= 2:
                    break
                await asyncio.sleep(0)
            answer = await asyncio.wait_for(b.forward(GameInvocation("n-1", "north", "Hi.")), WAIT)
        finally:
            for task in serving:
                task.cancel()
            await asyncio.gather(*serving, return_exceptions=True)
        assert answered_by_a == ["n-1"]
        assert answer is not None and (answer.accepted, answer.reason) == (False, "not_running")
        assert "daemon a is taking the storyteller over" in answer.message
    finally:
        await store.close()


async def _listeners(store: Store) -> int:
    """Connections of the database whose last statement was a LISTEN."""
    async with store.db.reading() as connection:
        count = await connection.scalar(
            text(
                "SELECT count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND query LIKE 'LISTEN %'"
            )
        )
        return int(count or 0)
