"""The daemon with its attention on a local server and its turns elsewhere, or everything local.

Two shipped Responses servers stand in for OpenAI and for a local server whose models do not
reason, which refuses reasoning fields and the encrypted-reasoning include with HTTP 400 as such
servers do. The whole daemon runs (intake, attention gate, backlog, turn, ledger) on the sim
world; a theft must reach a turn, each request must reach its model's server, and no request
may carry what its model does not take.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

from storyteller_daemon.app import build_runtime
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import parse_config
from storyteller_daemon.domain.work import WorkState
from storyteller_daemon.interchange.packs.files import read_pack
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.seeding import load_pack
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.model_responder import ModelResponder
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.steps import attend_all, by_kind
from world_adapter.sim import SimWorld

WATCH = "Harbour Ward Watch"
LOCAL_MODEL = "llama3.2"


def storyteller_model() -> ScriptedModel:
    """Attends to thefts only; a turn opens a situation about it."""
    situation = {
        "Title": "Thief at the quay",
        "Description": "Someone cried thief.",
        "CharacterId": None,
        "RoomId": None,
    }
    return ScriptedModel(
        then=by_kind(
            attention=attend_all(why="a theft", only=lambda line: "thief" in line),
            turn=calls(("CreateSituation", situation)),
            follow_up=calls(("Noop", {"Reason": "done"})),
        )
    )


@dataclass
class Daemon:
    store: Store
    openai: ScriptedResponsesServer
    local: ScriptedResponsesServer


@pytest.fixture
async def servers() -> AsyncIterator[tuple[ScriptedResponsesServer, ScriptedResponsesServer]]:
    async with (
        ScriptedResponsesServer(responder=ModelResponder(storyteller_model())) as openai,
        ScriptedResponsesServer(
            responder=ModelResponder(storyteller_model()), reasoning=False
        ) as local,
    ):
        yield openai, local


async def run_a_theft(
    tmp_path: Path,
    servers: tuple[ScriptedResponsesServer, ScriptedResponsesServer],
    *,
    event_model: str,
) -> Daemon:
    openai, local = servers
    url = f"sqlite+aiosqlite:///{tmp_path / 'local.db'}"
    store = Store.open(url, clock=SystemClock())
    await store.db.upgrade()
    await load_pack(store.db, read_pack("harbour-ward"), clock=store.clock)
    watch = await store.storytellers.get(WATCH)
    watch = await store.storytellers.save(
        replace(
            watch,
            paused=False,
            model=event_model,
            time_model=event_model,
            attention_model=LOCAL_MODEL,
        )
    )
    assert watch.id is not None
    cfg = parse_config(
        {
            "database": {"url": url},
            "model": {"api_key_env": "K", "base_url": openai.base_url, "max_retries": 0},
            "endpoints": {"local": {"base_url": local.base_url}},
            "models": {LOCAL_MODEL: {"endpoint": "local"}},
            "attention": {"quiet_seconds": 0.05, "max_wait_seconds": 0.2, "max_retries": 0},
            "reflection": {"enabled": False},
        },
        "test",
    )
    world = SimWorld.harbour_town()
    runtime = await build_runtime(
        cfg, environ={"K": "sk-test"}, world=world, store=store, clock=SystemClock()
    )
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    try:
        await asyncio.wait_for(runtime.daemon.ready.wait(), 10)
        # The daemon is ready before its subscription is: events emoted earlier reach nobody.
        await asyncio.wait_for(_until_subscribed(world), 10)
        world.emote(2003, "shouts: thief! A purse is gone.")
        world.emote(1001, "hauls a crate along the quay.")
        await asyncio.wait_for(_until_done(store, watch.id), 20)
        await asyncio.wait_for(runtime.pipeline.wait_idle(), 20)
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await runtime.close()
    return Daemon(store, openai, local)


async def _until_subscribed(world: SimWorld) -> None:
    for _ in range(1000):
        if world.waiting_subscriptions > 0:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the daemon never subscribed to the world")


async def _until_done(store: Store, storyteller_id: int) -> None:
    backlog = BacklogRepository(store.db, store.clock)
    while True:
        items = await backlog.items(storyteller_id, limit=100)
        if any("thief" in i.payload and i.state is WorkState.DONE for i in items):
            return
        await asyncio.sleep(0.02)


def without_reasoning_fields(body: dict[str, Any]) -> bool:
    return not {"reasoning", "include", "prompt_cache_key"} & set(body)


async def test_attention_on_a_local_server_and_turns_on_openai(
    tmp_path: Path, servers: tuple[ScriptedResponsesServer, ScriptedResponsesServer]
) -> None:
    daemon = await run_a_theft(tmp_path, servers, event_model="gpt-5-mini")
    try:
        local, openai = daemon.local.requests, daemon.openai.requests
        assert local and {r["model"] for r in local} == {LOCAL_MODEL}
        assert all(not r.get("tools") for r in local)  # the gate's requests only
        assert all(without_reasoning_fields(r) for r in local)
        assert openai and {r["model"] for r in openai} == {"gpt-5-mini"}
        assert all(r.get("tools") for r in openai)  # the turn's rounds only
        assert openai[0]["reasoning"] == {"effort": "medium"}
        assert openai[0]["include"] == ["reasoning.encrypted_content"]
        [situation] = await daemon.store.situations.list(1)
        assert situation.title == "Thief at the quay"
        statuses = {line.key for line in await LedgerRepository(daemon.store.db).totals("status")}
        assert statuses == {"ok"}
    finally:
        await daemon.store.close()


async def test_the_whole_daemon_on_a_server_that_refuses_reasoning_fields(
    tmp_path: Path, servers: tuple[ScriptedResponsesServer, ScriptedResponsesServer]
) -> None:
    daemon = await run_a_theft(tmp_path, servers, event_model=LOCAL_MODEL)
    try:
        assert daemon.openai.requests == []
        local = daemon.local.requests
        assert any(r.get("tools") for r in local) and any(not r.get("tools") for r in local)
        assert all(without_reasoning_fields(r) for r in local)
        [situation] = await daemon.store.situations.list(1)
        assert situation.title == "Thief at the quay"
    finally:
        await daemon.store.close()
