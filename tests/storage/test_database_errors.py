"""Database errors reach the daemon as `StorageError`, which every loop retries later."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from storyteller_daemon.errors import StorageError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.testing.clock import FakeClock

pytestmark = pytest.mark.postgres


async def test_a_pool_with_no_connection_free_in_time_is_a_storage_error(pg_url: str) -> None:
    """The daemon retries a `StorageError` (the world pump, the sweeps); a pool that had no
    connection free in time (a database slower than the daemon's demand, a process resumed
    after a freeze) must be one, not an unexpected error that stops the daemon."""
    db = Database(pg_url, pool_size=1, clock=FakeClock())
    db.engine.sync_engine.pool._timeout = 0.05  # type: ignore[attr-defined]  # not 30 s
    try:
        async with db.session() as held:
            await held.execute(text("SELECT 1"))
            with pytest.raises(StorageError, match="no database connection free in time"):
                async with db.session() as session:
                    await session.execute(text("SELECT 1"))
    finally:
        await db.close()
