"""durable per-storyteller work backlog

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "work_items",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("storyteller_id", sa.BigInteger(), nullable=False),
        sa.Column("source", sa.String(length=300), nullable=False),
        sa.Column("kind", sa.String(length=40), nullable=False),
        sa.Column("turn_class", sa.String(length=300), nullable=False),
        sa.Column("room_id", sa.BigInteger(), nullable=True),
        sa.Column("payload", sa.Text(), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("received_on", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_on", sa.DateTime(timezone=True), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("rule", sa.String(length=100), nullable=True),
        sa.Column("turn_key", sa.String(length=300), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_work_items")),
        sa.UniqueConstraint("storyteller_id", "source", name="uq_work_items_source"),
    )
    with op.batch_alter_table("work_items", schema=None) as batch_op:
        batch_op.create_index("ix_work_items_open", ["storyteller_id", "state", "id"], unique=False)
        batch_op.create_index("ix_work_items_turn", ["turn_key"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("work_items", schema=None) as batch_op:
        batch_op.drop_index("ix_work_items_turn")
        batch_op.drop_index("ix_work_items_open")
    op.drop_table("work_items")
