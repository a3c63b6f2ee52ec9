"""PostgreSQL connections are pinged before use only after resting in the pool a while."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from storyteller_daemon.errors import StorageError
from storyteller_daemon.storage.database import PING_AFTER_IDLE_SECONDS, Database
from storyteller_daemon.testing.clock import FakeClock

pytestmark = pytest.mark.postgres


async def _backend(db: Database) -> int:
    async with db.session() as session:
        return int(await session.scalar(text("SELECT pg_backend_pid()")))


async def _end(db: Database, pid: int) -> None:
    """What a server restart (or its idle-session timeout) does to one pooled connection."""
    async with db.session() as session:
        ended = await session.scalar(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    assert ended is True


async def test_a_connection_that_rested_is_pinged_and_replaced_when_its_session_ended(
    pg_url: str,
) -> None:
    clock = FakeClock()
    db, other = Database(pg_url, pool_size=1, clock=clock), Database(pg_url, pool_size=1)
    try:
        first = await _backend(db)
        await _end(other, first)
        await clock.advance(PING_AFTER_IDLE_SECONDS)
        second = await _backend(db)  # the ping failed: a new connection, no error
        assert second != first
    finally:
        await db.close()
        await other.close()


async def test_a_connection_back_in_the_pool_a_moment_ago_is_used_without_a_ping(
    pg_url: str,
) -> None:
    clock = FakeClock()
    db, other = Database(pg_url, pool_size=1, clock=clock), Database(pg_url, pool_size=1)
    try:
        first = await _backend(db)
        await _end(other, first)
        await clock.advance(PING_AFTER_IDLE_SECONDS / 2)
        # Not pinged: the unit of work finds the session ended (and the pool replaces it).
        with pytest.raises(StorageError):
            await _backend(db)
        assert await _backend(db) != first
    finally:
        await db.close()
        await other.close()


async def test_without_a_clock_every_checkout_is_pinged(pg_url: str) -> None:
    db, other = Database(pg_url, pool_size=1), Database(pg_url, pool_size=1)
    try:
        first = await _backend(db)
        await _end(other, first)
        assert await _backend(db) != first
    finally:
        await db.close()
        await other.close()
