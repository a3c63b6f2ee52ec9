"""PostgreSQL's LISTEN/NOTIFY, the one way the daemons of a cluster wake each other.

`notify` sends a payload on a channel inside the caller's transaction (PostgreSQL delivers it
when that commits, with the transaction's other notifications, in order); `listen` calls back
with every payload heard on a channel while inside, on a connection of its own, opened again
when it ends (the caller hears that it may have missed some). On SQLite, which has one daemon,
nothing is sent or heard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.storage.database import Database

log = logging.getLogger(__name__)

NOTIFY_BYTES = 7_999
"""The most bytes PostgreSQL carries in one notification's payload."""


async def notify(session: AsyncSession, channel: str, payload: str) -> None:
    """Send `payload` on `channel` when the session's transaction commits (PostgreSQL only)."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_notify(channel, payload)))


RELISTEN_SECONDS = 1.0
"""The wait before listening again on a new connection once one ended; it doubles while
that fails, up to `RELISTEN_MAX_SECONDS`."""
RELISTEN_MAX_SECONDS = 30.0


@asynccontextmanager
async def listen(
    db: Database,
    channel: str,
    heard: Callable[[str], None],
    clock: Clock,
    *,
    missed: Callable[[], None] | None = None,
) -> AsyncIterator[None]:
    """While inside, call `heard` with each payload sent on `channel` (quick: it must not
    wait). LISTEN runs on one connection of its own; on SQLite, nothing is heard.

    When that connection ends (the server restarted, a proxy or the network cut it), the
    payloads sent meanwhile are lost: `listen` logs it, listens again on a new connection
    (after `RELISTEN_SECONDS` on `clock`, doubling while that fails) and then calls `missed`,
    so the caller looks for what it may have missed.

    Raises:
        Exception: the first connection could not be opened (the caller retries).
    """
    if db.dialect != "postgresql":
        yield
        return
    listening = _Listening(db, channel, heard)
    await listening.open()
    keeping = asyncio.create_task(listening.keep(clock, missed), name=f"listen:{channel}")
    try:
        yield
    finally:
        keeping.cancel()
        await asyncio.gather(keeping, return_exceptions=True)
        await listening.close()


class _Listening:
    """One channel's LISTEN connection, opened again when it ends."""

    def __init__(self, db: Database, channel: str, heard: Callable[[str], None]) -> None:
        self._db = db
        self._channel = channel
        self._heard = heard
        self._connection: AsyncConnection | None = None
        self._ended = asyncio.Event()

    def _notified(self, _connection: object, _pid: int, _channel: str, payload: str) -> None:
        self._heard(payload)

    def _terminated(self, _connection: object) -> None:
        self._ended.set()

    async def open(self) -> None:
        """Open a connection and LISTEN on it."""
        connection = await self._db.engine.connect()
        try:
            raw = await connection.get_raw_connection()
            listener = raw.driver_connection
            assert listener is not None  # an open asyncpg connection
            self._ended.clear()
            listener.add_termination_listener(self._terminated)
            await listener.add_listener(self._channel, self._notified)
        except BaseException:
            with contextlib.suppress(Exception):
                await connection.invalidate()
            raise
        self._connection = connection

    async def keep(self, clock: Clock, missed: Callable[[], None] | None) -> None:
        """Whenever the connection ends, listen again on a new one, then call `missed`."""
        while True:
            await self._ended.wait()
            await self._drop()
            delay = RELISTEN_SECONDS
            log.warning(
                "the LISTEN connection on %s ended; notifications sent meanwhile are missed, "
                "listening again in %g s",
                self._channel,
                delay,
            )
            while True:
                await clock.sleep(delay)
                try:
                    await self.open()
                except Exception as exc:  # the server is still away
                    delay = min(RELISTEN_MAX_SECONDS, delay * 2)
                    log.warning(
                        "could not listen on %s again (%s); next try in %g s",
                        self._channel,
                        type(exc).__name__,
                        delay,
                    )
                else:
                    break
            log.info("listening on %s again", self._channel)
            if missed is not None:
                missed()

    async def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):  # it is gone already
                await connection.invalidate()

    async def close(self) -> None:
        """Stop listening and give the connection back."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        try:
            raw = await connection.get_raw_connection()
            listener = raw.driver_connection
            if listener is not None and not listener.is_closed():
                listener.remove_termination_listener(self._terminated)
                await listener.remove_listener(self._channel, self._notified)
        except Exception:  # a connection that ended is not pooled again
            with contextlib.suppress(Exception):
                await connection.invalidate()
        finally:
            await connection.close()
