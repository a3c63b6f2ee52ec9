"""Every text column of every table, searched (and optionally redacted) with a `Redactor`.

The tables come from the SQLAlchemy metadata with every storage module imported, so a table
added later is swept without a change here. A text column is any `String` (``Text`` included)
that is not part of the primary key; rows are read in primary-key order, a batch at a time, and
a changed value is written back by its key, cut to its column's length if the marker made it
longer.

What the database keeps besides the rows is dealt with here too: SQLite's FTS5 indexes hold the
words of deleted and changed rows until they are merged away, so an erasure rebuilds those over
the tables it changed; and the pages deleted text lived in are cleared after the erasure
commits (`reclaim`).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import String, Table, select, text, tuple_, update
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.domain.character_data import ColumnMention
from storyteller_daemon.domain.redaction import Redactor
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.base import Base
from storyteller_daemon.storage.sqlite_setup import READING

BATCH = 500

Key = tuple[Any, ...]
Places = dict[str, list[str]]
"""Column name → where in its value the character was found."""


def swept_tables() -> list[Table]:
    """Every table the storage package defines (each of its modules imported first)."""
    package = importlib.import_module("storyteller_daemon.storage")
    for module in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"{package.__name__}.{module.name}")
    return list(Base.metadata.sorted_tables)


def text_columns(table: Table) -> list[str]:
    """The columns of `table` a sweep reads: text, not part of the key."""
    return [c.name for c in table.columns if isinstance(c.type, String) and not c.primary_key]


@dataclass
class SweepHits:
    """Where a sweep found the character: table → row key → column → places."""

    tables: dict[str, dict[Key, Places]] = field(default_factory=dict)

    def add(self, table: str, key: Key, places: Places) -> None:
        self.tables.setdefault(table, {})[key] = places

    def rows(self, table: str) -> dict[Key, Places]:
        """The rows of `table` that mention the character."""
        return self.tables.get(table, {})

    def mentions(self) -> list[ColumnMention]:
        """Rows per table column, in table order."""
        counted: dict[tuple[str, str], int] = {}
        for table, rows in self.tables.items():
            for places in rows.values():
                for column in places:
                    counted[table, column] = counted.get((table, column), 0) + 1
        return [ColumnMention(t, c, n) for (t, c), n in counted.items()]

    def counts(self) -> dict[str, int]:
        """Rows per ``table.column``."""
        return {f"{m.table}.{m.column}": m.rows for m in self.mentions()}


async def sweep(
    session: AsyncSession,
    redactor: Redactor,
    *,
    write: bool,
    skip: Collection[str] = (),
) -> SweepHits:
    """Search every text column of every table (but `skip`); with `write`, redact in place."""
    hits = SweepHits()
    for table in swept_tables():
        columns = text_columns(table)
        if table.name in skip or not columns:
            continue
        await _sweep_table(session, table, columns, redactor, hits, write)
    return hits


async def _sweep_table(
    session: AsyncSession,
    table: Table,
    columns: Sequence[str],
    redactor: Redactor,
    hits: SweepHits,
    write: bool,
) -> None:
    keys = list(table.primary_key.columns)
    after: Key | None = None
    while True:
        query = select(*keys, *(table.c[c] for c in columns)).order_by(*keys).limit(BATCH)
        if after is not None:
            query = query.where(
                keys[0] > after[0] if len(keys) == 1 else tuple_(*keys) > tuple_(*after)
            )
        batch = (await session.execute(query)).all()
        for row in batch:
            key = tuple(row[: len(keys)])
            places: Places = {}
            changes: dict[str, str] = {}
            for name, value in zip(columns, row[len(keys) :], strict=True):
                if not isinstance(value, str):
                    continue
                redacted, where = redactor.scrub(value)
                if where:
                    places[name] = where
                    changes[name] = _fit(redacted, table.c[name].type)
            if places:
                hits.add(table.name, key, places)
            if write and changes:
                match = [k == v for k, v in zip(keys, key, strict=True)]
                await session.execute(update(table).where(*match).values(**changes))
        if len(batch) < BATCH:
            return
        after = tuple(batch[-1][: len(keys)])


def _fit(value: str, column_type: Any) -> str:
    length = getattr(column_type, "length", None)
    return value[:length] if length is not None else value


# ---------------------------------------------------------------------- what the files keep

_CONTENT_TABLE = re.compile(r"content\s*=\s*['\"]?(\w+)", re.IGNORECASE)


async def rebuild_fts(db: Database, session: AsyncSession, changed: Collection[str]) -> list[str]:
    """Rebuild the SQLite FTS5 external-content indexes over the `changed` tables.

    An FTS5 index keeps a deleted or replaced row's words in its segments until they merge; a
    rebuild writes the index afresh from its table. Nothing to do on PostgreSQL, whose indexes
    drop dead entries when the table is vacuumed. Returns the indexes rebuilt.
    """
    if db.dialect != "sqlite":
        return []
    found = await session.execute(
        text(
            "SELECT name, sql FROM sqlite_master WHERE type = 'table' "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%' AND lower(sql) LIKE '%fts5%'"
        )
    )
    rebuilt = []
    for name, sql in found.all():
        content = _CONTENT_TABLE.search(sql)
        if content is not None and content.group(1) in changed:
            await session.execute(text(f'INSERT INTO "{name}"("{name}") VALUES (\'rebuild\')'))
            rebuilt.append(name)
    return sorted(rebuilt)


async def reclaim(db: Database, tables: Collection[str]) -> str:
    """Clear the space of deleted and replaced rows, after the transaction that made them.

    SQLite: ``VACUUM`` rewrites the file without its free pages (text deleted earlier
    included), then the write-ahead log is checkpointed and truncated. PostgreSQL: ``VACUUM``
    of each changed table, so no index or page still reaches the old row versions (their bytes
    may stay in free space until reused; ``VACUUM FULL`` rewrites the files, with an exclusive
    lock). Returns what was done, or why it could not be (the erasure itself stands).
    """
    try:
        if db.dialect == "sqlite":
            async with db.engine.execution_options(**{READING: True}).connect() as conn:
                await conn.exec_driver_sql("VACUUM")
                busy = (await conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")).one()[0]
            return "vacuumed" if not busy else "vacuumed; the log is still in use (checkpoint busy)"
        if not tables:
            return "nothing to vacuum"
        async with db.engine.connect() as conn:
            conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
            for table in sorted(tables):
                await conn.exec_driver_sql(f'VACUUM "{table}"')
        return f"vacuumed {len(tables)} table(s)"
    except (OperationalError, DBAPIError) as exc:
        return f"not vacuumed: {type(exc.orig).__name__}: {exc.orig}"
