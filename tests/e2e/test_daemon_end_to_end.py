"""The whole daemon on the sim world, through the real openai SDK over HTTP to the test server.

A world echo → attention says interested → CreateSituation and a prog call → the prog's effect is
visible to a player in the sim world → the situation is persisted; after a restart the situation
appears in the next prompt's situation block; SIGTERM ends `storyteller run` cleanly.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel
from storyteller_daemon.app import ModelChoice, build_runtime
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import parse_config
from storyteller_daemon.domain.approvals import ApprovalState
from storyteller_daemon.interchange.packs.files import read_pack
from storyteller_daemon.storage.approvals import ApprovalRepository
from storyteller_daemon.storage.seeding import load_pack
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock, settle
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.model_responder import ModelResponder
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.steps import attend_all, by_kind
from world_adapter.sim import SimWorld

WATCH = "Harbour Ward Watch"


def wants_verdict(body: dict[str, Any]) -> bool:
    return "text" in body and body["text"].get("format", {}).get("type") == "json_schema"


def storyteller_model() -> ModelResponder:
    """Interested in anything; first round creates a situation and echoes; then Noop."""
    situation = {
        "Title": "Cutpurse on the quay",
        "Description": "Wren robbed Maren.",
        "CharacterId": None,
        "RoomId": 101,
    }
    echo = {"Room": 101, "Text": "A watch whistle shrills along the quay."}
    model = ScriptedModel(
        then=by_kind(
            attention=attend_all(why="a theft on the quay"),
            turn=calls(("CreateSituation", situation), ("EchoToRoom", echo), reasoning=True),
            follow_up=calls(("Noop", {})),
        )
    )
    return ModelResponder(model)


async def prepare(store: Store, *, heartbeats: bool = True) -> int:
    await store.db.upgrade()
    await load_pack(store.db, read_pack("harbour-ward"), clock=store.clock)
    watch = await store.storytellers.get(WATCH)
    kept = watch.heartbeats if heartbeats else frozenset()
    await store.storytellers.save(replace(watch, paused=False, heartbeats=kept))
    assert watch.id is not None
    return watch.id


async def start(cfg: Any, store: Store, world: SimWorld, server: ScriptedResponsesServer) -> Any:
    return await start_with(cfg, store, world, server, FakeClock())


async def start_with(
    cfg: Any, store: Store, world: SimWorld, server: ScriptedResponsesServer, clock: FakeClock
) -> Any:
    model = OpenAIResponsesModel(api_key="test-key", base_url=server.base_url, max_retries=0)
    runtime = await build_runtime(
        cfg, world=world, choice=ModelChoice(model, model.name), store=store, clock=clock
    )
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    await asyncio.wait_for(runtime.daemon.ready.wait(), 5)
    await asyncio.wait_for(_until(lambda: world.waiting_subscriptions > 0), 5)
    return runtime, stop, task


async def _until(predicate: Any) -> None:
    """Wait for work the daemon does across HTTP and database threads (bounded by callers)."""
    while not predicate():  # noqa: ASYNC110 - no hook to wait on across the HTTP round trips
        await asyncio.sleep(0.01)


async def test_event_to_prog_effect_to_persisted_situation_and_restart(db_url: str) -> None:
    # The fake clock never advances: judge each event at once instead of waiting for a window.
    at_once = {"quiet_seconds": 0, "max_wait_seconds": 0}
    cfg = parse_config({"database": {"url": db_url}, "attention": at_once}, "test")
    store = Store.open(db_url, clock=SystemClock())
    watch_id = await prepare(store)
    world = SimWorld.harbour_town()
    async with ScriptedResponsesServer(responder=storyteller_model()) as server:
        runtime, stop, task = await start(cfg, store, world, server)
        # someone on the quay (room 101), where the storyteller then acts: the policy lets a
        # turn act only in the rooms of its events
        world.emote(2003, "slips a hand into Maren Tidewell's purse and runs!")
        await asyncio.wait_for(_until(lambda: runtime.stats.turns.total() >= 1), 10)
        stop.set()
        await asyncio.wait_for(task, 10)
        await runtime.close()

        # the prog's effect reached the player standing in the room
        assert "A watch whistle shrills along the quay." in world.output_of(1001)
        # the situation is persisted, scoped to the room
        store = Store.open(db_url, clock=SystemClock())
        situations = await store.situations.list(watch_id)
        assert [(s.title, s.room_id) for s in situations] == [("Cutpurse on the quay", 101)]
        # request shape: attention first (json schema, attention model), then two tool rounds
        bodies = server.requests
        assert wants_verdict(bodies[0]) and bodies[0]["model"] == "gpt-5-nano"
        assert [b["tool_choice"] for b in bodies[1:]] == ["required", "auto"]
        assert all(b["store"] is False for b in bodies)
        round_two_types = [item.get("type", "message") for item in bodies[2]["input"]]
        assert round_two_types[:2] == ["message", "reasoning"]
        assert round_two_types.count("function_call_output") == 2

        # restart: a new daemon over the same database sees the situation in its prompt
        world2 = SimWorld.harbour_town(epoch="sim-2")
        seen = len(server.requests)
        runtime2, stop2, task2 = await start(cfg, store, world2, server)
        world2.say(1001, "Has anyone seen my purse?")
        await asyncio.wait_for(_until(lambda: runtime2.stats.turns.total() >= 1), 10)
        stop2.set()
        await asyncio.wait_for(task2, 10)
        await runtime2.close()
        turn_prompt = next(b for b in server.requests[seen:] if not wants_verdict(b))["input"][0][
            "content"
        ]
        # Written in a turn a player's speech started: framed as from players' words.
        line = f'- #{situations[0].id} (room #101) [from players]: "Cutpurse on the quay"'
        assert line in turn_prompt
    # nothing the daemon started is still running
    await settle()
    leftovers = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert leftovers == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_the_daemon_cleanly(tmp_path: Path, signum: signal.Signals) -> None:
    config = tmp_path / "storyteller.toml"
    config.write_text(
        f'[database]\nurl = "sqlite+aiosqlite:///{tmp_path / "s.db"}"\n'
        '[model]\napi_key_env = "STORYTELLER_TEST_NO_KEY"\n',
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "STORYTELLER_TEST_NO_KEY"}
    base = [sys.executable, "-m", "storyteller_daemon", "--config", str(config)]
    subprocess.run([*base, "db", "upgrade"], check=True, env=env, capture_output=True, timeout=60)
    proc = subprocess.Popen(
        [*base, "run"], env=env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    started: list[str] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # wait until it is up and listening for signals
            started.append(line)
            if "ready:" in line:
                break
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = "".join(started) + err  # what it said while starting, too
    assert proc.returncode == 0, err
    assert "stopped cleanly" in err
    assert "Traceback" not in err


async def policy_command(db_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`storyteller policy ARGS` as an admin runs it, in another process."""
    command = [sys.executable, "-m", "storyteller_daemon", "--db", db_url, "policy", *args]
    return await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, timeout=60
    )


