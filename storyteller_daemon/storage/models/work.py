"""The daemon's work in progress: the durable backlog, settled verdicts and the turn journal."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.sql.expression import false

from storyteller_daemon.storage.models.base import Base, Id, UtcDateTime


class WorkRow(Base):
    """One trigger in one storyteller's durable backlog (see `domain.work` for the states)."""

    __tablename__ = "work_items"
    __table_args__ = (
        UniqueConstraint("storyteller_id", "source", name="uq_work_items_source"),
        Index("ix_work_items_open", "storyteller_id", "state", "id"),
        Index("ix_work_items_turn", "turn_key"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    storyteller_id: Mapped[int] = mapped_column(BigInteger)
    source: Mapped[str] = mapped_column(String(300))
    kind: Mapped[str] = mapped_column(String(40))
    turn_class: Mapped[str] = mapped_column(String(300))
    room_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    payload: Mapped[str] = mapped_column(Text)
    """The trigger as JSON."""
    state: Mapped[str] = mapped_column(String(20))
    received_on: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_on: Mapped[datetime] = mapped_column(UtcDateTime)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    rule: Mapped[str | None] = mapped_column(String(100), nullable=True)
    turn_key: Mapped[str | None] = mapped_column(String(300), nullable=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    cut_by_stop: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    """A clean stop cut the running turn off: its next run is not counted as a retry."""


class SettledVerdictRow(Base):
    """An attention ignore verdict, kept to settle repeats (`domain.verdict_memory`)."""

    __tablename__ = "settled_verdicts"
    __table_args__ = (
        UniqueConstraint("storyteller_id", "key", name="uq_settled_verdicts_key"),
        Index("ix_settled_verdicts_ignored", "storyteller_id", "ignored_on"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    storyteller_id: Mapped[int] = mapped_column(BigInteger)
    key: Mapped[str] = mapped_column(String(64))
    """SHA-256 of kind, speaker, room class and normalised text."""
    kind: Mapped[str] = mapped_column(String(40))
    speaker_id: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    room_class: Mapped[str] = mapped_column(String(60))
    text: Mapped[str] = mapped_column(Text)
    item_id: Mapped[int] = mapped_column(BigInteger)
    prompts: Mapped[str] = mapped_column(String(64))
    ignored_on: Mapped[datetime] = mapped_column(UtcDateTime)
    hits: Mapped[int] = mapped_column(Integer, default=0)
    last_hit_on: Mapped[datetime | None] = mapped_column(UtcDateTime, nullable=True)


class TurnJournalRow(Base):
    """What a running turn has done: a model answer or a call's result (`storage.turn_journal`)."""

    __tablename__ = "turn_journal"
    __table_args__ = (
        UniqueConstraint("turn_key", "entry"),
        Index("ix_turn_journal_created", "created_at"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    turn_key: Mapped[str] = mapped_column(String(300))
    entry: Mapped[str] = mapped_column(String(60))
    """``round:N`` (the model's N-th answer) or ``call:R:I`` (call I of round R)."""
    body: Mapped[str] = mapped_column(Text)
    """JSON: the answer, or the envelope the call returned."""
    created_at: Mapped[datetime] = mapped_column(UtcDateTime)
