"""Fixtures of the dashboard tests: a running daemon with the dashboard, an HTTP client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from dashboard_rig import Rig, start_rig, stop_rig


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    running = await start_rig(tmp_path)
    try:
        yield running
    finally:
        await stop_rig(running)


@pytest.fixture
async def client() -> AsyncIterator[aiohttp.ClientSession]:
    """A client session without redirects followed, keeping cookies."""
    jar = aiohttp.CookieJar(unsafe=True)  # cookies for 127.0.0.1
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        yield session
