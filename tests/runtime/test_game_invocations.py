"""A game's invocations through the real bridge into the daemon, on SQLite and PostgreSQL: the
request id is an idempotency key (a repeated id is answered from the stored turn and runs
nothing twice), and every accepted invocation's outcome reaches the game, a turn a last check
stopped included."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace

import pytest
from test_invoke import held_runner

from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.spending.admission import Admission
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.pipeline import wired_pipeline
from storyteller_daemon.testing.scripted_turns import ScriptedTurnRunner
from world_adapter.bridge.client import BridgeWorldClient
from world_adapter.bridge.world_server import WorldServer
from world_adapter.sim import SimWorld

TOKEN = "invocation-token"
WAIT = 10.0  # a guard against hanging: every wait ends on a condition


@dataclass
class Rig:
    daemon: Daemon
    runner: ScriptedTurnRunner
    game: WorldServer
    store: Store
    watch_id: int
    kill_switch: list[bool]


@pytest.fixture
async def rig(store: Store) -> AsyncIterator[Rig]:
    watch = await store.storytellers.create("Harbour Watch")
    watch = await store.storytellers.save(replace(watch, paused=False))
    assert watch.id is not None
    world = SimWorld.harbour_town(epoch="boot-1")
    game = WorldServer(world, TOKEN, cells=frozenset(r.id for r in world.town_map.rooms))
    await game.start()
    clock = FakeClock()
    client = BridgeWorldClient(game.url, TOKEN, clock=clock, rng=random.Random(3))
    runner = held_runner()
    kill_switch = [False]
    pipeline = wired_pipeline(
        store,
        runner=runner,
        clock=clock,
        queue_size=5,
        admission=Admission(None, None, kill_switch=lambda: kill_switch[0]),
    ).pipeline
    daemon = Daemon(
        settings=store.storytellers,
        world=client,
        pipeline=pipeline,
        clock=clock,
        drain_seconds=5,
        invocations=client,
    )
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop))
    try:
        await asyncio.wait_for(daemon.ready.wait(), WAIT)
        yield Rig(daemon, runner, game, store, watch.id, kill_switch)
    finally:
        runner.release.set()
        stop.set()
        await asyncio.wait_for(task, WAIT)
        await client.close()
        await game.stop()


async def test_a_repeated_request_id_is_answered_from_the_stored_turn(rig: Rig) -> None:
    rig.runner.release.clear()
    first = await rig.game.invoke("Harbour Watch", "Ring the bell.", request_id="bell-1")
    queued = await rig.game.invoke("Harbour Watch", "Ring the bell.", request_id="bell-1")
    assert first.accepted and not first.duplicate
    assert queued.accepted and queued.duplicate and queued.turn_key == first.turn_key
    rig.runner.release.set()
    outcome = await asyncio.wait_for(rig.game.wait_outcome("bell-1"), WAIT)
    assert (outcome.turn_key, outcome.outcome, outcome.run_id) == (
        first.turn_key,
        "completed",
        None,
    )
    rig.game.outcomes.clear()
    done = await rig.game.invoke("harbour watch", "Ring it again?", request_id="bell-1")
    assert done.duplicate and "its turn is done" in done.message
    assert await asyncio.wait_for(rig.game.wait_outcome("bell-1"), WAIT) == outcome
    await rig.daemon.pipeline.wait_idle()
    assert [t.text for t in rig.runner.turn_triggers] == ["Ring the bell."]  # one turn, once


async def test_a_turn_a_last_check_stops_is_reported_as_not_run(rig: Rig) -> None:
    rig.runner.release.clear()
    running = await rig.game.invoke("Harbour Watch", "First.", request_id="a-1")
    waiting = await rig.game.invoke("Harbour Watch", "Second.", request_id="a-2")
    assert running.accepted and waiting.accepted
    watch = await rig.store.storytellers.get("Harbour Watch")
    await rig.store.storytellers.save(replace(watch, paused=True))
    await rig.daemon.reload()
    rig.runner.release.set()
    stopped = await asyncio.wait_for(rig.game.wait_outcome("a-2"), WAIT)
    assert (stopped.outcome, stopped.message) == ("not_run", "storyteller was paused")
    assert (await asyncio.wait_for(rig.game.wait_outcome("a-1"), WAIT)).outcome == "completed"
    refused = await rig.game.invoke("Harbour Watch", "Third.", request_id="a-3")
    assert (refused.accepted, refused.reason) == (False, "paused")


async def test_a_refused_request_id_stored_nothing_and_may_be_sent_again(rig: Rig) -> None:
    blank = await rig.game.invoke("Harbour Watch", " ", request_id="b-1")
    assert (blank.accepted, blank.reason) == (False, "blank_text")
    again = await rig.game.invoke("Harbour Watch", "Now with words.", request_id="b-1")
    assert again.accepted and not again.duplicate
    await asyncio.wait_for(rig.game.wait_outcome("b-1"), WAIT)


async def test_the_kill_switch_refuses_an_invocation_and_says_so(rig: Rig) -> None:
    rig.kill_switch[0] = True
    refused = await rig.game.invoke(rig.watch_id, "Act now.", request_id="k-1")
    assert (refused.accepted, refused.reason) == (False, "kill_switch")
    assert refused.message == "the kill switch is on" and refused.storyteller_id == rig.watch_id
    rig.kill_switch[0] = False
    assert (await rig.game.invoke(rig.watch_id, "Act now.", request_id="k-1")).accepted
