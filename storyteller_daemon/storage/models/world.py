"""What the world sent: the event inbox and stream cursor, the speech history of watched rooms,
and the last prog catalogue."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Index,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from storyteller_daemon.storage.models.base import Base, Id, UtcDateTime


class StreamStateRow(Base):
    """The daemon's durable position in a world's event stream (one row per world)."""

    __tablename__ = "stream_state"

    world: Mapped[str] = mapped_column(String(200), primary_key=True)
    epoch: Mapped[str] = mapped_column(String(200))
    seq: Mapped[int] = mapped_column(BigInteger)
    updated_on: Mapped[datetime] = mapped_column(UtcDateTime)


class InboxRow(Base):
    """A world event stored before it is dispatched; the cursor advances in the same transaction."""

    __tablename__ = "event_inbox"
    __table_args__ = (
        UniqueConstraint("world", "epoch", "seq", name="uq_event_inbox_cursor"),
        Index("ix_event_inbox_pending", "world", "dispatched"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    world: Mapped[str] = mapped_column(String(200))
    epoch: Mapped[str] = mapped_column(String(200))
    seq: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(40))
    payload: Mapped[str] = mapped_column(Text)
    """The event as JSON."""
    received_on: Mapped[datetime] = mapped_column(UtcDateTime)
    dispatched: Mapped[bool] = mapped_column(Boolean, default=False)


class SpeechRow(Base):
    """One line of speech heard in a watched room (the speech-context history).

    Bounded per room (newest 200, last 24 hours, 400 characters per field) by the repository.
    """

    __tablename__ = "speech_history"
    __table_args__ = (
        Index("ix_speech_history_cell_time", "cell_id", "occurred_at"),
        Index("ux_speech_history_heard_as", "heard_as", "occurred_at", unique=True),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    cell_id: Mapped[int] = mapped_column(BigInteger)
    occurred_at: Mapped[datetime] = mapped_column(UtcDateTime)
    speaker_id: Mapped[int] = mapped_column(BigInteger)
    speaker_name: Mapped[str] = mapped_column(String(400))
    target_id: Mapped[int | None] = mapped_column(BigInteger)
    target_kind: Mapped[str | None] = mapped_column(String(100))
    target_description: Mapped[str | None] = mapped_column(String(400))
    message: Mapped[str] = mapped_column(String(400))
    volume: Mapped[str] = mapped_column(String(100), default="Normal")
    language: Mapped[str] = mapped_column(String(400), default="")
    accent: Mapped[str] = mapped_column(String(400), default="")
    heard_as: Mapped[str | None] = mapped_column(String(400), default=None)
    """The speech event's stream position (``epoch:seq``): with `occurred_at`, one line per
    event however often it is routed (None: written before it was kept)."""


class CatalogueRow(Base):
    """One world's progs as last fetched."""

    __tablename__ = "prog_catalogues"

    world: Mapped[str] = mapped_column(String(200), primary_key=True)
    progs: Mapped[str] = mapped_column(Text)
    """The signatures as the bridge protocol encodes its ``progs`` result (JSON)."""
    fetched_at: Mapped[datetime] = mapped_column(UtcDateTime)
