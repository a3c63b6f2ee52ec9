"""What is kept for audit: run records, the cost ledger and the audit log of admin actions."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import Mapped, mapped_column

from storyteller_daemon.storage.models.base import Base, Id, UtcDateTime


class RunRow(Base):
    """One turn or attention call."""

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_started", "started_at"),
        Index("ix_runs_storyteller", "storyteller_id", "started_at"),
        Index("ix_runs_turn_key", "turn_key"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    kind: Mapped[str] = mapped_column(String(20))
    turn_key: Mapped[str] = mapped_column(String(300))
    storyteller_id: Mapped[int] = mapped_column(BigInteger)
    """No foreign key: runs are kept for audit after their storyteller is deleted."""
    storyteller_name: Mapped[str] = mapped_column(String(200))
    trigger_kind: Mapped[str] = mapped_column(String(20))
    trigger_label: Mapped[str] = mapped_column(String(100))
    room_id: Mapped[int | None] = mapped_column(BigInteger)
    verdict: Mapped[str | None] = mapped_column(String(20))
    outcome: Mapped[str] = mapped_column(String(40))
    started_at: Mapped[datetime] = mapped_column(UtcDateTime)
    duration_seconds: Mapped[float] = mapped_column(Float, default=0.0)
    rounds: Mapped[int] = mapped_column(Integer, default=0)
    tool_calls: Mapped[int] = mapped_column(Integer, default=0)
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cached_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    reasoning_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    situation_id: Mapped[int | None] = mapped_column(BigInteger)
    """The first situation a tool of the turn touched, if any."""
    error: Mapped[str | None] = mapped_column(Text)
    record: Mapped[str] = mapped_column(Text)
    """The whole run as JSON."""


class LedgerRow(Base):
    """What one model request cost (see `storyteller_daemon.storage.ledger`)."""

    __tablename__ = "cost_ledger"
    __table_args__ = (
        Index("ix_cost_ledger_day", "day", "storyteller_id"),
        Index("ix_cost_ledger_time", "occurred_at"),
        Index("ix_cost_ledger_run", "run_id"),
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    run_id: Mapped[int | None] = mapped_column(Id, ForeignKey("runs.id", ondelete="SET NULL"))
    occurred_at: Mapped[datetime] = mapped_column(UtcDateTime)
    day: Mapped[str] = mapped_column(String(10))
    """The UTC day as ``YYYY-MM-DD``: groups and indexes the same on every backend."""
    purpose: Mapped[str] = mapped_column(String(20))
    """``attention``, ``turn``, ``digest`` or ``replay``."""
    storyteller_id: Mapped[int | None] = mapped_column(BigInteger)
    storyteller_name: Mapped[str] = mapped_column(String(200), default="")
    trigger_kind: Mapped[str | None] = mapped_column(String(20))
    room_id: Mapped[int | None] = mapped_column(BigInteger)
    situation_id: Mapped[int | None] = mapped_column(BigInteger)
    model: Mapped[str] = mapped_column(String(200))
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cached_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    reasoning_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    cost_usd: Mapped[float] = mapped_column(Float, default=0.0)
    status: Mapped[str] = mapped_column(String(40), default="ok", server_default="ok")
    """``ok`` (answered), ``sent`` (no outcome recorded: the daemon stopped while it was out)
    or how it failed: ``timeout``, ``connection_error``, ``unreachable``, ``bad_response``,
    ``http_NNN``, ``error`` (migration 0016)."""


class AuditRow(Base):
    """An admin action on players' data (export, erase): who, what, when; never the data."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime)
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(40))
    subject: Mapped[str] = mapped_column(String(200))
    detail: Mapped[str] = mapped_column(Text)


class EvalResultRow(Base):
    """One scenario of one ``storyteller eval`` (see `storyteller_daemon.storage.eval_results`)."""

    __tablename__ = "eval_results"
    __table_args__ = (Index("ix_eval_results_storyteller", "storyteller", "evaluated_at"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    storyteller: Mapped[str] = mapped_column(String(200))
    """By name: evaluations run on a throw-away copy of the pack, not on this database's rows."""
    pack: Mapped[str] = mapped_column(String(200))
    scenario: Mapped[str] = mapped_column(String(200))
    model: Mapped[str] = mapped_column(String(200))
    evaluated_at: Mapped[datetime] = mapped_column(UtcDateTime)
    runs: Mapped[int] = mapped_column(Integer)
    threshold: Mapped[float] = mapped_column(Float)
    pass_rate: Mapped[float] = mapped_column(Float)
    passed: Mapped[bool] = mapped_column(Boolean)
    skipped: Mapped[bool] = mapped_column(Boolean)
    tokens: Mapped[float] = mapped_column(Float)
    cost_usd: Mapped[float] = mapped_column(Float)
    seconds: Mapped[float] = mapped_column(Float)
