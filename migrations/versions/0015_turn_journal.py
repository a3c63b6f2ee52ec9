"""turn journal: what a running turn has done, so a re-run repeats none of it

`turn_journal` holds, per turn key, each model answer of the turn (``round:N``) and the result
of each call that wrote something (``call:R:I``: round R, call I). A turn run again after a
crash answers those from here instead of asking the model or writing again; the turn's rows
are deleted in the transaction that completes it.

`work_items.cut_by_stop` marks a running turn a clean stop cut off, so running it again is not
counted among the retries a crash uses up.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "turn_journal",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("turn_key", sa.String(300), nullable=False),
        sa.Column("entry", sa.String(60), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_turn_journal")),
        sa.UniqueConstraint("turn_key", "entry", name=op.f("uq_turn_journal_turn_key")),
    )
    op.create_index("ix_turn_journal_created", "turn_journal", ["created_at"])
    op.add_column(
        "work_items",
        sa.Column("cut_by_stop", sa.Boolean(), nullable=False, server_default=sa.false()),
    )


def downgrade() -> None:
    with op.batch_alter_table("work_items") as batch:
        batch.drop_column("cut_by_stop")
    op.drop_index("ix_turn_journal_created", table_name="turn_journal")
    op.drop_table("turn_journal")
