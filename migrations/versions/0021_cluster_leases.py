"""cluster leases: several daemons over one PostgreSQL database

`cluster_instances` holds each daemon of the cluster with its last renewal; `storyteller_leases`
which daemon runs each storyteller until when, with the fencing token that grows with each new
owner; `cluster_flags` the switches every daemon honours (the kill switch's database twin).

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "cluster_instances",
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("renewed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_cluster_instances")),
    )
    op.create_table(
        "storyteller_leases",
        sa.Column("storyteller_id", sa.BigInteger(), autoincrement=False, nullable=False),
        sa.Column("owner", sa.String(100), nullable=True),
        sa.Column("token", sa.BigInteger(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("taken_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("storyteller_id", name=op.f("pk_storyteller_leases")),
    )
    op.create_index("ix_storyteller_leases_owner", "storyteller_leases", ["owner"])
    op.create_table(
        "cluster_flags",
        sa.Column("name", sa.String(60), nullable=False),
        sa.Column("on", sa.Boolean(), nullable=False),
        sa.Column("changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("changed_by", sa.String(100), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_cluster_flags")),
    )


def downgrade() -> None:
    op.drop_table("cluster_flags")
    op.drop_index("ix_storyteller_leases_owner", table_name="storyteller_leases")
    op.drop_table("storyteller_leases")
    op.drop_table("cluster_instances")
