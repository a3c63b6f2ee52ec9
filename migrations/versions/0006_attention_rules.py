"""attention rules on each storyteller

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


# Plain ALTER TABLE on both backends (SQLite 3.35+ drops columns natively). A batch migration
# would rebuild `storytellers` on SQLite, and dropping the old table with foreign keys on would
# cascade into every storyteller's situations, memories and tools.


def upgrade() -> None:
    # The server default gives every existing storyteller an empty rule list.
    op.add_column(
        "storytellers",
        sa.Column("attention_rules", sa.Text(), server_default="[]", nullable=False),
    )


def downgrade() -> None:
    op.drop_column("storytellers", "attention_rules")
