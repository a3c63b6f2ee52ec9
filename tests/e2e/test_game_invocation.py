"""A game invokes a storyteller over the bridge: the sim world's bridge server sends ``invoke``,
the daemon (real wiring, real SQLite, the real openai SDK against the shipped test server) answers
``invoked`` at once, runs the turn, and sends ``invoke_outcome`` with the run and its tool calls.
The same request id sent again is answered from what was stored and runs nothing twice; each
refusal names its reason."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from storyteller_daemon.app import build_runtime
from storyteller_daemon.app.runtime import Runtime
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import parse_config
from storyteller_daemon.interchange.packs.files import read_pack
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.seeding import load_pack
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.model_responder import ModelResponder
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.steps import attend_all, by_kind
from world_adapter.bridge.world_server import WorldServer
from world_adapter.invocations import InvocationAnswer, ToolCall
from world_adapter.sim import SimWorld

WATCH = "Harbour Ward Watch"
WAIT = 20.0  # a guard against hanging: every wait ends on a condition


@dataclass
class Game:
    world: SimWorld
    bridge: WorldServer
    runtime: Runtime
    store: Store
    model: ScriptedModel
    watch_id: int


def echo_model() -> ScriptedModel:
    echo = {"Room": 101, "Text": "The harbour bell tolls twice."}
    return ScriptedModel(
        then=by_kind(
            attention=attend_all(why="never asked: an invocation skips the gate"),
            turn=calls(("EchoToRoom", echo)),
            follow_up=calls(("Noop", {})),
        )
    )


@pytest.fixture
async def game(tmp_path: Path) -> AsyncIterator[Game]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'invoke.db'}"
    async with contextlib.AsyncExitStack() as stack:
        store = Store.open(url, clock=SystemClock())
        stack.push_async_callback(store.close)
        await store.db.upgrade()
        await load_pack(store.db, read_pack("harbour-ward"), clock=store.clock)
        watch = await store.storytellers.get(WATCH)
        watch = await store.storytellers.save(replace(watch, paused=False))
        assert watch.id is not None
        token = secrets.token_hex(8)
        world = SimWorld.harbour_town(epoch=f"invoke-{token}")
        bridge = WorldServer(world, token, cells=frozenset(r.id for r in world.town_map.rooms))
        bridge_url = await bridge.start()
        stack.push_async_callback(bridge.stop)
        model = echo_model()
        server = ScriptedResponsesServer(responder=ModelResponder(model))
        await server.start()
        stack.push_async_callback(server.stop)
        cfg = parse_config(
            {
                "database": {"url": url},
                "world": {"kind": "bridge", "url": bridge_url, "token_env": "T"},
                "model": {"api_key_env": "K", "base_url": server.base_url, "max_retries": 0},
                "limits": {"queue_size": 2},
            },
            "test",
        )
        runtime = await build_runtime(
            cfg, environ={"T": token, "K": "test-key"}, store=store, clock=SystemClock()
        )
        stack.push_async_callback(runtime.close)
        stop = asyncio.Event()
        task = asyncio.create_task(runtime.run(stop))
        try:
            await asyncio.wait_for(runtime.daemon.ready.wait(), WAIT)
            await asyncio.wait_for(bridge.wait_subscriptions(1), WAIT)
            yield Game(world, bridge, runtime, store, model, watch.id)
        finally:
            stop.set()
            await asyncio.wait_for(task, WAIT)


async def test_an_invocation_is_accepted_runs_a_turn_and_reports_its_outcome(game: Game) -> None:
    answer = await game.bridge.invoke(
        "harbour ward watch", "Ring the harbour bell.", request_id="bell-1", room_id=101
    )
    turn_key = f"st{game.watch_id}:direct:game:bell-1"
    assert answer == InvocationAnswer(
        "bell-1", accepted=True, reason="queued", storyteller_id=game.watch_id, turn_key=turn_key
    )
    outcome = await asyncio.wait_for(game.bridge.wait_outcome("bell-1"), WAIT)
    assert outcome.turn_key == turn_key and outcome.outcome == "completed"
    assert outcome.tool_calls == (ToolCall("EchoToRoom", True), ToolCall("Noop", True))
    assert outcome.run_id is not None
    run = await RunRepository(game.store.db).get(outcome.run_id)
    assert run.summary.turn_key == turn_key and run.summary.trigger_kind == "direct"
    prompt = str(game.model.requests[0].input)
    assert "Ring the harbour bell." in prompt and "[#101]" in prompt  # the text and the room
    assert "The harbour bell tolls twice." in game.world.output_of(1001)[-1]

    again = await game.bridge.invoke(WATCH, "Ring the harbour bell.", request_id="bell-1")
    assert again.accepted and again.duplicate and again.turn_key == turn_key
    game.bridge.outcomes.clear()
    assert await asyncio.wait_for(game.bridge.wait_outcome("bell-1"), WAIT) == outcome
    await game.runtime.pipeline.wait_idle()
    turns = [r for r in game.model.requests if r.tools]
    assert len(turns) == 2  # the one turn's two rounds: the duplicate ran nothing


@pytest.mark.parametrize(
    ("storyteller", "text", "reason"),
    [
        ("Nobody", "Hello.", "unknown_storyteller"),
        (999_999, "Hello.", "unknown_storyteller"),
        (WATCH, "   ", "blank_text"),
    ],
)
async def test_a_refusal_names_its_reason(
    game: Game, storyteller: str | int, text: str, reason: str
) -> None:
    answer = await game.bridge.invoke(storyteller, text, request_id="r-1")
    assert not answer.accepted and answer.reason == reason and answer.message
    assert answer.turn_key is None


async def test_a_paused_storyteller_and_a_full_queue_are_refused(game: Game) -> None:
    game.model.hold()  # the first turn waits for its model while the queue fills
    answers = [await game.bridge.invoke(WATCH, f"Call {n}.", request_id=f"q-{n}") for n in range(3)]
    assert [a.accepted for a in answers] == [True, True, False]
    assert answers[-1].reason == "queue_full" and "queue full" in answers[-1].message
    game.model.release()
    watch = await game.store.storytellers.get(WATCH)
    await game.store.storytellers.save(replace(watch, paused=True))
    await game.runtime.daemon.reload()
    paused = await game.bridge.invoke(WATCH, "Hello.", request_id="p-1")
    assert (paused.accepted, paused.reason) == (False, "paused")
