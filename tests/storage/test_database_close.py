"""Closing a SQLite database ends every connection it opened, even one a cancelled task left
checked out in its transaction: otherwise the file's write lock outlives the close."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from sqlalchemy import text

from storyteller_daemon.storage.database import Database


async def test_close_releases_the_lock_of_a_connection_left_checked_out(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'st.db'}"
    first = Database(url, busy_timeout_ms=100, clock=None)
    async with first.session() as session:
        await session.execute(text("CREATE TABLE t (x INTEGER)"))
    leaked = await first.engine.connect()  # as a task cancelled mid-statement leaves it
    await leaked.begin()
    await leaked.execute(text("INSERT INTO t VALUES (1)"))  # holds the write lock
    await first.close()

    second = Database(url, busy_timeout_ms=100, clock=None)
    try:
        async with second.session() as session:
            await session.execute(text("INSERT INTO t VALUES (2)"))
        async with second.session() as session:
            rows = (await session.execute(text("SELECT x FROM t"))).scalars().all()
        assert rows == [2]  # the leaked transaction was rolled back, not committed
    finally:
        await second.close()
        with contextlib.suppress(Exception):  # its driver connection is gone already
            await leaked.close()


async def test_a_connection_closed_inside_an_unfinished_statement_frees_the_write_lock(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lock.db"
    db = Database(f"sqlite+aiosqlite:///{path}", clock=None)
    try:
        async with db.engine.connect() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
            await conn.execute(text("INSERT INTO t VALUES (1), (2), (3)"))
            await conn.commit()
        async with db.engine.connect() as conn:
            raw = await conn.get_raw_connection()
            driver = raw.driver_connection
            assert driver is not None
            await conn.execute(text("INSERT INTO t VALUES (4)"))  # BEGIN IMMEDIATE, a write
            # A statement left part-way, as a cancelled task's cursor leaves it.
            cursor = await driver.execute("SELECT x FROM t")
            assert await cursor.fetchone() is not None
            await driver.close()  # what ending a cancelled connection does
            other = sqlite3.connect(path, isolation_level=None, timeout=0.2)
            try:
                other.execute("BEGIN IMMEDIATE")  # "database is locked" if the zombie held it
                other.execute("ROLLBACK")
                count = other.execute("SELECT count(*) FROM t").fetchone()[0]
            finally:
                other.close()
            assert count == 3  # the unfinished transaction was rolled back, not committed
            del cursor
            await conn.invalidate()
    finally:
        await db.close()
