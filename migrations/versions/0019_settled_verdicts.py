"""settled verdicts: the attention model's ignore verdicts, kept to settle repeats by rule

One row per storyteller and event identity (kind, speaker, room class, normalised text; `key`
is its SHA-256): the work item the model ignored, the digest of the prompts it was judged under,
when, and how many later events were settled from it. Nothing refers to the rows; they are
pruned by age and cleared when a storyteller's prompts change.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "settled_verdicts",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("storyteller_id", sa.BigInteger(), nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(40), nullable=False),
        sa.Column("speaker_id", sa.BigInteger(), nullable=True),
        sa.Column("room_class", sa.String(60), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("item_id", sa.BigInteger(), nullable=False),
        sa.Column("prompts", sa.String(64), nullable=False),
        sa.Column("ignored_on", sa.DateTime(timezone=True), nullable=False),
        sa.Column("hits", sa.Integer(), nullable=False),
        sa.Column("last_hit_on", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_settled_verdicts")),
        sa.UniqueConstraint("storyteller_id", "key", name=op.f("uq_settled_verdicts_key")),
    )
    op.create_index(
        "ix_settled_verdicts_ignored", "settled_verdicts", ["storyteller_id", "ignored_on"]
    )


def downgrade() -> None:
    op.drop_index("ix_settled_verdicts_ignored", table_name="settled_verdicts")
    op.drop_table("settled_verdicts")
