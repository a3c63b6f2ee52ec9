"""memory ranking: candidate indexes, and a stored word vector on PostgreSQL

A turn's prompt ranks a storyteller's memories by recency, importance and relevance; the
database offers the candidates (the newest written, the newest changed, the most important),
each list read in index order and cut at a limit, however many memories a storyteller keeps.

On PostgreSQL the memory word index of 0010 was built on an expression, so ranking a match
(``ts_rank``) and checking one outside the index parsed its text again: with a common word,
every match was parsed on every turn. The weighted vector (title A, text D) is now a stored
generated column, as reference documents have, and the GIN index ``ix_character_memories_words``
is rebuilt on it. SQLite's FTS5 index stores its own and is unchanged.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

INDEXES = {
    "ix_character_memories_created": ["storyteller_id", "created_on"],
    "ix_character_memories_updated": ["storyteller_id", "updated_on"],
    "ix_character_memories_importance": ["storyteller_id", "importance", "created_on"],
}
PG_UP = [
    "DROP INDEX IF EXISTS ix_character_memories_words",
    """ALTER TABLE character_memories ADD COLUMN search_vector tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('simple', title), 'A') || setweight(to_tsvector('simple', text), 'D')
    ) STORED""",
    "CREATE INDEX ix_character_memories_words ON character_memories USING gin (search_vector)",
]
PG_DOWN = [
    "DROP INDEX IF EXISTS ix_character_memories_words",
    "ALTER TABLE character_memories DROP COLUMN IF EXISTS search_vector",
    """CREATE INDEX ix_character_memories_words ON character_memories
        USING gin (to_tsvector('simple', title || ' ' || text))""",
]


def upgrade() -> None:
    with op.batch_alter_table("character_memories", schema=None) as batch_op:
        for name, columns in INDEXES.items():
            batch_op.create_index(name, columns)
    if op.get_bind().dialect.name == "postgresql":
        for statement in PG_UP:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for statement in PG_DOWN:
            op.execute(statement)
    with op.batch_alter_table("character_memories", schema=None) as batch_op:
        for name in INDEXES:
            batch_op.drop_index(name)
