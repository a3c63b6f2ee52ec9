"""Fixtures of the agent tests: the sim world, a real SQLite store, a saved storyteller."""

from __future__ import annotations

import pytest

from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.storage.store import Store
from world_adapter.sim import SimWorld


@pytest.fixture
def world() -> SimWorld:
    """The harbour town, players online, no events yet."""
    return SimWorld.harbour_town()


@pytest.fixture
def limits() -> LimitsConfig:
    """The default limits (16 rounds, 30 s, 3 malformed and 2 missing-call retries)."""
    return LimitsConfig()


@pytest.fixture
async def storyteller(sqlite_store: Store) -> Storyteller:
    """A saved storyteller with the default settings."""
    return await sqlite_store.storytellers.create("Harbour Watch")


@pytest.fixture
def services(sqlite_store: Store, world: SimWorld) -> ToolContext:
    """The tools' services, not yet bound to a turn."""
    return ToolContext(
        TurnServices(
            world=world,
            situations=sqlite_store.situations,
            memories=sqlite_store.memories,
            references=sqlite_store.references,
        )
    )


@pytest.fixture
def ctx(services: ToolContext, storyteller: Storyteller) -> ToolContext:
    """The services bound to one turn of `storyteller`."""
    return services.for_turn(storyteller, "turn-1")
