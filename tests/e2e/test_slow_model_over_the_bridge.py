"""A slow model behind a busy bridged game: nothing accepted is lost, everything is judged.

The game is the sim world served over the bridge protocol; the daemon reaches it and the model
(the shipped Responses test server, through the real openai SDK) over loopback. The model takes
far longer per request than the world takes per event, and fails some requests, so the
storyteller's backlog grows; every event must still get a recorded decision, every relevant one
a turn, and no prog call may repeat.
"""

from __future__ import annotations

import asyncio
import secrets
from dataclasses import replace
from pathlib import Path
from typing import Any

from storyteller_daemon.app import build_runtime
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import parse_config
from storyteller_daemon.domain.work import WorkState
from storyteller_daemon.errors import ModelTransientError
from storyteller_daemon.interchange.packs.files import read_pack
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.seeding import load_pack
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.model_responder import ModelResponder
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.steps import attend_all, by_kind, cycle
from world_adapter.bridge.world_server import WorldServer
from world_adapter.sim import SimWorld

WATCH = "Harbour Ward Watch"


def slow_model(delay: float) -> ScriptedModel:
    """Attends to thefts; answers after a delay; every fifth attention request fails."""
    thefts = attend_all(why="a theft", only=lambda line: "thief" in line)
    return ScriptedModel(
        then=by_kind(
            attention=cycle(thefts, thefts, thefts, thefts, ModelTransientError("HTTP 503")),
            turn=calls(("Noop", {"Reason": "noted"})),
        ),
        latency=delay,
    )


async def test_a_slow_failing_model_loses_nothing_over_the_bridge(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'slow.db'}"
    store = Store.open(url, clock=SystemClock())
    await store.db.upgrade()
    await load_pack(store.db, read_pack("harbour-ward"), clock=store.clock)
    watch = await store.storytellers.save(
        replace(await store.storytellers.get(WATCH), paused=False)
    )
    assert watch.id is not None
    token = secrets.token_hex(8)
    world = SimWorld.harbour_town(epoch=f"slow-{token}")
    bridge = WorldServer(world, token, cells=frozenset(r.id for r in world.town_map.rooms))
    model = slow_model(delay=0.15)
    server = ScriptedResponsesServer(responder=ModelResponder(model))
    await server.start()
    bridge_url = await bridge.start()
    cfg = parse_config(
        {
            "database": {"url": url},
            "world": {"kind": "bridge", "url": bridge_url, "token_env": "T"},
            "model": {"api_key_env": "K", "base_url": server.base_url, "max_retries": 0},
            "attention": {
                "quiet_seconds": 0.05,
                "max_wait_seconds": 0.2,
                "retry_seconds": 0.05,
                "max_retries": 0,
                "max_batch_events": 25,
                "calm_wait_factor": 1.0,  # every window asks: batches one after another
            },
        },
        "test",
    )
    runtime = await build_runtime(
        cfg, environ={"T": token, "K": "test-key"}, store=store, clock=SystemClock()
    )
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    try:
        await asyncio.wait_for(runtime.daemon.ready.wait(), 10)
        await asyncio.wait_for(bridge.wait_subscriptions(1), 10)
        for n in range(150):  # far faster than the model: one request takes 0.15 s
            world.emote(1001, f"hauls crate number {n} along the quay.")
            if n % 30 == 7:
                world.emote(2003, f"shouts: thief! (alarm {n})")
            if n % 10 == 0:
                await asyncio.sleep(0)
        await asyncio.wait_for(_until(lambda: runtime.stats.events_in >= 155), 30)
        await asyncio.wait_for(runtime.pipeline.wait_idle(), 60)
        items = await BacklogRepository(store.db, store.clock).items(watch.id, limit=1000)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await runtime.close()
        await server.stop()
        await bridge.stop()
    heard = [i for i in items if i.kind == "room_echo"]
    assert len(heard) == runtime.stats.events_in  # every event in a watched room was stored
    states = {i.state for i in heard}
    assert states <= {WorkState.IGNORED, WorkState.DONE}, states  # all judged, none expired
    thefts = [i for i in heard if "thief" in i.payload]
    assert len(thefts) == 5 and all(i.state is WorkState.DONE for i in thefts)
    attention_requests = [r for r in model.requests if not r.tools]
    assert len(attention_requests) >= 5  # so one failed: retried, not its events dropped
    assert runtime.stats.dropped.get("expired", 0) == 0
    assert runtime.stats.attention_calls < len(heard) / 3  # batches, not one call per event


async def _until(condition: Any) -> None:
    while not condition():  # noqa: ASYNC110 - the daemon offers no event for its counters
        await asyncio.sleep(0.01)
