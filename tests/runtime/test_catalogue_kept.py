"""The running daemon keeps the world's prog catalogue for admin commands run while the world
cannot be asked from their shell."""

from __future__ import annotations

from datetime import UTC, datetime

from storyteller_daemon.app import build_runtime
from storyteller_daemon.config import parse_config
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from world_adapter.sim import SimWorld


async def test_once_running_the_daemon_stores_the_worlds_progs(sqlite_store: Store) -> None:
    cfg = parse_config({"database": {"url": "sqlite+aiosqlite:///unused.db"}}, "test")
    world = SimWorld.harbour_town()
    runtime = await build_runtime(
        cfg, environ={}, world=world, store=sqlite_store, clock=FakeClock()
    )
    assert await sqlite_store.catalogues.load("sim") is None
    runtime.daemon.ready.set()  # what a started daemon does first
    await runtime.keep_catalogue()
    kept = await sqlite_store.catalogues.load(cfg.world.identity)
    assert kept is not None and kept.progs == await world.progs()
    assert kept.fetched_at <= datetime.now(UTC)


async def test_a_newer_catalogue_replaces_the_old_one(store: Store) -> None:
    progs = await SimWorld.harbour_town().progs()
    then, now = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC)
    await store.catalogues.save("bridge ws://game", progs, then)
    await store.catalogues.save("bridge ws://game", progs[:2], now)
    kept = await store.catalogues.load("bridge ws://game")
    assert kept is not None and (kept.progs, kept.fetched_at) == (progs[:2], now)
    assert await store.catalogues.load("sim") is None  # per world
