"""policy: parked calls awaiting approval, and the prog calls the caps count

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "policy_approvals",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("key", sa.String(length=300), nullable=False),
        sa.Column("storyteller_id", sa.BigInteger(), nullable=False),
        sa.Column("tool", sa.String(length=200), nullable=False),
        sa.Column("arguments", sa.Text(), nullable=False),
        sa.Column("turn_key", sa.String(length=300), nullable=False),
        sa.Column("trigger", sa.String(length=100), nullable=False),
        sa.Column("room_id", sa.BigInteger(), nullable=True),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("decided_by", sa.String(length=200), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_policy_approvals")),
        sa.UniqueConstraint("key", name=op.f("uq_policy_approvals_key")),
    )
    with op.batch_alter_table("policy_approvals", schema=None) as batch_op:
        batch_op.create_index("ix_policy_approvals_state", ["state", "id"], unique=False)
    op.create_table(
        "policy_actions",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("storyteller_id", sa.BigInteger(), nullable=False),
        sa.Column("tool", sa.String(length=200), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("player_id", sa.BigInteger(), nullable=True),
        sa.Column("rooms", sa.Text(), nullable=False),
        sa.Column("characters", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_policy_actions")),
    )
    with op.batch_alter_table("policy_actions", schema=None) as batch_op:
        batch_op.create_index("ix_policy_actions_at", ["at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("policy_actions", schema=None) as batch_op:
        batch_op.drop_index("ix_policy_actions_at")
    op.drop_table("policy_actions")
    with op.batch_alter_table("policy_approvals", schema=None) as batch_op:
        batch_op.drop_index("ix_policy_approvals_state")
    op.drop_table("policy_approvals")
