"""speech heard once: each speech event keeps one history line however often it is routed

`speech_history.heard_as` holds the event's stream position (``epoch:seq``); with the time it
was said it is unique, so an event routed again (a daemon of a cluster sweeping what another
left undispatched, a restart dispatching what a crash left) adds no second line. Rows written
before have none (NULLs are distinct).

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("speech_history") as batch:
        batch.add_column(sa.Column("heard_as", sa.String(400), nullable=True))
    op.create_index(
        "ux_speech_history_heard_as",
        "speech_history",
        ["heard_as", "occurred_at"],
        unique=True,
    )


def downgrade() -> None:
    op.drop_index("ux_speech_history_heard_as", table_name="speech_history")
    with op.batch_alter_table("speech_history") as batch:
        batch.drop_column("heard_as")
