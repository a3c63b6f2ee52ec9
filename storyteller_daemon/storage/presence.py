"""A daemon's presence in a cluster, kept by PostgreSQL itself.

While it runs, a daemon of a cluster holds a session advisory lock named after it
(`PRESENCE_LOCK`, keyed by ``hashtext`` of its name) on a connection of its own (`Presence`).
PostgreSQL ends that session, and with it the lock, as soon as the process dies (its socket is
closed with it), so the others see a killed daemon gone at their next renewal (`departed`)
instead of when its leases run out. A daemon that is frozen or slow keeps its connection and
its lock, so its leases run their course, and fencing refuses what it writes after they were
taken. A host that vanishes from the network is seen when its leases expire (or when
PostgreSQL's TCP keepalive ends the session, if sooner).

The connection is held outside any transaction, so the cluster's idle-in-transaction timeout
never ends it; on SQLite, which has one daemon, there is nothing to hold.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession

from storyteller_daemon.errors import ConfigError
from storyteller_daemon.storage.database import Database

PRESENCE_LOCK = 0x5354
"""The first key of the two-key advisory locks that say a daemon is present."""
WAIT_MS = 2_000
"""How long taking the lock waits on a daemon that looks at it (a moment) before the name is
taken to be another live daemon's."""
LOCK_NOT_AVAILABLE = "55P03"
"""PostgreSQL's SQLSTATE for a lock wait that timed out."""


class Presence:
    """Holds this daemon's presence lock (again, after its connection broke).

    Args:
        instance: this daemon's name.
        db: the cluster's database.
    """

    def __init__(self, instance: str, db: Database) -> None:
        self._db = db
        self._instance = instance
        self._connection: AsyncConnection | None = None
        self._driver: Any = None

    @property
    def held(self) -> bool:
        """Whether the lock's connection is open (on SQLite: always)."""
        if self._db.dialect != "postgresql":
            return True
        return self._driver is not None and not self._driver.is_closed()

    async def hold(self) -> None:
        """Take the lock unless it is held already.

        Raises:
            ConfigError: Another live process holds the name (``cluster.instance``).
        """
        if self.held:
            return
        await self.release()
        connection = await self._db.engine.connect()
        try:
            raw = await connection.get_raw_connection()
            driver = raw.driver_connection
            assert driver is not None  # an open asyncpg connection
            # Wait a moment: another daemon may be looking whether this name is present.
            await driver.execute(f"SET lock_timeout = '{WAIT_MS}ms'")
            await driver.execute(
                "SELECT pg_advisory_lock($1, hashtext($2))", PRESENCE_LOCK, self._instance
            )
            await driver.execute("RESET lock_timeout")
        except BaseException as exc:
            await connection.invalidate()  # not back to the pool with this session's settings
            if getattr(exc, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                raise
            raise ConfigError(
                "config",
                f"a daemon named '{self._instance}' already runs against this database: give "
                "each daemon its own name",
                key="cluster.instance",
            ) from exc
        self._connection, self._driver = connection, driver

    async def release(self) -> None:
        """Give the lock up (a clean stop) and close its connection."""
        connection, driver = self._connection, self._driver
        self._connection = self._driver = None
        if connection is None:
            return
        try:
            if driver is not None and not driver.is_closed():
                await driver.execute("SELECT pg_advisory_unlock_all()")
        finally:
            await connection.close()


async def departed(session: AsyncSession, names: Collection[str]) -> list[str]:
    """Of the daemons `names`, those whose presence lock nobody holds (they died), checked
    with a lock taken only for this transaction (PostgreSQL only: on SQLite, none)."""
    if not names or session.get_bind().dialect.name != "postgresql":
        return []
    gone = []
    for name in sorted(names):
        free = await session.scalar(
            select(func.pg_try_advisory_xact_lock(PRESENCE_LOCK, func.hashtext(name)))
        )
        if free:
            gone.append(name)
    return gone
