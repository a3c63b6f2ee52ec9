"""Fixtures of the alert tests: the fake Discord webhook and a watched fake clock."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from discord_doubles import FakeDiscord, WatchedClock


@pytest.fixture
async def discord() -> AsyncIterator[FakeDiscord]:
    server = FakeDiscord()
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
def clock() -> WatchedClock:
    return WatchedClock()
