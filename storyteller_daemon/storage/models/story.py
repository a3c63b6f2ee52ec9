"""What storytellers keep of the story: situations, character memories and their edits,
rolling digests, story plans and scene claims."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql.expression import false

from storyteller_daemon.storage.models.base import Base, Id, UtcDateTime


class SituationRow(Base):
    """A narrative thread; scoped to a character xor a room, or universal."""

    __tablename__ = "situations"
    __table_args__ = (
        CheckConstraint("scope_character_id IS NULL OR scope_room_id IS NULL", name="single_scope"),
        Index("ix_situations_open", "storyteller_id", "resolved"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    storyteller_id: Mapped[int] = mapped_column(
        Id, ForeignKey("storytellers.id", ondelete="CASCADE")
    )
    title: Mapped[str] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text, default="")
    created_on: Mapped[datetime] = mapped_column(UtcDateTime)
    resolved: Mapped[bool] = mapped_column(Boolean, default=False)
    scope_character_id: Mapped[int | None] = mapped_column(BigInteger)
    scope_room_id: Mapped[int | None] = mapped_column(BigInteger)
    from_player: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    source_run: Mapped[str] = mapped_column(String(300), default="", server_default="")
    source_events: Mapped[str] = mapped_column(Text, default="", server_default="")
    updated_on: Mapped[datetime | None] = mapped_column(UtcDateTime)
    resolved_on: Mapped[datetime | None] = mapped_column(UtcDateTime)


class MemoryRow(Base):
    """A storyteller's note about one character."""

    __tablename__ = "character_memories"
    __table_args__ = (
        Index("ix_character_memories_character", "storyteller_id", "character_id"),
        # A turn's memory candidates: the newest written, the newest changed, the most important.
        Index("ix_character_memories_created", "storyteller_id", "created_on"),
        Index("ix_character_memories_updated", "storyteller_id", "updated_on"),
        Index("ix_character_memories_importance", "storyteller_id", "importance", "created_on"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    storyteller_id: Mapped[int] = mapped_column(
        Id, ForeignKey("storytellers.id", ondelete="CASCADE")
    )
    character_id: Mapped[int] = mapped_column(BigInteger)
    title: Mapped[str] = mapped_column(Text)
    text: Mapped[str] = mapped_column(Text, default="")
    created_on: Mapped[datetime] = mapped_column(UtcDateTime)
    importance: Mapped[int] = mapped_column(Integer, default=5, server_default="5")
    from_player: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    source_run: Mapped[str] = mapped_column(String(300), default="", server_default="")
    source_events: Mapped[str] = mapped_column(Text, default="", server_default="")
    updated_on: Mapped[datetime | None] = mapped_column(UtcDateTime)


class MemoryEditRow(Base):
    """One change to a memory: who or what made it, when, and the text before and after.

    Kept after the memory is forgotten (the history shows that too); erasing a character
    deletes its rows.
    """

    __tablename__ = "memory_edits"
    __table_args__ = (
        Index("ix_memory_edits_memory", "storyteller_id", "memory_id"),
        Index("ix_memory_edits_character", "character_id"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    storyteller_id: Mapped[int] = mapped_column(BigInteger)
    memory_id: Mapped[int] = mapped_column(BigInteger)
    character_id: Mapped[int] = mapped_column(BigInteger)
    action: Mapped[str] = mapped_column(String(20))
    actor: Mapped[str] = mapped_column(String(300))
    at: Mapped[datetime] = mapped_column(UtcDateTime)
    title_before: Mapped[str | None] = mapped_column(Text)
    text_before: Mapped[str | None] = mapped_column(Text)
    title_after: Mapped[str | None] = mapped_column(Text)
    text_after: Mapped[str | None] = mapped_column(Text)
    from_player: Mapped[bool] = mapped_column(Boolean)


class DigestRow(Base):
    """A storyteller's rolling digest of what happened, and what it was made from."""

    __tablename__ = "storyteller_digests"

    storyteller_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    text: Mapped[str] = mapped_column(Text)
    fingerprint: Mapped[str] = mapped_column(String(64))
    """A hash of the digest's inputs: a refresh with the same inputs is skipped."""
    run_key: Mapped[str] = mapped_column(String(300))
    refreshed_on: Mapped[datetime] = mapped_column(UtcDateTime)


class StoryPlanRow(Base):
    """A storyteller's plan: goal, steps and history as JSON (see `story_plans`)."""

    __tablename__ = "story_plans"
    __table_args__ = (Index("ix_story_plans_open", "storyteller_id", "status"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    storyteller_id: Mapped[int] = mapped_column(
        Id, ForeignKey("storytellers.id", ondelete="CASCADE")
    )
    goal: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(20))
    steps: Mapped[str] = mapped_column(Text)
    history: Mapped[str] = mapped_column(Text)
    from_player: Mapped[bool] = mapped_column(Boolean, default=False)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    created_on: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_on: Mapped[datetime] = mapped_column(UtcDateTime)


class SceneClaimRow(Base):
    """A storyteller's hold on a room for a while (see `scene_claims`)."""

    __tablename__ = "scene_claims"
    __table_args__ = (Index("ix_scene_claims_room", "room_id", "expires_at"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    storyteller_id: Mapped[int] = mapped_column(
        Id, ForeignKey("storytellers.id", ondelete="CASCADE")
    )
    room_id: Mapped[int] = mapped_column(BigInteger)
    claimed_at: Mapped[datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    reason: Mapped[str] = mapped_column(Text, default="")
    released_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
