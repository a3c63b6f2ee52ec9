"""A daemon on the sim world with the scripted model and the dashboard on its listener (the
fixtures are in conftest.py)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.app import ModelChoice, Runtime, build_runtime
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.config import parse_config
from storyteller_daemon.interchange.packs.files import read_pack
from storyteller_daemon.storage.seeding import load_pack
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.steps import attend_all, by_kind
from world_adapter.sim import SimWorld

TOKEN = "dashboard-test-token-7f3a"
WATCH = "Harbour Ward Watch"
SCRIPT_ECHO = 'mutters <script>window.__pwned = 1</script><img src=x onerror="window.__pwned=2">'
"""A player's emote that would run script if any page rendered it as markup."""
PRICES = {
    "gpt-5-mini": {"input": 0.25, "cached_input": 0.025, "output": 2.0},
    "gpt-5-nano": {"input": 0.05, "cached_input": 0.005, "output": 0.4},
}
USAGE = Usage(input_tokens=1200, cached_tokens=400, output_tokens=150, reasoning_tokens=20)


def scripted_model() -> ScriptedModel:
    """Interested in every event; a turn creates a situation and echoes, then stops."""
    situation = {
        "Title": "Cutpurse on the quay",
        "Description": "Wren robbed Maren.",
        "CharacterId": None,
        "RoomId": 101,
    }
    echo = {"Room": 101, "Text": "A watch whistle shrills along the quay."}
    return ScriptedModel(
        then=by_kind(
            attention=attend_all(why="a theft on the quay", usage=USAGE),
            turn=calls(("CreateSituation", situation), ("EchoToRoom", echo), usage=USAGE),
            follow_up=calls(("Noop", {}), usage=USAGE),
        )
    )


@dataclass
class Rig:
    """A running daemon whose listener serves the dashboard."""

    runtime: Runtime
    stop: asyncio.Event
    task: asyncio.Task[None]
    world: SimWorld
    store: Store
    watch_id: int
    db_path: Path

    @property
    def base(self) -> str:
        assert self.runtime.health is not None
        return f"http://127.0.0.1:{self.runtime.health.port}"

    def turns(self) -> int:
        return self.runtime.stats.turns.total()

    async def until(self, predicate: Any, seconds: float = 10) -> None:
        """Wait (bounded) for work the daemon does across threads and HTTP."""

        async def poll() -> None:
            while not predicate():  # noqa: ASYNC110 - no hook spans the database threads
                await asyncio.sleep(0.01)

        await asyncio.wait_for(poll(), seconds)

    async def one_turn(self, text: str = "slips a hand into Maren Tidewell's purse!") -> None:
        """A player acts on the quay; returns once the turn it causes is stored."""
        before = self.turns()
        self.world.emote(2003, text)
        await self.until(lambda: self.turns() > before)


async def start_rig(tmp_path: Path, *, token: str = TOKEN) -> Rig:
    db_path = tmp_path / "dashboard.db"
    url = f"sqlite+aiosqlite:///{db_path}"
    http = {"enabled": True, "port": 0, "token_env": "DASH_TOKEN" if token else ""}
    cfg = parse_config(
        {
            "database": {"url": url},
            "attention": {"quiet_seconds": 0, "max_wait_seconds": 0},
            "model": {"prices": PRICES},
            # the sim's scripted activity would move Wren out of the quay on real time
            "world": {"sim_activity": False},
            "http": http,
        },
        "test",
    )
    store = Store.open(url, clock=SystemClock())
    await store.db.upgrade()
    await load_pack(store.db, read_pack("harbour-ward"), clock=store.clock)
    watch = await store.storytellers.get(WATCH)
    await store.storytellers.save(replace(watch, paused=False, heartbeats=frozenset()))
    assert watch.id is not None
    world = SimWorld.harbour_town()
    model = scripted_model()
    runtime = await build_runtime(
        cfg,
        environ={"DASH_TOKEN": token} if token else {},
        world=world,
        choice=ModelChoice(model, "scripted"),
        store=store,
        clock=FakeClock(),
    )
    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    await asyncio.wait_for(runtime.daemon.ready.wait(), 5)
    rig = Rig(runtime, stop, task, world, store, watch.id, db_path)
    await rig.until(lambda: world.waiting_subscriptions > 0)
    return rig


async def stop_rig(rig: Rig) -> None:
    rig.stop.set()
    await asyncio.wait_for(rig.task, 10)
    await rig.runtime.close()