async def test_a_call_marked_for_approval_runs_once_after_an_admin_approves_it(
    db_url: str,
) -> None:
    at_once = {"quiet_seconds": 0, "max_wait_seconds": 0}
    policy = {"approve": ["*/EchoToRoom"]}
    still = {"sim_activity": False}  # the theft is the only event: one turn, one parked call
    cfg = parse_config(
        {"database": {"url": db_url}, "attention": at_once, "policy": policy, "world": still},
        "test",
    )
    store = Store.open(db_url, clock=SystemClock())
    # Heartbeats run on the fake clock too: none here either.
    await prepare(store, heartbeats=False)
    world = SimWorld.harbour_town()
    whistle = "A watch whistle shrills along the quay."
    async with ScriptedResponsesServer(responder=storyteller_model()) as server:
        clock = FakeClock(datetime.now(UTC))  # the command line decides in real time
        runtime, stop, task = await start_with(cfg, store, world, server, clock)
        world.emote(2003, "slips a hand into Maren Tidewell's purse and runs!")
        await asyncio.wait_for(_until(lambda: runtime.stats.turns.total() >= 1), 10)
        assert whistle not in world.output_of(1001)  # parked, not run
        listed = await policy_command(db_url, "approvals", "--json")
        [parked] = json.loads(listed.stdout)
        assert parked["tool"] == "EchoToRoom" and parked["state"] == "pending"
        approved = await policy_command(db_url, "approve", str(parked["id"]))
        assert approved.returncode == 0, approved.stderr
        await clock.advance(5)  # the daemon's next look at parked calls
        await asyncio.wait_for(_until(lambda: whistle in world.output_of(1001)), 10)
        stop.set()
        await asyncio.wait_for(task, 10)
        await runtime.close()

        # a restarted daemon finishes the call if the stop cut it off, and never runs it again
        store = Store.open(db_url, clock=SystemClock())
        clock = FakeClock(datetime.now(UTC))
        runtime, stop, task = await start_with(cfg, store, world, server, clock)
        approvals = ApprovalRepository(store.db)
        for _ in range(500):  # the start-up pass; bounded
            if (await approvals.get(parked["id"])).state is ApprovalState.DONE:
                break
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.wait_for(task, 10)
        await runtime.close()
    assert world.output_of(1001).count(whistle) == 1
    listed = await policy_command(db_url, "approvals", "--all", "--json")
    everything = json.loads(listed.stdout)
    assert len(everything) == 1, everything
    [done] = everything
    assert done["state"] == "done", done["result"]
    assert json.loads(done["result"])["ok"] is True
