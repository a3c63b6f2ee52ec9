"""written for: the world a storyteller's pack was written for, and its tools' prog types

`storytellers.written_for` names the world (``sim`` or a game's name) the pack that made the
storyteller was written for; `custom_tools.return_type` and `custom_tool_parameters.type_name`
hold the prog types a custom tool was written for. All are NULL when unsaid, so existing rows
keep their meaning; `storyteller doctor` compares them with the world.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTER TABLE, as for the budget (0014): a batch migration would rebuild the tables
    # on SQLite and cascade into their children.
    op.add_column("storytellers", sa.Column("written_for", sa.String(200), nullable=True))
    op.add_column("custom_tools", sa.Column("return_type", sa.String(100), nullable=True))
    op.add_column("custom_tool_parameters", sa.Column("type_name", sa.String(100), nullable=True))


def downgrade() -> None:
    op.drop_column("custom_tool_parameters", "type_name")
    op.drop_column("custom_tools", "return_type")
    op.drop_column("storytellers", "written_for")
