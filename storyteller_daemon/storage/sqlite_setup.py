"""How every SQLite connection is set up: its pragmas, its begin hook, its close.

`Database` installs these on a SQLite engine: WAL and a busy timeout on connect, writers'
transactions begun IMMEDIATE (readers, marked `READING`, begin nothing), and a connection that
rolls back its transaction when closed.
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

from sqlalchemy.engine import Connection


def sqlite_pragmas(busy_timeout_ms: int) -> Any:
    """The connect hook setting every SQLite connection's pragmas (WAL, busy timeout, keys)."""

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # SQLAlchemy emits BEGIN itself (see the begin hook)
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.close()

    return on_connect


class RollingBack(sqlite3.Connection):
    """A SQLite connection that rolls its transaction back when it is closed.

    A task cancelled in the middle of a statement leaves that statement unfinished, held by a
    cursor its traceback still refers to. SQLite closes such a connection only once the last
    statement is finalised (a "zombie"), and keeps its transaction, with the file's write lock,
    until then: at the next garbage collection, which may be after every other writer's busy
    timeout. Rolling back first ends the transaction now (pending statements are aborted).
    """

    def close(self) -> None:
        if self.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                self.rollback()
        super().close()


READING = "storyteller_reading"
"""Execution option of `Database.reading` connections: their transactions begin deferred."""


def begin_writers(conn: Connection) -> None:
    """SQLite's begin hook."""
    # Writers begin IMMEDIATE (one writer, no upgrade deadlocks). Readers begin nothing: each
    # statement is its own read transaction, a snapshot that in WAL mode waits for no writer.
    if not conn.get_execution_options().get(READING, False):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
