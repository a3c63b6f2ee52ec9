"""The policy's rows: prog calls parked for approval, and the prog calls its caps count."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Index,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from storyteller_daemon.storage.models.base import Base, Id, UtcDateTime


class ApprovalRow(Base):
    """One parked call."""

    __tablename__ = "policy_approvals"
    __table_args__ = (Index("ix_policy_approvals_state", "state", "id"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(300), unique=True)
    storyteller_id: Mapped[int] = mapped_column(BigInteger)
    tool: Mapped[str] = mapped_column(String(200))
    arguments: Mapped[str] = mapped_column(Text)
    turn_key: Mapped[str] = mapped_column(String(300))
    trigger: Mapped[str] = mapped_column(String(100))
    room_id: Mapped[int | None] = mapped_column(BigInteger)
    state: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime)
    decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime)
    decided_by: Mapped[str] = mapped_column(String(200), default="")
    note: Mapped[str] = mapped_column(Text, default="")
    result: Mapped[str] = mapped_column(Text, default="")


class PolicyActionRow(Base):
    """One prog call that ran, as the caps count it; kept for a day."""

    __tablename__ = "policy_actions"
    __table_args__ = (Index("ix_policy_actions_at", "at"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    storyteller_id: Mapped[int] = mapped_column(BigInteger)
    tool: Mapped[str] = mapped_column(String(200))
    at: Mapped[datetime] = mapped_column(UtcDateTime)
    player_id: Mapped[int | None] = mapped_column(BigInteger)
    rooms: Mapped[str] = mapped_column(Text, default="")
    """Room ids, comma-separated."""
    characters: Mapped[str] = mapped_column(Text, default="")
