"""PostgreSQL's LISTEN/NOTIFY, the one way the daemons of a cluster wake each other.

`notify` sends a payload on a channel inside the caller's transaction (PostgreSQL delivers it
when that commits, with the transaction's other notifications, in order); `listen` calls back
with every payload heard on a channel while inside, on a connection of its own. On SQLite, which
has one daemon, nothing is sent or heard.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.storage.database import Database

NOTIFY_BYTES = 7_999
"""The most bytes PostgreSQL carries in one notification's payload."""


async def notify(session: AsyncSession, channel: str, payload: str) -> None:
    """Send `payload` on `channel` when the session's transaction commits (PostgreSQL only)."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_notify(channel, payload)))


@asynccontextmanager
async def listen(db: Database, channel: str, heard: Callable[[str], None]) -> AsyncIterator[None]:
    """While inside, call `heard` with each payload sent on `channel` (quick: it must not
    wait). LISTEN runs on one connection of its own; on SQLite, nothing is heard."""
    if db.dialect != "postgresql":
        yield
        return
    async with db.engine.connect() as connection:
        raw = await connection.get_raw_connection()
        listener = raw.driver_connection
        assert listener is not None  # an open asyncpg connection

        def notified(_connection: object, _pid: int, _channel: str, payload: str) -> None:
            heard(payload)

        await listener.add_listener(channel, notified)
        try:
            yield
        finally:
            await listener.remove_listener(channel, notified)
