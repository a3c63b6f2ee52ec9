"""memory lifecycle: provenance, importance, edit history, digests, audit, memory word index

Memories and situations record where they came from (the run and events that wrote them, and
whether players' text reached that run) and when they last changed; memories get an importance
(1-10) for ranking. Every change to a memory is kept in `memory_edits`; each storyteller has a
rolling digest; exports and erasures are written to `audit_log`.

The memory word index ranks memories by relevance to a turn's events:
SQLite: an FTS5 external-content table (unicode61, diacritics folded) kept in sync by triggers.
PostgreSQL: a GIN index over the 'simple' tsvector of title and text.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_WHEN = sa.DateTime(timezone=True)
FTS = "character_memories_fts"

SQLITE_UP = [
    f"""CREATE VIRTUAL TABLE {FTS} USING fts5(
        title, text, content='character_memories', content_rowid='id',
        tokenize='unicode61 remove_diacritics 2')""",
    f"""CREATE TRIGGER {FTS}_ai AFTER INSERT ON character_memories BEGIN
        INSERT INTO {FTS}(rowid, title, text) VALUES (new.id, new.title, new.text);
    END""",
    f"""CREATE TRIGGER {FTS}_ad AFTER DELETE ON character_memories BEGIN
        INSERT INTO {FTS}({FTS}, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
    END""",
    f"""CREATE TRIGGER {FTS}_au AFTER UPDATE OF title, text ON character_memories BEGIN
        INSERT INTO {FTS}({FTS}, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
        INSERT INTO {FTS}(rowid, title, text) VALUES (new.id, new.title, new.text);
    END""",
    f"INSERT INTO {FTS}({FTS}) VALUES ('rebuild')",
]
SQLITE_DOWN = [
    f"DROP TRIGGER IF EXISTS {FTS}_au",
    f"DROP TRIGGER IF EXISTS {FTS}_ad",
    f"DROP TRIGGER IF EXISTS {FTS}_ai",
    f"DROP TABLE IF EXISTS {FTS}",
]
PG_UP = [
    """CREATE INDEX ix_character_memories_words ON character_memories
        USING gin (to_tsvector('simple', title || ' ' || text))""",
]
PG_DOWN = ["DROP INDEX IF EXISTS ix_character_memories_words"]


def _word_index(up: bool) -> list[str]:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        return SQLITE_UP if up else SQLITE_DOWN
    if dialect == "postgresql":
        return PG_UP if up else PG_DOWN
    raise NotImplementedError(f"no memory word index migration for {dialect}")


def _provenance_columns() -> list[sa.Column[object]]:
    return [
        sa.Column("from_player", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("source_run", sa.String(length=300), nullable=False, server_default=""),
        sa.Column("source_events", sa.Text(), nullable=False, server_default=""),
        sa.Column("updated_on", _WHEN, nullable=True),
    ]


def upgrade() -> None:
    with op.batch_alter_table("character_memories", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("importance", sa.Integer(), nullable=False, server_default="5")
        )
        for column in _provenance_columns():
            batch_op.add_column(column)
    with op.batch_alter_table("situations", schema=None) as batch_op:
        for column in _provenance_columns():
            batch_op.add_column(column)
        batch_op.add_column(sa.Column("resolved_on", _WHEN, nullable=True))
    op.create_table(
        "memory_edits",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("storyteller_id", sa.BigInteger(), nullable=False),
        sa.Column("memory_id", sa.BigInteger(), nullable=False),
        sa.Column("character_id", sa.BigInteger(), nullable=False),
        sa.Column("action", sa.String(length=20), nullable=False),
        sa.Column("actor", sa.String(length=300), nullable=False),
        sa.Column("at", _WHEN, nullable=False),
        sa.Column("title_before", sa.Text(), nullable=True),
        sa.Column("text_before", sa.Text(), nullable=True),
        sa.Column("title_after", sa.Text(), nullable=True),
        sa.Column("text_after", sa.Text(), nullable=True),
        sa.Column("from_player", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_memory_edits")),
    )
    with op.batch_alter_table("memory_edits", schema=None) as batch_op:
        batch_op.create_index("ix_memory_edits_memory", ["storyteller_id", "memory_id"])
        batch_op.create_index("ix_memory_edits_character", ["character_id"])
    op.create_table(
        "storyteller_digests",
        sa.Column("storyteller_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.String(length=64), nullable=False),
        sa.Column("run_key", sa.String(length=300), nullable=False),
        sa.Column("refreshed_on", _WHEN, nullable=False),
        sa.PrimaryKeyConstraint("storyteller_id", name=op.f("pk_storyteller_digests")),
    )
    op.create_table(
        "audit_log",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("at", _WHEN, nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("subject", sa.String(length=200), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    for statement in _word_index(up=True):
        op.execute(statement)


def downgrade() -> None:
    for statement in _word_index(up=False):
        op.execute(statement)
    op.drop_table("audit_log")
    op.drop_table("storyteller_digests")
    with op.batch_alter_table("memory_edits", schema=None) as batch_op:
        batch_op.drop_index("ix_memory_edits_character")
        batch_op.drop_index("ix_memory_edits_memory")
    op.drop_table("memory_edits")
    with op.batch_alter_table("situations", schema=None) as batch_op:
        for name in ("resolved_on", "updated_on", "source_events", "source_run", "from_player"):
            batch_op.drop_column(name)
    with op.batch_alter_table("character_memories", schema=None) as batch_op:
        for name in ("updated_on", "source_events", "source_run", "from_player", "importance"):
            batch_op.drop_column(name)
