"""Context providers' queries: one SELECT over the daemon's own database, read-only and timed.

Three locks hold a provider's query to reading, whatever its text says:

1. the text must be one SELECT statement with only the known parameters
   (`domain.direction.check_select`), checked when the provider is set and again here;
2. it runs on a reading connection (`Database.reading`) that is made read-only for it: on
   SQLite an authorizer allows only reading and a progress handler interrupts it past its time;
   on PostgreSQL its transaction is ``READ ONLY`` with a ``statement_timeout``, and is rolled
   back;
3. only `max_rows` rows are fetched, each value as text.

A refusal, a timeout or any database error is a `ToolError` whose message the prompt may show
as the provider's gap.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError, StatementError

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.direction import QueryRows, check_select
from storyteller_daemon.errors import StorageError, ToolError, ValidationError
from storyteller_daemon.storage.database import Database

DEFAULT_TIMEOUT_SECONDS = 2.0
DEFAULT_MAX_ROWS = 50
MAX_VALUE_CHARS = 500
_PROGRESS_STEPS = 1000
_READING_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)


def read_only(action: int, *_: object) -> int:
    """SQLite authorizer: reading is allowed, everything else denied."""
    return sqlite3.SQLITE_OK if action in _READING_ACTIONS else sqlite3.SQLITE_DENY


class ProviderQueryRepository:
    """Runs providers' queries.

    Args:
        db: the daemon's database.
        timeout_seconds: how long one query may run.
        max_rows: the most rows kept.
        clock: the clock SQLite's progress handler reads (PostgreSQL keeps its own time).
    """

    def __init__(
        self,
        db: Database,
        *,
        timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
        max_rows: int = DEFAULT_MAX_ROWS,
        clock: Clock,
    ) -> None:
        self._db = db
        self._timeout = timeout_seconds
        self._max_rows = max_rows
        self._clock = clock

    async def select(self, query: str, parameters: dict[str, Any]) -> QueryRows:
        """The rows of one read-only SELECT with named `parameters` bound.

        Raises:
            ToolError: the query is not one SELECT, writes, takes too long or fails.
        """
        try:
            statement = text(check_select(query, "The query"))
        except ValidationError as exc:
            raise ToolError(str(exc)) from None
        wanted = {k: v for k, v in parameters.items() if f":{k}" in query}
        try:
            async with self._db.reading(one_transaction=True) as connection:
                if self._db.dialect == "postgresql":
                    await connection.execute(text("SET TRANSACTION READ ONLY"))
                    millis = max(1, int(self._timeout * 1000))
                    await connection.execute(text(f"SET LOCAL statement_timeout = {millis}"))
                    result = await connection.execute(statement, wanted)
                    rows = result.fetchmany(self._max_rows + 1)
                    await connection.rollback()
                else:
                    raw = await connection.get_raw_connection()
                    driver: Any = raw.driver_connection
                    deadline = self._clock.monotonic() + self._timeout
                    await driver.set_authorizer(read_only)
                    await driver.set_progress_handler(
                        lambda: 1 if self._clock.monotonic() > deadline else 0, _PROGRESS_STEPS
                    )
                    try:
                        result = await connection.execute(statement, wanted)
                        rows = result.fetchmany(self._max_rows + 1)
                    finally:
                        await driver.set_authorizer(None)
                        await driver.set_progress_handler(None, 0)
                columns = tuple(str(c) for c in result.keys())
        except (DBAPIError, StatementError, StorageError) as exc:
            raise ToolError(f"The query failed: {_reason(exc)}") from None
        kept = tuple(tuple(_cell(v) for v in row) for row in rows[: self._max_rows])
        return QueryRows(columns, kept, truncated=len(rows) > self._max_rows)


def _cell(value: Any) -> str | None:
    if value is None:
        return None
    shown = value.isoformat() if hasattr(value, "isoformat") else str(value)
    return shown[:MAX_VALUE_CHARS]


def _reason(exc: Exception) -> str:
    original = getattr(exc, "orig", None) or exc
    message = str(original).splitlines()[0] if str(original) else type(original).__name__
    lowered = message.lower()
    if "interrupted" in lowered or "statement timeout" in lowered or "canceling" in lowered:
        return "it ran past its time limit"
    if "not authorized" in lowered or "read-only" in lowered:
        return f"it tried to do more than read ({message[:200]})"
    return f"{type(original).__name__}: {message[:200]}"
