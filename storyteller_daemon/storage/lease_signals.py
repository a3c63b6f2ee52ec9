"""Waking the daemons of a cluster: PostgreSQL's LISTEN/NOTIFY on one channel.

A daemon that joins, releases leases or leaves sends a NOTIFY on `LEASE_CHANNEL` in the same
transaction (`storage.leases`), delivered when it commits; every other daemon listens on one
connection of its own (`lease_signals`) and evens out at once instead of at its next renewal.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from storyteller_daemon.clock import Clock
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.notifications import listen

LEASE_CHANNEL = "storyteller_leases"
"""The NOTIFY channel of lease changes (the payload is the daemon that made one)."""


def lease_signals(
    db: Database, clock: Clock, wake: Callable[[str], None]
) -> AbstractAsyncContextManager[None]:
    """While inside, call `wake` with the daemon's name whenever a daemon joins, releases
    leases or leaves (on SQLite, which has one daemon, never); with an empty name once
    listening again after the connection ended, since a change may have been missed."""
    return listen(db, LEASE_CHANNEL, wake, clock, missed=functools.partial(wake, ""))
