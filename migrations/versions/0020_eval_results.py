"""eval results: how each storyteller's scenarios fared each time `storyteller eval` ran

One row per scenario and evaluation, by storyteller name (an evaluation runs on a throw-away copy
of the pack): the model, the pass rate, whether it passed or was skipped, a run's mean tokens,
USD and seconds. The dashboard shows the latest per storyteller and the trend.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "eval_results",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("storyteller", sa.String(200), nullable=False),
        sa.Column("pack", sa.String(200), nullable=False),
        sa.Column("scenario", sa.String(200), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("evaluated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("runs", sa.Integer(), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("pass_rate", sa.Float(), nullable=False),
        sa.Column("passed", sa.Boolean(), nullable=False),
        sa.Column("skipped", sa.Boolean(), nullable=False),
        sa.Column("tokens", sa.Float(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_eval_results")),
    )
    op.create_index("ix_eval_results_storyteller", "eval_results", ["storyteller", "evaluated_at"])


def downgrade() -> None:
    op.drop_index("ix_eval_results_storyteller", table_name="eval_results")
    op.drop_table("eval_results")
