"""PostgreSQL connections are pinged before use only after resting in the pool a while."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from storyteller_daemon.errors import StorageError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.pool_ping import PING_AFTER_IDLE_SECONDS
from storyteller_daemon.testing.clock import FakeClock

pytestmark = pytest.mark.postgres


async def _backend(db: Database) -> int:
    async with db.session() as session:
        return int(await session.scalar(text("SELECT pg_backend_pid()")))


async def _end(db: Database, pid: int) -> None:
    """What a server restart (or its idle-session timeout) does to one pooled connection."""
    async with db.session() as session:
        ended = await session.scalar(text("SELECT pg_terminate_backend(:pid, 5000)"), {"pid": pid})
    assert ended is True


def _pinged_and_plain(pg_url: str, clock: FakeClock) -> tuple[Database, Database]:
    """A one-connection database pinged on rest on `clock`, and another that ends its sessions."""
    return Database(pg_url, pool_size=1, clock=clock), Database(pg_url, pool_size=1, clock=None)


async def test_a_connection_that_rested_is_pinged_and_replaced_when_its_session_ended(
    pg_url: str,
) -> None:
    clock = FakeClock()
    db, other = _pinged_and_plain(pg_url, clock)
    try:
        first = await _backend(db)
        await _end(other, first)
        await clock.advance(PING_AFTER_IDLE_SECONDS)
        second = await _backend(db)  # the ping failed: a new connection, no error
        assert second != first
    finally:
        await db.close()
        await other.close()


async def test_a_connection_the_server_ended_a_moment_ago_is_replaced_without_a_ping(
    pg_url: str,
) -> None:
    clock = FakeClock()
    db, other = _pinged_and_plain(pg_url, clock)
    try:
        first = await _backend(db)
        await _end(other, first)
        assert await _backend(db) != first  # the driver saw it close
    finally:
        await db.close()
        await other.close()


async def test_only_a_connection_that_rested_is_pinged(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    db = Database(pg_url, pool_size=1, clock=clock)
    dialect = db.engine.sync_engine.dialect
    pinged: list[object] = []
    ping = dialect.do_ping

    def counted(dbapi_conn: object) -> bool:
        pinged.append(dbapi_conn)
        return ping(dbapi_conn)

    monkeypatch.setattr(dialect, "do_ping", counted)
    try:
        for _ in range(3):
            await _backend(db)
            await clock.advance(PING_AFTER_IDLE_SECONDS / 2)
        assert pinged == []
        await clock.advance(PING_AFTER_IDLE_SECONDS / 2)
        await _backend(db)
        assert len(pinged) == 1
    finally:
        await db.close()


async def test_a_connection_whose_last_use_failed_is_pinged_at_once(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = Database(pg_url, pool_size=1, clock=FakeClock())
    dialect = db.engine.sync_engine.dialect
    pinged: list[object] = []
    ping = dialect.do_ping

    def counted(dbapi_conn: object) -> bool:
        pinged.append(dbapi_conn)
        return ping(dbapi_conn)

    monkeypatch.setattr(dialect, "do_ping", counted)
    try:
        await _backend(db)
        with pytest.raises(StorageError, match="missing"):
            async with db.session() as session:
                await session.execute(text("SELECT * FROM missing"))
        await _backend(db)
        assert len(pinged) == 1
        await _backend(db)
        assert len(pinged) == 1  # its use went well: not again
    finally:
        await db.close()


async def test_without_a_clock_every_checkout_is_pinged(pg_url: str) -> None:
    db, other = Database(pg_url, pool_size=1, clock=None), Database(pg_url, pool_size=1, clock=None)
    try:
        first = await _backend(db)
        await _end(other, first)
        assert await _backend(db) != first
    finally:
        await db.close()
        await other.close()
