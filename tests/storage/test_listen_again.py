"""A LISTEN connection that ends (the server terminated it, as a restart or a cut proxy does)
is opened again on the caller's clock, doubling the wait while that fails, and the caller
hears that it may have missed notifications; what is sent afterwards is heard again. On the
suite's embedded PostgreSQL, with a fake clock."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.notifications import RELISTEN_SECONDS, listen, notify
from storyteller_daemon.testing.clock import FakeClock, eventually

pytestmark = pytest.mark.postgres

CHANNEL = "storyteller_test_relisten"
LISTENERS = text(
    "SELECT pid FROM pg_stat_activity "
    "WHERE query = :listen AND datname = current_database() AND pid <> pg_backend_pid()"
)


async def _listeners(db: Database) -> list[int]:
    async with db.session() as session:
        rows = await session.execute(LISTENERS, {"listen": f'LISTEN "{CHANNEL}"'})
        return [int(pid) for (pid,) in rows]


async def _until_listening(db: Database, count: int) -> list[int]:
    for _ in range(2000):
        pids = await _listeners(db)
        if len(pids) == count:
            return pids
        await asyncio.sleep(0.005)
    raise AssertionError(f"{count} listeners never seen")


async def _send(db: Database, payload: str) -> None:
    async with db.session() as session:
        await notify(session, CHANNEL, payload)


async def _terminate(db: Database, pid: int) -> None:
    async with db.session() as session:
        await session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})


async def test_a_listen_connection_that_ends_is_opened_again_and_says_what_may_be_missed(
    pg_url: str,
) -> None:
    clock = FakeClock()
    db = Database(pg_url, clock=clock)
    heard: list[str] = []
    missed: list[int] = []
    try:
        async with listen(db, CHANNEL, heard.append, clock, missed=lambda: missed.append(1)):
            (pid,) = await _until_listening(db, 1)
            await _send(db, "before")
            await eventually(lambda: heard == ["before"], "the first notification")

            await _terminate(db, pid)
            await _until_listening(db, 0)
            await _send(db, "while away")  # nobody listens: lost
            await asyncio.sleep(0.05)
            assert heard == ["before"] and missed == []
            await clock.advance(RELISTEN_SECONDS)
            (again,) = await _until_listening(db, 1)
            assert again != pid
            await eventually(lambda: missed == [1], "the word that notices may be missed")

            await _send(db, "after")
            await eventually(lambda: heard == ["before", "after"], "a notification heard again")
        assert await _listeners(db) == []  # the connection left with the block
    finally:
        await db.close()


class _Refusing:
    """The database as `listen` sees it, refusing the connections numbered in `refused`."""

    dialect = "postgresql"

    def __init__(self, db: Database, refused: set[int]) -> None:
        self.engine = self
        self._db = db
        self._refused = refused
        self.tries = 0

    def connect(self) -> AsyncConnection:
        self.tries += 1
        if self.tries in self._refused:
            raise OSError("connection refused")
        return self._db.engine.connect()


async def test_listening_again_waits_longer_while_the_server_refuses(pg_url: str) -> None:
    """Two refused tries after the connection ended: the waits go 1 s, 2 s, then 4 s on the
    clock, and the try after that listens again."""
    clock = FakeClock()
    db = Database(pg_url, clock=clock)
    missed: list[int] = []
    flaky = _Refusing(db, refused={2, 3})  # the first open succeeds, the next two are refused
    try:
        async with listen(
            cast(Database, flaky), CHANNEL, lambda _p: None, clock, missed=lambda: missed.append(1)
        ):
            (pid,) = await _until_listening(db, 1)
            await _terminate(db, pid)
            await _until_listening(db, 0)
            for wait, tries in ((1.0, 2), (2.0, 3)):
                await eventually(lambda: clock.sleepers > 0, "the wait")
                await clock.advance(wait - 0.01)
                await asyncio.sleep(0.01)
                assert flaky.tries == tries - 1  # not before its time
                await clock.advance(0.01)
                await eventually(lambda t=tries: flaky.tries == t, f"try {tries}")
            await eventually(lambda: clock.sleepers > 0, "the third wait")
            await clock.advance(3.99)
            await asyncio.sleep(0.01)
            assert flaky.tries == 3 and missed == []
            await clock.advance(0.01)
            await _until_listening(db, 1)
            await eventually(lambda: missed == [1], "listening again")
            assert flaky.tries == 4
    finally:
        await db.close()
