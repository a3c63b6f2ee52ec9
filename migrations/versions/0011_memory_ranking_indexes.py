"""indexes that choose a turn's memory candidates

A turn's prompt ranks a storyteller's memories by recency, importance and relevance; the
database offers the candidates (the newest written, the newest changed, the most important),
each list read in index order and cut at a limit, however many memories a storyteller keeps.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

INDEXES = {
    "ix_character_memories_created": ["storyteller_id", "created_on"],
    "ix_character_memories_updated": ["storyteller_id", "updated_on"],
    "ix_character_memories_importance": ["storyteller_id", "importance", "created_on"],
}


def upgrade() -> None:
    with op.batch_alter_table("character_memories", schema=None) as batch_op:
        for name, columns in INDEXES.items():
            batch_op.create_index(name, columns)


def downgrade() -> None:
    with op.batch_alter_table("character_memories", schema=None) as batch_op:
        for name in INDEXES:
            batch_op.drop_index(name)
