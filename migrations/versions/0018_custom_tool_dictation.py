"""custom tool dictation: what a custom tool's texts may do when they repeat players' words

`custom_tools.dictated` holds ``refuse``, ``quote`` or ``allow`` as a pack sets it
(``dictated = "quote"`` in a ``[[storyteller.tools]]`` table); NULL, the value of every existing
row, means refuse, as for every prog text (docs/security.md).

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTER TABLE, as for 0017: a batch migration would rebuild the table on SQLite and
    # cascade into its parameters.
    op.add_column("custom_tools", sa.Column("dictated", sa.String(10), nullable=True))


def downgrade() -> None:
    op.drop_column("custom_tools", "dictated")
