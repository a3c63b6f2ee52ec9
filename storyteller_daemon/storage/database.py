"""Engine, sessions and migrations for SQLite (default) and PostgreSQL.

SQLite runs in WAL mode with a busy timeout, foreign keys on, and ``BEGIN IMMEDIATE`` so that a
second writer waits instead of failing. Schema changes only happen through Alembic.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Insert, event
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection, make_url
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import (
    AsyncConnection,
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)

from storyteller_daemon.bundled import bundled_dir
from storyteller_daemon.clock import Clock
from storyteller_daemon.errors import NotMigratedError, StorageError, ValidationError
from storyteller_daemon.storage.pool_ping import ping_when_rested
from storyteller_daemon.storage.sqlite_setup import (
    READING,
    RollingBack,
    begin_writers,
    sqlite_pragmas,
)

if TYPE_CHECKING:  # alembic is imported where it works: a current database needs none of it
    from alembic.config import Config as AlembicConfig

MIGRATIONS_DIR = bundled_dir("migrations")


def normalise_url(url: str) -> str:
    """Pick the async driver when the URL names only the database (``sqlite:``, ``postgresql:``)."""
    parsed = make_url(url)
    driver = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}.get(
        parsed.drivername
    )
    if driver:
        parsed = parsed.set(drivername=driver)
    return parsed.render_as_string(hide_password=False)


def create_engine(
    url: str,
    *,
    busy_timeout_ms: int = 15_000,
    opened: set[Any] | None = None,
    idle_in_transaction_seconds: float | None = None,
    pool_size: int | None = None,
    clock: Clock | None,
) -> AsyncEngine:
    """Create an async engine with the right per-dialect settings.

    `opened` collects the driver connections of a SQLite engine, so `Database.close` can end
    any that a cancelled task left checked out (holding the file's write lock). `pool_size`:
    the PostgreSQL connections kept, and no more (default: SQLAlchemy's pool). With a `clock`,
    a PostgreSQL connection is pinged before use only when it has rested in the pool
    a while (`pool_ping`); without one, every time.
    """
    url = normalise_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            Path(database).expanduser().parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(
            url, connect_args={"timeout": busy_timeout_ms / 1000, "factory": RollingBack}
        )
        if opened is not None:  # first: a connection cut off in its set-up is ended at close
            event.listen(
                engine.sync_engine,
                "connect",
                lambda dbapi_conn, _record: _remember(opened, dbapi_conn.driver_connection),
            )
        event.listen(engine.sync_engine, "connect", sqlite_pragmas(busy_timeout_ms))
        event.listen(engine.sync_engine, "begin", begin_writers)
        return engine
    pool: dict[str, Any] = {} if pool_size is None else {"pool_size": pool_size, "max_overflow": 0}
    pre_ping = clock is None
    if idle_in_transaction_seconds is None:
        engine = create_async_engine(url, pool_pre_ping=pre_ping, **pool)
    else:
        engine = _ending_idle_transactions(url, idle_in_transaction_seconds, pre_ping, pool)
    if clock is not None:
        ping_when_rested(engine, clock)
    return engine


def _ending_idle_transactions(
    url: str, idle_in_transaction_seconds: float, pre_ping: bool, pool: dict[str, Any]
) -> AsyncEngine:
    # A process frozen (or cut off) inside a transaction keeps its row locks until the server
    # ends its session: after this long, so the others can take its leases over. A statement
    # of such a process still waiting for a lock gives up after as long, and its transaction
    # is then idle and ended the same way.
    idle = str(max(1, round(idle_in_transaction_seconds * 1000)))
    settings = {"idle_in_transaction_session_timeout": idle, "lock_timeout": idle}
    return create_async_engine(
        url, pool_pre_ping=pre_ping, connect_args={"server_settings": settings}, **pool
    )


def _remember(opened: set[Any], connection: Any) -> None:
    """Add a new driver connection, forgetting the ones closed since."""
    opened.difference_update([c for c in opened if getattr(c, "_connection", None) is None])
    opened.add(connection)


class _Unit:
    """One transaction shared by every session opened inside `Database.unit` (begun lazily)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.stack = contextlib.AsyncExitStack()
        self.session: AsyncSession | None = None

    async def begin(self) -> AsyncSession:
        if self.session is None:
            if self.db._turns is not None:
                await self.stack.enter_async_context(self.db._turns)
            session = await self.stack.enter_async_context(self.db._sessions())
            _ = await self.stack.enter_async_context(session.begin())
            self.session = session
        return self.session


_UNIT: ContextVar[_Unit | None] = ContextVar("storyteller_unit_of_work", default=None)


class Database:
    """Owns the engine and hands out one session per unit of work; `clock` times how long
    pooled PostgreSQL connections rested (`pool_ping`; None: a ping at every checkout)."""

    def __init__(
        self,
        url: str,
        *,
        busy_timeout_ms: int = 15_000,
        idle_in_transaction_seconds: float | None = None,
        pool_size: int | None = None,
        clock: Clock | None,
    ) -> None:
        self.url = normalise_url(url)
        # Strong references: a connection a cancelled task dropped is otherwise collected while
        # its worker thread keeps the file's write lock, and could then never be ended here.
        self._opened: set[Any] = set()
        self.engine = create_engine(
            self.url,
            busy_timeout_ms=busy_timeout_ms,
            opened=self._opened,
            idle_in_transaction_seconds=idle_in_transaction_seconds,
            pool_size=pool_size,
            clock=clock,
        )
        self._sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        self._readers_in_one = self.engine.execution_options(**{READING: True})
        self._readers = self._readers_in_one
        if self.dialect == "postgresql":  # each statement its own transaction, as on SQLite
            self._readers = self.engine.execution_options(
                **{READING: True}, isolation_level="AUTOCOMMIT"
            )
        # SQLite has one writer, and every transaction here begins IMMEDIATE: sessions of this
        # process take turns instead of contending for the file lock until a busy timeout.
        # (Other processes, such as the CLI, still wait on the lock with `busy_timeout_ms`.)
        self._turns: asyncio.Lock | None = asyncio.Lock() if self.dialect == "sqlite" else None
        self.in_use = 0
        """Sessions and reading connections open now (or waiting for their turn): the eval
        runner's daemon is not at rest while the database works for it."""

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    def insert_new(self, table: Any) -> Insert:
        """An insert into `table` that skips rows a unique key already holds (``ON CONFLICT
        DO NOTHING``: another daemon, or this one earlier, stored them)."""
        if self.dialect == "postgresql":  # its dialect's module only there
            from sqlalchemy.dialects.postgresql import insert as pg_insert

            return pg_insert(table).on_conflict_do_nothing()
        return sqlite_insert(table).on_conflict_do_nothing()

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session in a transaction: see `_session`."""
        self.in_use += 1
        try:
            async with self._session() as session:
                yield session
        finally:
            self.in_use -= 1

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[AsyncSession]:
        """A session in a transaction: committed on success, rolled back on error.

        Inside `unit` the session is the unit's, its block a savepoint of the unit's one
        transaction. Otherwise sessions must not nest: on SQLite a session opened inside
        another would wait forever.
        """
        unit = _UNIT.get()
        if unit is not None and unit.db is self:
            try:
                session = await unit.begin()
                async with session.begin_nested():
                    yield session
            except (DBAPIError, PoolTimeout) as exc:
                raise _storage_error(exc) from exc
            return
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self._turns is not None:
                    await stack.enter_async_context(self._turns)
                session = await stack.enter_async_context(self._sessions())
                _ = await stack.enter_async_context(session.begin())
                yield session
        except (DBAPIError, PoolTimeout) as exc:
            raise _storage_error(exc) from exc

    @asynccontextmanager
    async def unit(self) -> AsyncIterator[None]:
        """One transaction for every session the block opens: all of their writes are
        committed together when the block ends, or none of them if it raises.

        The transaction begins at the block's first session, so work before it (a look-up in
        the game) holds no lock. The block must not run sessions concurrently (one task), and
        units do not nest: an inner one joins the outer.
        """
        if _UNIT.get() is not None:
            yield
            return
        unit = _Unit(self)
        token = _UNIT.set(unit)
        try:
            async with unit.stack:
                yield
        except (DBAPIError, PoolTimeout) as exc:
            raise _storage_error(exc) from exc
        finally:
            _UNIT.reset(token)

    @asynccontextmanager
    async def reading(self, *, one_transaction: bool = False) -> AsyncIterator[AsyncConnection]:
        """A connection for queries that write nothing.

        It takes no turn among this process's sessions. Each statement reads its own
        consistent snapshot, in a transaction of its own (on SQLite, WAL mode: never waiting
        for a writer; on PostgreSQL, without the round trips of a begin and a rollback), so a
        reading that needs several statements to agree must use a session instead. With
        `one_transaction` on PostgreSQL, its statements share one transaction, rolled back at
        the end (for ``SET TRANSACTION`` and ``SET LOCAL``).
        """
        readers = self._readers_in_one if one_transaction else self._readers
        self.in_use += 1
        try:
            async with readers.connect() as connection:
                yield connection
        except (DBAPIError, PoolTimeout) as exc:
            raise _storage_error(exc) from exc
        finally:
            self.in_use -= 1

    async def close(self) -> None:
        """Dispose of the pool, and end SQLite connections a cancelled task left checked out.

        A task cancelled in the middle of a statement can leave its connection outside the
        pool, still in its transaction; on SQLite that holds the file's write lock until the
        connection ends, so every later writer of this process would wait for nothing.
        """
        await self.engine.dispose()
        for connection in list(self._opened):
            if getattr(connection, "_connection", None) is None:
                continue  # closed already
            stopped = connection.stop()
            if stopped is not None:
                await asyncio.gather(stopped, return_exceptions=True)
        self._opened.clear()

    # ------------------------------------------------------------------ migrations

    def _alembic_config(self) -> AlembicConfig:
        from alembic.config import Config as AlembicConfig

        cfg = AlembicConfig()
        cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
        cfg.set_main_option("sqlalchemy.url", self.url.replace("%", "%%"))
        return cfg

    async def _run_alembic(self, fn: Any, *args: Any) -> None:
        from alembic.util.exc import CommandError

        cfg = self._alembic_config()

        def run(sync_conn: Connection) -> None:
            cfg.attributes["connection"] = sync_conn
            fn(cfg, *args)

        try:
            async with self.engine.begin() as conn:
                await conn.run_sync(run)
        except (OperationalError, DBAPIError) as exc:
            raise StorageError(f"migration failed: {type(exc.orig).__name__}: {exc.orig}") from exc
        except CommandError as exc:  # an unknown revision, for one
            raise ValidationError(f"migration refused: {exc}") from None

    async def upgrade(self, revision: str = "head") -> None:
        """Apply migrations up to `revision`."""
        from alembic import command

        await self._run_alembic(command.upgrade, revision)

    async def downgrade(self, revision: str) -> None:
        """Revert migrations down to `revision` (``base`` removes everything)."""
        from alembic import command

        await self._run_alembic(command.downgrade, revision)

    def head_revision(self) -> str | None:
        """The newest migration this code ships."""
        from alembic.script import ScriptDirectory

        return ScriptDirectory.from_config(self._alembic_config()).get_current_head()

    async def current_revision(self) -> str | None:
        """The revision the database is at (None for an empty database)."""
        from alembic.runtime.migration import MigrationContext

        def read(sync_conn: Connection) -> str | None:
            return MigrationContext.configure(sync_conn).get_current_revision()

        try:
            async with self.engine.connect() as conn:
                return await conn.run_sync(read)
        except (OperationalError, DBAPIError, OSError) as exc:
            raise StorageError(f"cannot reach the database: {exc}") from exc

    async def require_current(self) -> None:
        """Raise `NotMigratedError` unless the schema is at the head revision (alembic, which
        is imported here, not when this module is)."""
        current, head = await self.current_revision(), self.head_revision()
        if current != head:
            raise NotMigratedError(
                f"database is at revision {current or 'none'} but this version needs {head}; "
                "run `storyteller db upgrade`"
            )


def _storage_error(exc: DBAPIError | PoolTimeout) -> StorageError:
    """A database error as the daemon reports it: the driver's error, or a pool that had no
    connection free in time (every caller retries a `StorageError` later)."""
    if isinstance(exc, DBAPIError):
        return StorageError(f"database error: {type(exc.orig).__name__}: {exc.orig}")
    return StorageError(f"no database connection free in time: {exc}")
