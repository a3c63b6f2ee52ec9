"""Readings: queries that write nothing take no turn among sessions and wait for no writer."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from sqlalchemy import text

from storyteller_daemon.errors import StorageError
from storyteller_daemon.storage.database import Database


async def test_a_reading_sees_committed_rows_while_a_writer_holds_its_transaction(
    tmp_path: Path,
) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'st.db'}", busy_timeout_ms=100, clock=None)
    try:
        async with db.session() as session:
            await session.execute(text("CREATE TABLE t (x INTEGER)"))
            await session.execute(text("INSERT INTO t VALUES (1)"))
        async with db.session() as session:  # holds the process's turn and the write lock
            await session.execute(text("INSERT INTO t VALUES (2)"))
            async with asyncio.timeout(5), db.reading() as connection:
                seen = (await connection.execute(text("SELECT x FROM t"))).scalars().all()
            assert seen == [1]  # the committed snapshot, without waiting for the writer
        async with db.reading() as connection:
            seen = (await connection.execute(text("SELECT x FROM t ORDER BY x"))).scalars().all()
        assert seen == [1, 2]
    finally:
        await db.close()


async def test_a_failed_reading_is_a_storage_error(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'st.db'}", clock=None)
    try:
        with pytest.raises(StorageError, match="no such table"):
            async with db.reading() as connection:
                await connection.execute(text("SELECT x FROM missing"))
    finally:
        await db.close()


@pytest.mark.postgres
async def test_on_postgresql_each_statement_of_a_reading_is_its_own_transaction(
    pg_url: str,
) -> None:
    db = Database(pg_url, clock=None)
    started = text("SELECT transaction_timestamp()")
    try:
        async with db.reading() as connection:
            first, second = await connection.scalar(started), await connection.scalar(started)
        assert first < second  # no transaction around them: no begin, no rollback
        async with db.reading(one_transaction=True) as connection:
            first, second = await connection.scalar(started), await connection.scalar(started)
        assert first == second
    finally:
        await db.close()
