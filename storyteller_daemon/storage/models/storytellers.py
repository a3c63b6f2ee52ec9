"""A storyteller's settings: its row, its surveillance, its custom tools and their parameters."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Float,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from storyteller_daemon.storage.models.base import Base, Id, UtcDateTime


class StorytellerRow(Base):
    """One storyteller's settings; ``revision`` grows on each change so the daemon notices."""

    __tablename__ = "storytellers"
    __table_args__ = (
        CheckConstraint(
            "speech_context_count >= 0 AND speech_context_count <= 50", name="speech_context_count"
        ),
        CheckConstraint("speech_context_window_ms > 0", name="speech_context_window"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    name_key: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    model: Mapped[str] = mapped_column(String(200))
    time_model: Mapped[str | None] = mapped_column(String(200))
    attention_model: Mapped[str | None] = mapped_column(String(200))
    reasoning_effort: Mapped[str | None] = mapped_column(String(20))
    time_reasoning_effort: Mapped[str | None] = mapped_column(String(20))
    attention_reasoning_effort: Mapped[str | None] = mapped_column(String(20))
    system_prompt: Mapped[str] = mapped_column(Text, default="")
    time_system_prompt: Mapped[str | None] = mapped_column(Text)
    attention_prompt: Mapped[str] = mapped_column(Text, default="")
    subscribe_room: Mapped[bool] = mapped_column(Boolean, default=True)
    subscribe_speech: Mapped[bool] = mapped_column(Boolean, default=False)
    subscribe_crime: Mapped[bool] = mapped_column(Boolean, default=False)
    subscribe_state: Mapped[bool] = mapped_column(Boolean, default=False)
    heartbeat_5m: Mapped[bool] = mapped_column(Boolean, default=False)
    heartbeat_10m: Mapped[bool] = mapped_column(Boolean, default=False)
    heartbeat_30m: Mapped[bool] = mapped_column(Boolean, default=False)
    heartbeat_1h: Mapped[bool] = mapped_column(Boolean, default=False)
    status_prog_5m: Mapped[str | None] = mapped_column(String(200))
    status_prog_10m: Mapped[str | None] = mapped_column(String(200))
    status_prog_30m: Mapped[str | None] = mapped_column(String(200))
    status_prog_1h: Mapped[str | None] = mapped_column(String(200))
    player_info_prog: Mapped[str | None] = mapped_column(String(200))
    paused: Mapped[bool] = mapped_column(Boolean, default=True)
    speech_context_count: Mapped[int] = mapped_column(Integer, default=0)
    speech_context_window_ms: Mapped[int] = mapped_column(BigInteger, default=600_000)
    attention_rules: Mapped[str] = mapped_column(Text, default="[]", server_default="[]")
    """The attention rules in order, as a JSON array (see `storytellers.rules_to_json`)."""
    mcp_grants: Mapped[str] = mapped_column(Text, default="[]", server_default="[]")
    """The MCP servers it may use with their allow-lists, as a JSON array
    (see `storytellers.grants_to_json`)."""
    direction: Mapped[str] = mapped_column(Text, default="{}", server_default="{}")
    """Plans, co-operation, pacing and context providers, as a JSON object
    (see `direction_json`)."""
    daily_budget_usd: Mapped[float | None] = mapped_column(Float)
    """Its own daily USD cap (0: none); NULL leaves it to ``[budgets]``."""
    written_for: Mapped[str | None] = mapped_column(String(200))
    """The world its pack was written for (``sim`` or a game's name); NULL: unsaid."""
    revision: Mapped[int] = mapped_column(Integer, default=1)
    created_on: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_on: Mapped[datetime] = mapped_column(UtcDateTime)

    surveillance: Mapped[list[SurveillanceRow]] = relationship(
        cascade="all, delete-orphan", passive_deletes=True, lazy="selectin"
    )
    tools: Mapped[list[CustomToolRow]] = relationship(
        cascade="all, delete-orphan",
        passive_deletes=True,
        lazy="selectin",
        order_by="CustomToolRow.name_key",
    )


class SurveillanceRow(Base):
    """One zone, included room or excluded room of a storyteller's surveillance."""

    __tablename__ = "storyteller_surveillance"
    __table_args__ = (CheckConstraint("kind IN ('zone', 'include', 'exclude')", name="kind"),)

    storyteller_id: Mapped[int] = mapped_column(
        Id, ForeignKey("storytellers.id", ondelete="CASCADE"), primary_key=True
    )
    kind: Mapped[str] = mapped_column(String(10), primary_key=True)
    target_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)


class CustomToolRow(Base):
    """A prog-backed tool; its parameters are the prog's, only descriptions are stored."""

    __tablename__ = "custom_tools"
    __table_args__ = (UniqueConstraint("storyteller_id", "name_key", name="uq_custom_tools_name"),)

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    storyteller_id: Mapped[int] = mapped_column(
        Id, ForeignKey("storytellers.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(64))
    name_key: Mapped[str] = mapped_column(String(64))
    description: Mapped[str] = mapped_column(Text, default="")
    prog: Mapped[str] = mapped_column(String(200))
    echo_only: Mapped[bool] = mapped_column(Boolean, default=False)
    return_type: Mapped[str | None] = mapped_column(String(100))
    """The prog return type the tool was written for; NULL: unsaid."""
    dictated: Mapped[str | None] = mapped_column(String(10))
    """What its texts may do when they repeat players' words; NULL: refuse."""

    parameters: Mapped[list[CustomToolParameterRow]] = relationship(
        cascade="all, delete-orphan",
        passive_deletes=True,
        lazy="selectin",
        order_by="CustomToolParameterRow.position",
    )


class CustomToolParameterRow(Base):
    """The description of one prog parameter of a custom tool."""

    __tablename__ = "custom_tool_parameters"

    tool_id: Mapped[int] = mapped_column(
        Id, ForeignKey("custom_tools.id", ondelete="CASCADE"), primary_key=True
    )
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    description: Mapped[str] = mapped_column(Text, default="")
    type_name: Mapped[str | None] = mapped_column(String(100))
    """The prog type the tool was written for (``Number``); NULL: unsaid."""
