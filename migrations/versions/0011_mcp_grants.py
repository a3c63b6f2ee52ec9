"""MCP grants on each storyteller: the MCP servers whose tools it may call, with allow-lists

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


# Plain ALTER TABLE on both backends, as for the attention rules (0006): a batch migration would
# rebuild `storytellers` on SQLite and cascade into its children.


def upgrade() -> None:
    # The server default gives every existing storyteller no MCP tools.
    op.add_column(
        "storytellers",
        sa.Column("mcp_grants", sa.Text(), server_default="[]", nullable=False),
    )


def downgrade() -> None:
    op.drop_column("storytellers", "mcp_grants")
