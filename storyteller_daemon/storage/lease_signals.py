"""Waking the daemons of a cluster: PostgreSQL's LISTEN/NOTIFY on one channel.

A daemon that joins, releases leases or leaves sends a NOTIFY on `LEASE_CHANNEL` in the same
transaction (`storage.leases`), delivered when it commits; every other daemon listens on one
connection of its own (`lease_signals`) and evens out at once instead of at its next renewal.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from storyteller_daemon.storage.database import Database

LEASE_CHANNEL = "storyteller_leases"
"""The NOTIFY channel of lease changes (the payload is the daemon that made one)."""


@asynccontextmanager
async def lease_signals(db: Database, wake: Callable[[str], None]) -> AsyncIterator[None]:
    """While inside, call `wake` with the daemon's name whenever a daemon joins, releases
    leases or leaves (LISTEN on one connection of its own; on SQLite, which has one daemon,
    nothing)."""
    if db.dialect != "postgresql":
        yield
        return
    async with db.engine.connect() as connection:
        raw = await connection.get_raw_connection()
        listener = raw.driver_connection
        assert listener is not None  # an open asyncpg connection

        def heard(_connection: object, _pid: int, _channel: str, payload: str) -> None:
            wake(payload)

        await listener.add_listener(LEASE_CHANNEL, heard)
        try:
            yield
        finally:
            await listener.remove_listener(LEASE_CHANNEL, heard)
