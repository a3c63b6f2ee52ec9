"""prog catalogues: the last progs each world gave, for admin commands while it is down

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "prog_catalogues",
        sa.Column("world", sa.String(length=200), nullable=False),
        sa.Column("progs", sa.Text(), nullable=False),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("world", name=op.f("pk_prog_catalogues")),
    )


def downgrade() -> None:
    op.drop_table("prog_catalogues")
