"""director: story plans, scene claims, and each storyteller's direction settings

`story_plans` holds each storyteller's plans (goal, steps and history as JSON; the history keeps
every replan with its reason); `scene_claims` the rooms storytellers hold for a while so others
do not act there; `storytellers.direction` a JSON object with the plan switch, co-operation,
pacing and context providers.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_WHEN = sa.DateTime(timezone=True)


def _owner(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["storyteller_id"],
        ["storytellers.id"],
        name=op.f(f"fk_{table}_storyteller_id_storytellers"),
        ondelete="CASCADE",
    )


def upgrade() -> None:
    # Plain ALTER TABLE, as for the attention rules (0006): a batch migration would rebuild
    # `storytellers` on SQLite and cascade into its children. The default directs nothing.
    op.add_column(
        "storytellers", sa.Column("direction", sa.Text(), server_default="{}", nullable=False)
    )
    op.create_table(
        "story_plans",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("storyteller_id", _ID, nullable=False),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("steps", sa.Text(), nullable=False),
        sa.Column("history", sa.Text(), nullable=False),
        sa.Column("from_player", sa.Boolean(), nullable=False),
        sa.Column("expires_at", _WHEN, nullable=False),
        sa.Column("created_on", _WHEN, nullable=False),
        sa.Column("updated_on", _WHEN, nullable=False),
        _owner("story_plans"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_story_plans")),
    )
    op.create_index("ix_story_plans_open", "story_plans", ["storyteller_id", "status"])
    op.create_table(
        "scene_claims",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("storyteller_id", _ID, nullable=False),
        sa.Column("room_id", sa.BigInteger(), nullable=False),
        sa.Column("claimed_at", _WHEN, nullable=False),
        sa.Column("expires_at", _WHEN, nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("released_at", _WHEN, nullable=True),
        _owner("scene_claims"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scene_claims")),
    )
    op.create_index("ix_scene_claims_room", "scene_claims", ["room_id", "expires_at"])


def downgrade() -> None:
    op.drop_index("ix_scene_claims_room", table_name="scene_claims")
    op.drop_table("scene_claims")
    op.drop_index("ix_story_plans_open", table_name="story_plans")
    op.drop_table("story_plans")
    op.drop_column("storytellers", "direction")
