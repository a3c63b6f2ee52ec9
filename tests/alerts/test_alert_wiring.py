"""Alerts raised by the running daemon reach a (fake) Discord: refused models, stream gaps,
queue overflow and errors written to the log."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import pytest
from discord_doubles import FLUSH_TICK, FakeDiscord, WatchedClock

from storyteller_daemon.app import ModelChoice, Runtime, build_runtime
from storyteller_daemon.config import parse_config
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import ModelFatalError
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import settle
from storyteller_daemon.testing.model import ScriptedModel, calls
from storyteller_daemon.testing.world import InstrumentedWorld
from world_adapter.errors import CursorExpired
from world_adapter.protocol import WorldClient
from world_adapter.sim import SimWorld

REFUSAL = "openai:test: HTTP 401 (invalid_api_key): the API key was rejected"


def noop_model() -> ScriptedModel:
    """Answers every request with Noop."""
    return ScriptedModel(then=calls(("Noop", {})))


def gappy_world() -> InstrumentedWorld[SimWorld]:
    """The sim world, except that the first subscription finds our cursor expired."""
    world = InstrumentedWorld(SimWorld.harbour_town())
    return world.fail("subscribe", CursorExpired("the game keeps 1000 events"), times=1)


def broken_world() -> InstrumentedWorld[SimWorld]:
    """A world whose stream fails with an error the daemon does not expect (a bug)."""
    world = InstrumentedWorld(SimWorld.harbour_town())
    return world.fail("subscribe", RuntimeError("a bug in the world client"))


@dataclass
class Rig:
    runtime: Runtime
    clock: WatchedClock
    storyteller: Storyteller
    stop: asyncio.Event
    task: asyncio.Task[None]

    async def turns(self, count: int) -> None:
        for _ in range(count):
            assert await self.runtime.pipeline.direct(self.storyteller, "The tide turns.")
        await asyncio.wait_for(self.runtime.pipeline.wait_idle(), 5)


@pytest.fixture
async def rigs(sqlite_store: Store, discord: FakeDiscord) -> AsyncIterator[Any]:
    running: list[Rig] = []

    async def make(
        model: ScriptedModel, world: WorldClient | None = None, queue_size: int = 25
    ) -> Rig:
        st = await sqlite_store.storytellers.create("Harbour Watch")
        st = await sqlite_store.storytellers.save(replace(st, paused=False))
        cfg = parse_config(
            {
                "database": {"url": "sqlite+aiosqlite:///unused.db"},
                "alerts": {"discord_webhook_env": "TEST_WEBHOOK"},
                "limits": {"queue_size": queue_size},
            },
            "test",
        )
        clock = WatchedClock()
        runtime = await build_runtime(
            cfg,
            environ={"TEST_WEBHOOK": discord.url},
            world=world or SimWorld.harbour_town(),
            choice=ModelChoice(model, model.name),
            store=sqlite_store,
            clock=clock,
            reload_seconds=10_000,  # long fake hours without settings polls
        )
        stop = asyncio.Event()
        task = asyncio.create_task(runtime.run(stop))
        await asyncio.wait_for(runtime.daemon.ready.wait(), 5)
        await settle()
        storyteller = runtime.pipeline.router.storyteller(st.id or 0)
        assert storyteller is not None
        rig = Rig(runtime, clock, storyteller, stop, task)
        running.append(rig)
        return rig

    yield make
    for rig in running:  # the tests stop their rigs; this only cleans up after a failed one
        rig.stop.set()
        await asyncio.wait_for(asyncio.gather(rig.task, return_exceptions=True), 5)


async def stop(rig: Rig) -> None:
    rig.stop.set()
    await asyncio.wait_for(rig.task, 5)


async def test_a_refused_model_is_reported_once_an_hour_per_storyteller(
    rigs: Any, discord: FakeDiscord
) -> None:
    rig = await rigs(ScriptedModel(then=ModelFatalError(REFUSAL)))
    await rig.turns(3)
    await discord.wait_for_posts(1)
    (embed,) = discord.posts[0]["embeds"]
    assert embed["title"] == "Harbour Watch: the model endpoint refused its turn"
    assert embed["description"].startswith(f"ModelFatalError: {REFUSAL}\n\n")
    assert "`storyteller doctor`" in embed["description"]
    await rig.clock.advance(3600 + FLUSH_TICK)
    await discord.wait_for_posts(2)
    await stop(rig)
    assert discord.titles()[1] == (
        "Harbour Watch: the model endpoint refused its turn (×2 in the last 1 h)"
    )


async def test_a_stream_gap_and_logged_errors_are_alerted(
    rigs: Any, discord: FakeDiscord, caplog: pytest.LogCaptureFixture
) -> None:
    rig = await rigs(noop_model(), world=gappy_world())
    await discord.wait_for_posts(1)
    try:
        raise KeyError("player text must not leave the log")
    except KeyError:
        logging.getLogger("storyteller_daemon.runtime.pipeline").exception(
            "attention stage failed for storyteller %s", 7
        )
    await discord.wait_for_posts(2)
    await stop(rig)
    logging.getLogger("storyteller_daemon.runtime.pipeline").error("after the daemon stopped")
    await settle()
    gap, logged = (post["embeds"][0] for post in discord.posts)
    assert gap["title"] == (
        "World events were lost: the game could not replay from the daemon's cursor"
    )
    assert gap["footer"]["text"].endswith("· stream_gap · warning")
    assert rig.runtime.daemon.stream_gaps == 1
    assert logged["title"] == "attention stage failed for storyteller 7"
    assert logged["description"] == (
        "Failed with KeyError. Full details were written to the daemon log."
    )
    assert "player text must not leave the log" in caplog.text  # the log keeps the details
    assert len(discord.posts) == 2


async def test_queue_overflow_is_alerted_with_the_number_dropped(
    rigs: Any, discord: FakeDiscord
) -> None:
    model = noop_model()
    model.hold()  # turns hang until released, so the queue fills
    rig = await rigs(model, queue_size=3)
    accepted = [await rig.runtime.pipeline.direct(rig.storyteller, f"call {n}") for n in range(8)]
    assert accepted.count(False) == 5
    await rig.clock.advance(30)
    await discord.wait_for_posts(1)
    model.release()
    await asyncio.wait_for(rig.runtime.pipeline.wait_idle(), 5)
    await stop(rig)
    assert discord.titles() == [
        "Harbour Watch: 5 trigger(s) dropped because its work queue was full"
    ]


async def test_a_daemon_that_dies_on_a_bug_says_so_before_it_exits(
    rigs: Any, discord: FakeDiscord
) -> None:
    rig = await rigs(noop_model(), world=broken_world())
    with pytest.raises(ExceptionGroup):
        await asyncio.wait_for(rig.task, 5)
    assert discord.titles() == ["the daemon stopped on an unexpected RuntimeError"]
