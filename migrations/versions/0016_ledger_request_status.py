"""ledger request status: every model request in the cost ledger, answered or not

`cost_ledger.status` says how a request ended: ``ok`` (answered), ``sent`` (written before it
went out and never settled: the daemon stopped meanwhile) or how it failed (``timeout``,
``connection_error``, ``unreachable``, ``bad_response``, ``http_NNN``, ``error``). Rows written
before this revision were all answered requests (or worst-case rows of requests cut off by a
crash), so they read ``ok``.

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Plain ALTER TABLE on both backends (SQLite adds a NOT NULL column with a constant default).
    op.add_column(
        "cost_ledger",
        sa.Column("status", sa.String(length=40), nullable=False, server_default="ok"),
    )


def downgrade() -> None:
    op.drop_column("cost_ledger", "status")
