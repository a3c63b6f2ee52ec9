"""substring index over reference documents

Search finds documents by case-insensitive substrings of six fields; these trigram indexes give
it candidates without scanning every document.

SQLite: an FTS5 external-content table with the trigram tokenizer (case-insensitive), kept in
sync by triggers, rebuilt from the existing documents.
PostgreSQL: the pg_trgm extension and a GIN trigram index over the six fields joined by spaces
(search terms never hold whitespace, so no term spans two fields). The extension stays on
downgrade: other objects of the database may use it.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

COLUMNS = "name, description, folder, doc_type, keywords, contents"
OLD = ", ".join(f"old.{c.strip()}" for c in COLUMNS.split(","))
NEW = ", ".join(f"new.{c.strip()}" for c in COLUMNS.split(","))
TABLE = "reference_documents_fts_trigram"

SQLITE_UP = [
    f"""CREATE VIRTUAL TABLE {TABLE} USING fts5(
        {COLUMNS}, content='reference_documents', content_rowid='id', tokenize='trigram')""",
    f"""CREATE TRIGGER {TABLE}_ai AFTER INSERT ON reference_documents BEGIN
        INSERT INTO {TABLE}(rowid, {COLUMNS}) VALUES (new.id, {NEW});
    END""",
    f"""CREATE TRIGGER {TABLE}_ad AFTER DELETE ON reference_documents BEGIN
        INSERT INTO {TABLE}({TABLE}, rowid, {COLUMNS}) VALUES ('delete', old.id, {OLD});
    END""",
    f"""CREATE TRIGGER {TABLE}_au AFTER UPDATE OF {COLUMNS} ON reference_documents BEGIN
        INSERT INTO {TABLE}({TABLE}, rowid, {COLUMNS}) VALUES ('delete', old.id, {OLD});
        INSERT INTO {TABLE}(rowid, {COLUMNS}) VALUES (new.id, {NEW});
    END""",
    f"INSERT INTO {TABLE}({TABLE}) VALUES ('rebuild')",
]
SQLITE_DOWN = [
    f"DROP TRIGGER IF EXISTS {TABLE}_au",
    f"DROP TRIGGER IF EXISTS {TABLE}_ad",
    f"DROP TRIGGER IF EXISTS {TABLE}_ai",
    f"DROP TABLE IF EXISTS {TABLE}",
]

PG_UP = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    """CREATE INDEX ix_reference_documents_trigram ON reference_documents USING gin (
        (name || ' ' || description || ' ' || folder || ' ' || doc_type || ' ' || keywords
         || ' ' || contents) gin_trgm_ops)""",
]
PG_DOWN = ["DROP INDEX IF EXISTS ix_reference_documents_trigram"]


def _statements(up: bool) -> list[str]:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        return SQLITE_UP if up else SQLITE_DOWN
    if dialect == "postgresql":
        return PG_UP if up else PG_DOWN
    raise NotImplementedError(f"no substring index migration for {dialect}")


def upgrade() -> None:
    for statement in _statements(up=True):
        op.execute(statement)


def downgrade() -> None:
    for statement in _statements(up=False):
        op.execute(statement)
