"""Providers' queries: one SELECT, on a read-only connection, within a time limit."""

from __future__ import annotations

import sqlite3

import pytest

from storyteller_daemon.clock import SystemClock
from storyteller_daemon.errors import ToolError
from storyteller_daemon.storage.provider_queries import ProviderQueryRepository, read_only
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing import FakeClock


async def test_a_select_returns_its_rows_as_text(store: Store) -> None:
    st = await store.storytellers.create("Watch")
    queries = ProviderQueryRepository(store.db, max_rows=1, clock=store.clock)
    rows = await queries.select(
        "SELECT id, name FROM storytellers WHERE id = :storyteller_id",
        {"storyteller_id": st.id, "room_id": None, "now": "2026-01-01T00:00:00+00:00"},
    )
    assert rows.columns == ("id", "name") and rows.rows == ((str(st.id), "Watch"),)
    await store.storytellers.create("Crier")
    two = await queries.select("SELECT name FROM storytellers ORDER BY id", {})
    assert two.truncated and two.rows == (("Watch",),)


@pytest.mark.parametrize(
    "query",
    [
        "DELETE FROM storytellers",
        "SELECT 1; DELETE FROM storytellers",
        "SELECT 1 -- hidden",
        "SELECT * FROM storytellers WHERE id = :password",
    ],
)
async def test_anything_but_one_select_is_refused_and_nothing_changes(
    store: Store, query: str
) -> None:
    await store.storytellers.create("Watch")
    with pytest.raises(ToolError):
        await ProviderQueryRepository(store.db, clock=store.clock).select(query, {})
    assert await store.storytellers.count() == 1


@pytest.mark.postgres
async def test_postgres_runs_it_read_only_and_timed(pg_url: str) -> None:
    store = Store.open(pg_url, clock=SystemClock())
    await store.db.upgrade()
    try:
        queries = ProviderQueryRepository(store.db, timeout_seconds=0.05, clock=store.clock)
        with pytest.raises(ToolError, match="do more than read"):
            await queries.select("SELECT nextval('storytellers_id_seq')", {})
        with pytest.raises(ToolError, match="past its time limit"):
            await queries.select("SELECT pg_sleep(5)", {})
    finally:
        await store.close()


async def test_sqlite_interrupts_a_query_past_its_time(sqlite_store: Store) -> None:
    ticks = FakeClock(tick=1.0)  # each look at the clock is a second later
    queries = ProviderQueryRepository(sqlite_store.db, timeout_seconds=5, clock=ticks)
    endless = (
        "SELECT count(*) FROM (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
        "WHERE i < 100000000) SELECT i FROM n)"
    )
    with pytest.raises(ToolError, match="past its time limit"):
        await queries.select(endless, {})
    # The connection is whole again afterwards: writes work, reads are not interrupted.
    await sqlite_store.storytellers.create("After")
    assert (await queries.select("SELECT count(*) AS n FROM storytellers", {})).rows == (("1",),)


def test_the_sqlite_authorizer_allows_reading_only() -> None:
    assert read_only(sqlite3.SQLITE_SELECT) == sqlite3.SQLITE_OK
    assert read_only(sqlite3.SQLITE_READ, "storytellers", "name") == sqlite3.SQLITE_OK
    for action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_DELETE, sqlite3.SQLITE_ATTACH,
                   sqlite3.SQLITE_PRAGMA, sqlite3.SQLITE_UPDATE):  # fmt: skip
        assert read_only(action) == sqlite3.SQLITE_DENY
