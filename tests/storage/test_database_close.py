"""Closing a SQLite database ends every connection it opened, even one a cancelled task left
checked out in its transaction: otherwise the file's write lock outlives the close."""

from __future__ import annotations

import contextlib
from pathlib import Path

from sqlalchemy import text

from storyteller_daemon.storage.database import Database


async def test_close_releases_the_lock_of_a_connection_left_checked_out(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'st.db'}"
    first = Database(url, busy_timeout_ms=100)
    async with first.session() as session:
        await session.execute(text("CREATE TABLE t (x INTEGER)"))
    leaked = await first.engine.connect()  # as a task cancelled mid-statement leaves it
    await leaked.begin()
    await leaked.execute(text("INSERT INTO t VALUES (1)"))  # holds the write lock
    await first.close()

    second = Database(url, busy_timeout_ms=100)
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
