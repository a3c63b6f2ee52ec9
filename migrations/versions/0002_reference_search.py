"""full-text search over reference documents

SQLite: an FTS5 external-content table kept in sync by triggers.
PostgreSQL: a stored tsvector column (weighted: name and keywords first) with a GIN index.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

COLUMNS = "name, description, folder, doc_type, keywords, contents"
OLD = ", ".join(f"old.{c.strip()}" for c in COLUMNS.split(","))
NEW = ", ".join(f"new.{c.strip()}" for c in COLUMNS.split(","))

SQLITE_UP = [
    f"""CREATE VIRTUAL TABLE reference_documents_fts USING fts5(
        {COLUMNS}, content='reference_documents', content_rowid='id',
        tokenize='porter unicode61 remove_diacritics 2')""",
    f"""CREATE TRIGGER reference_documents_fts_ai AFTER INSERT ON reference_documents BEGIN
        INSERT INTO reference_documents_fts(rowid, {COLUMNS}) VALUES (new.id, {NEW});
    END""",
    f"""CREATE TRIGGER reference_documents_fts_ad AFTER DELETE ON reference_documents BEGIN
        INSERT INTO reference_documents_fts(reference_documents_fts, rowid, {COLUMNS})
        VALUES ('delete', old.id, {OLD});
    END""",
    f"""CREATE TRIGGER reference_documents_fts_au AFTER UPDATE ON reference_documents BEGIN
        INSERT INTO reference_documents_fts(reference_documents_fts, rowid, {COLUMNS})
        VALUES ('delete', old.id, {OLD});
        INSERT INTO reference_documents_fts(rowid, {COLUMNS}) VALUES (new.id, {NEW});
    END""",
    "INSERT INTO reference_documents_fts(reference_documents_fts) VALUES ('rebuild')",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS reference_documents_fts_au",
    "DROP TRIGGER IF EXISTS reference_documents_fts_ad",
    "DROP TRIGGER IF EXISTS reference_documents_fts_ai",
    "DROP TABLE IF EXISTS reference_documents_fts",
]

PG_UP = [
    """ALTER TABLE reference_documents ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', coalesce(name, '')), 'A') ||
        setweight(to_tsvector('english', coalesce(keywords, '')), 'A') ||
        setweight(to_tsvector('english', coalesce(description, '')), 'B') ||
        setweight(to_tsvector('english', coalesce(folder, '') || ' ' || coalesce(doc_type, '')), 'C') ||
        setweight(to_tsvector('english', coalesce(contents, '')), 'D')
    ) STORED""",
    "CREATE INDEX ix_reference_documents_search ON reference_documents USING gin (search_vector)",
]
PG_DOWN = [
    "DROP INDEX IF EXISTS ix_reference_documents_search",
    "ALTER TABLE reference_documents DROP COLUMN IF EXISTS search_vector",
]


def _statements(up: bool) -> list[str]:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        return SQLITE_UP if up else SQLITE_DOWN
    if dialect == "postgresql":
        return PG_UP if up else PG_DOWN
    raise NotImplementedError(f"no full-text search migration for {dialect}")


def upgrade() -> None:
    for statement in _statements(up=True):
        op.execute(statement)


def downgrade() -> None:
    for statement in _statements(up=False):
        op.execute(statement)
