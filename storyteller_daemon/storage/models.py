"""ORM tables. Repositories translate rows to domain objects; nothing outside storage sees these.

World ids (characters, rooms, zones) are plain integers: the world lives in the game, not here.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.sql.expression import false

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# BigInteger ids autoincrement on SQLite only when declared INTEGER there.
Id = BigInteger().with_variant(Integer(), "sqlite")
UtcDateTime = DateTime(timezone=True)


class Base(DeclarativeBase):
    """Declarative base with named constraints (SQLite batch migrations need the names)."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


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


class AuditRow(Base):
    """An admin action on players' data (export, erase): who, what, when; never the data."""

    __tablename__ = "audit_log"

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column(UtcDateTime)
    actor: Mapped[str] = mapped_column(String(200))
    action: Mapped[str] = mapped_column(String(40))
    subject: Mapped[str] = mapped_column(String(200))
    detail: Mapped[str] = mapped_column(Text)


class ReferenceDocumentRow(Base):
    """A searchable document. Word and trigram indexes are created by migrations per dialect."""

    __tablename__ = "reference_documents"
    __table_args__ = ({"sqlite_autoincrement": True},)

    id: Mapped[int] = mapped_column(Id, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200))
    name_key: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text, default="")
    folder: Mapped[str] = mapped_column(String(200), default="General")
    doc_type: Mapped[str] = mapped_column(String(200), default="General")
    keywords: Mapped[str] = mapped_column(Text, default="")
    contents: Mapped[str] = mapped_column(Text, default="")
    created_on: Mapped[datetime] = mapped_column(UtcDateTime)
    updated_on: Mapped[datetime] = mapped_column(UtcDateTime)

    restrictions: Mapped[list[ReferenceRestrictionRow]] = relationship(
        cascade="all, delete-orphan", passive_deletes=True, lazy="selectin"
    )


class ReferenceRestrictionRow(Base):
    """One storyteller allowed to read a restricted document.

    Deliberately no foreign key to storytellers: deleting a storyteller must not turn a document
    that was restricted to it into a global one. Storyteller ids are never reused.
    """

    __tablename__ = "reference_document_storytellers"

    document_id: Mapped[int] = mapped_column(
        Id, ForeignKey("reference_documents.id", ondelete="CASCADE"), primary_key=True
    )
    storyteller_id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)


class SpeechRow(Base):
    """One line of speech heard in a watched room (the speech-context history).

    Bounded per room (newest 200, last 24 hours, 400 characters per field) by the repository.
    """

    __tablename__ = "speech_history"
    __table_args__ = (Index("ix_speech_history_cell_time", "cell_id", "occurred_at"),)

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


# Objects the migrations create per dialect with raw SQL (full-text search) are not modelled;
# autogenerate must not propose dropping them.
_FTS_TABLE_PREFIXES = ("reference_documents_fts", "character_memories_fts")
_SEARCH_INDEXES = frozenset(
    {
        "ix_reference_documents_search",
        "ix_reference_documents_trigram",
        "ix_character_memories_words",
    }
)


def autogenerate_include_name(name: str | None, type_: str, parent_names: object) -> bool:
    """Hide the SQLite FTS5 tables and the PostgreSQL search column from autogenerate."""
    if type_ == "table" and name and name.startswith(_FTS_TABLE_PREFIXES):
        return False
    return not (type_ == "column" and name == "search_vector")


def autogenerate_include_object(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    """Hide the PostgreSQL GIN indexes of reference search from autogenerate."""
    return not (type_ == "index" and name in _SEARCH_INDEXES)
