"""Pinging pooled PostgreSQL connections before use only when they rested (`Database`).

SQLAlchemy's ``pool_pre_ping`` pings at every checkout: three round trips on asyncpg (a
transaction begun, an empty statement, a rollback), more than most units of work make.
`ping_when_rested` replaces it for a database given the daemon's clock.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import event
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import AsyncEngine

from storyteller_daemon.clock import Clock

PING_AFTER_IDLE_SECONDS = 2.0
"""How long a PostgreSQL connection may rest in the pool and be used again without a ping."""
_RESTED_SINCE = "storyteller_rested_since"
_FAILED = "storyteller_failed"


def ping_when_rested(engine: AsyncEngine, clock: Clock) -> None:
    """Ping a pooled connection before use only when it rested a while.

    A connection the driver saw closed is replaced without one; one that went back to the pool
    a moment ago, its statements all answered, is almost surely alive; one that rested (the
    server restarted meanwhile, or ended the session of a process that was frozen) or whose
    last use failed is pinged, and replaced when the ping fails, as ``pool_pre_ping`` would.
    """
    sync = engine.sync_engine

    def checked_in(_dbapi_conn: Any, record: Any) -> None:
        record.info[_RESTED_SINCE] = clock.monotonic()

    def failed(context: Any) -> None:
        try:
            context.connection.connection.info[_FAILED] = True
        except Exception:  # no connection, or invalidated already: nothing to mark
            return

    def checked_out(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.pop(_RESTED_SINCE, None)
        suspect = record.info.pop(_FAILED, False)
        driver = getattr(dbapi_conn, "driver_connection", None)
        if driver is not None and driver.is_closed():  # the driver saw it end: no ping needed
            raise DisconnectionError("a pooled connection was closed")
        rested = since is not None and clock.monotonic() - since >= PING_AFTER_IDLE_SECONDS
        if not (rested or suspect):
            return  # new, or back in the pool a moment ago after a clean use
        try:
            sync.dialect.do_ping(dbapi_conn)
        except Exception as exc:  # the pool replaces it and checks out again
            raise DisconnectionError(f"a pooled connection failed its ping: {exc}") from exc

    event.listen(sync, "handle_error", failed)
    event.listen(sync, "checkin", checked_in)
    event.listen(sync, "checkout", checked_out)
