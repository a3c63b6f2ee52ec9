"""Migrations run up, down and up again on both backends, and match the models exactly."""

from __future__ import annotations

from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

import storyteller_daemon.storage.approvals
import storyteller_daemon.storage.runs  # noqa: F401 - registers the run and ledger tables
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.autogenerate import (
    autogenerate_include_name,
    autogenerate_include_object,
)
from storyteller_daemon.storage.models.base import Base
from storyteller_daemon.storage.references import insert_documents
from storyteller_daemon.storage.store import Store

EXPECTED_TABLES = {
    "storytellers",
    "storyteller_surveillance",
    "custom_tools",
    "custom_tool_parameters",
    "situations",
    "character_memories",
    "reference_documents",
    "reference_document_storytellers",
    "speech_history",
    "stream_state",
    "event_inbox",
    "runs",
    "cost_ledger",
    "policy_approvals",
    "policy_actions",
    "eval_results",
}


async def _tables(db: Database) -> set[str]:
    async with db.engine.connect() as conn:
        return set(await conn.run_sync(lambda c: inspect(c).get_table_names()))


async def test_upgrade_downgrade_upgrade(db_url: str) -> None:
    db = Database(db_url, clock=None)
    try:
        assert await db.current_revision() is None
        await db.upgrade()
        assert await db.current_revision() == db.head_revision()
        assert EXPECTED_TABLES <= await _tables(db)

        await db.downgrade("base")
        assert await db.current_revision() is None
        assert not (EXPECTED_TABLES & await _tables(db))

        await db.upgrade()
        assert await db.current_revision() == db.head_revision()
        # the full-text index works after the round trip
        store = Store(db, SystemClock())
        await store.references.create(ReferenceDocument(name="Tides", contents="the harbour"))
        assert [d.name for d in await store.references.search("harbour")] == ["Tides"]
    finally:
        await db.close()


async def test_autogenerate_finds_no_drift(db_url: str) -> None:
    db = Database(db_url, clock=None)
    try:
        await db.upgrade()

        def diff(sync_conn: Any) -> list[Any]:
            ctx = MigrationContext.configure(
                sync_conn,
                opts={
                    "compare_type": True,
                    "include_name": autogenerate_include_name,
                    "include_object": autogenerate_include_object,
                },
            )
            return list(compare_metadata(ctx, Base.metadata))

        async with db.engine.connect() as conn:
            changes = await conn.run_sync(diff)
        assert changes == []
    finally:
        await db.close()


async def test_require_current_names_the_fix(sqlite_url: str) -> None:
    import pytest

    from storyteller_daemon.errors import NotMigratedError

    db = Database(sqlite_url, clock=None)
    try:
        with pytest.raises(NotMigratedError, match="storyteller db upgrade"):
            await db.require_current()
    finally:
        await db.close()


async def _search_indexes(db: Database) -> set[str]:
    """The substring index objects of migration 0009 present in the database."""

    def read(sync_conn: Any) -> set[str]:
        inspector = inspect(sync_conn)
        tables = set(inspector.get_table_names())
        indexes = {i["name"] for i in inspector.get_indexes("reference_documents")}
        return {n for n in tables | indexes if n and "trigram" in n}

    async with db.engine.connect() as conn:
        return await conn.run_sync(read)


async def test_the_substring_index_covers_documents_written_before_it(db_url: str) -> None:
    db = Database(db_url, clock=None)
    try:
        await db.upgrade()
        assert await _search_indexes(db)
        await db.downgrade("0008")
        assert not await _search_indexes(db)
        async with db.session() as session:
            await insert_documents(
                session,
                [ReferenceDocument(name="Old", contents="harbourmaster")],
                SystemClock().now(),
            )
        await db.upgrade()
        assert await _search_indexes(db)
        assert [d.name for d in await Store(db, SystemClock()).references.search("ourmast")] == [
            "Old"
        ]
    finally:
        await db.close()
