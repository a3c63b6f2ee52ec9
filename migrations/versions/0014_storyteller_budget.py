"""storyteller budget: each storyteller's own daily USD cap

`storytellers.daily_budget_usd` is the cap an admin set on the storyteller (0: none); NULL, the
default, leaves it to ``[budgets]`` in the configuration.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTER TABLE, as for the direction (0013): a batch migration would rebuild
    # `storytellers` on SQLite and cascade into its children.
    op.add_column("storytellers", sa.Column("daily_budget_usd", sa.Float(), nullable=True))


def downgrade() -> None:
    op.drop_column("storytellers", "daily_budget_usd")
