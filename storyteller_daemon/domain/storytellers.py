"""Storyteller settings: model scopes, reasoning effort, subscriptions, heartbeats, custom tools,
the MCP tools it may use, how it directs (plans, pacing, context providers), its daily budget.

Nullable scoped values keep FutureMUD's fallbacks: the time and attention models fall back to the
event model; the time effort falls back to the event effort; the attention effort to ``low``; the
time system prompt to the event system prompt.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from enum import StrEnum

from storyteller_daemon.domain.attention_rules import AttentionRule
from storyteller_daemon.domain.direction import Direction
from storyteller_daemon.domain.mcp import McpGrant
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.errors import ValidationError

DEFAULT_MODEL = "gpt-5"
DEFAULT_SYSTEM_PROMPT = "You are an AI storyteller for a roleplay-intensive MUD world."
DEFAULT_ATTENTION_PROMPT = (
    "Decide for each event below whether it matters to your narrative remit. Attend to it only "
    "when it could change an ongoing situation or deserves a response; otherwise ignore it."
)
DEFAULT_DESCRIPTION = "An AI storyteller"
MAX_SPEECH_CONTEXT_EVENTS = 50
DEFAULT_SPEECH_CONTEXT_WINDOW = timedelta(minutes=10)
TOOL_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class ReasoningEffort(StrEnum):
    """Reasoning effort sent to reasoning models; stored as FutureMUD's 0-3 codes or names.

    ``none`` asks for no reasoning: no reasoning fields are sent (a model that cannot skip
    reasoning gets its lowest effort; `agent.models.capabilities`). FutureMUD has no code for
    it; it is stored as its name.
    """

    MINIMAL = "minimal"
    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    NONE = "none"

    @property
    def code(self) -> str:
        """FutureMUD's numeric encoding ("0".."3"); ``none`` is stored by name."""
        if self is ReasoningEffort.NONE:
            return self.value
        return str(list(ReasoningEffort).index(self))

    @classmethod
    def parse(cls, value: str) -> ReasoningEffort:
        """Parse ``none|minimal|low|medium|high`` or ``0..3``; raise `ValidationError`
        otherwise."""
        text = value.strip().lower()
        if text.isdigit() and int(text) < len(cls) - 1:
            return list(cls)[int(text)]
        try:
            return cls(text)
        except ValueError:
            raise ValidationError(
                f"'{value}' is not a reasoning effort; use none, minimal, low, medium, high or 0-3."
            ) from None

    @classmethod
    def parse_lenient(cls, value: str | None) -> ReasoningEffort | None:
        """Parse a stored value; blank or invalid gives None so the scope's fallback applies."""
        if value is None or not value.strip():
            return None
        try:
            return cls.parse(value)
        except ValidationError:
            return None


class Scope(StrEnum):
    """Which of the three model settings a call uses."""

    EVENT = "event"
    TIME = "time"
    ATTENTION = "attention"

    @classmethod
    def parse(cls, value: str) -> Scope:
        """Accept FutureMUD's scope words (event, time/status/heartbeat, attention/classifier)."""
        word = value.strip().lower()
        aliases = {
            "event": cls.EVENT, "events": cls.EVENT,
            "time": cls.TIME, "status": cls.TIME, "heartbeat": cls.TIME,
            "attention": cls.ATTENTION, "classifier": cls.ATTENTION,
            "attentionclassifier": cls.ATTENTION, "attentionclassifer": cls.ATTENTION,
        }  # fmt: skip
        if word not in aliases:
            raise ValidationError(f"'{value}' is not a scope; use event, time or attention.")
        return aliases[word]


class EventKind(StrEnum):
    """World events a storyteller can subscribe to."""

    ROOM = "room"
    SPEECH = "speech"
    CRIME = "crime"
    STATE = "state"

    @classmethod
    def parse(cls, value: str) -> EventKind:
        """Accept FutureMUD's subscription words."""
        word = value.strip().lower()
        aliases = {
            "room": cls.ROOM, "echo": cls.ROOM, "echoes": cls.ROOM,
            "speech": cls.SPEECH, "speaks": cls.SPEECH, "speak": cls.SPEECH, "say": cls.SPEECH,
            "crime": cls.CRIME, "crimes": cls.CRIME,
            "state": cls.STATE, "states": cls.STATE, "status": cls.STATE, "health": cls.STATE,
        }  # fmt: skip
        if word not in aliases:
            raise ValidationError(
                f"'{value}' is not an event type; use room, speech, crime or state."
            )
        return aliases[word]


class Heartbeat(StrEnum):
    """Fuzzy periodic triggers."""

    FIVE_MINUTES = "5m"
    TEN_MINUTES = "10m"
    THIRTY_MINUTES = "30m"
    HOUR = "1h"

    @property
    def seconds(self) -> int:
        """The period in seconds."""
        return {"5m": 300, "10m": 600, "30m": 1800, "1h": 3600}[self.value]

    @property
    def spoken(self) -> str:
        """How prompts name the heartbeat."""
        return {"5m": "five minute", "10m": "ten minute", "30m": "thirty minute", "1h": "one hour"}[
            self.value
        ]

    @classmethod
    def parse(cls, value: str) -> Heartbeat:
        """Accept 5m|5, 10m|10, 30m|30, 1h|hour|60m."""
        word = value.strip().lower()
        aliases = {
            "5m": cls.FIVE_MINUTES, "5": cls.FIVE_MINUTES,
            "10m": cls.TEN_MINUTES, "10": cls.TEN_MINUTES,
            "30m": cls.THIRTY_MINUTES, "30": cls.THIRTY_MINUTES,
            "1h": cls.HOUR, "hour": cls.HOUR, "60m": cls.HOUR, "60": cls.HOUR,
        }  # fmt: skip
        if word not in aliases:
            raise ValidationError(f"'{value}' is not a heartbeat; use 5m, 10m, 30m or 1h.")
        return aliases[word]


def validate_tool_name(name: str, builtin_names: frozenset[str]) -> str:
    """Check a custom tool name against the API's pattern and the built-in names."""
    if not TOOL_NAME_PATTERN.match(name):
        raise ValidationError(
            f"Tool name '{name}' is invalid: use 1-64 letters, digits, '_' or '-' (no spaces)."
        )
    if name.lower() in {b.lower() for b in builtin_names}:
        raise ValidationError(f"Tool name '{name}' collides with the built-in tool of that name.")
    return name


def validate_speech_context_count(count: int) -> int:
    """Speech-context event count must be 0..50."""
    if count < 0 or count > MAX_SPEECH_CONTEXT_EVENTS:
        raise ValidationError(
            f"Speech context count must be between 0 and {MAX_SPEECH_CONTEXT_EVENTS}, not {count}."
        )
    return count


def validate_speech_context_window(window: timedelta) -> timedelta:
    """The speech-context window must be positive."""
    if window <= timedelta(0):
        raise ValidationError("Speech context window must be longer than zero.")
    return window


def validate_daily_budget(usd: float) -> float:
    """A storyteller's daily budget must be a finite number of USD, 0 or more (0: no cap)."""
    if isinstance(usd, bool) or not isinstance(usd, int | float):
        raise ValidationError(f"A daily budget must be a number of USD, not {usd!r}.")
    if not math.isfinite(usd) or usd < 0:
        raise ValidationError(f"A daily budget must be 0 or more USD (0: no cap), not {usd:g}.")
    return float(usd)


DICTATED_MODES = ("refuse", "quote", "allow")
"""What a text argument that repeats players' words may do (docs/security.md)."""


@dataclass(frozen=True)
class CustomTool:
    """A tool the model may call that runs one of the game's progs.

    Parameters come from the prog's ordered named parameters; only their descriptions are stored
    here, in the prog's order. A pack may also say which types it expects the prog to take and
    return (``Number``, ``Collection<Character>``), so a check against the world can tell when
    the prog changed.
    """

    name: str
    description: str
    prog: str
    """The prog's id or name, as the world's prog catalogue knows it."""
    echo_only: bool = False
    parameter_descriptions: tuple[tuple[str, str], ...] = ()
    parameter_types: tuple[tuple[str, str], ...] = ()
    """Parameter name → the prog type the tool was written for; parameters not named: unsaid."""
    return_type: str | None = None
    """The prog return type the tool was written for; None: unsaid."""
    dictated: str | None = None
    """What its text arguments may do when they repeat players' words (``refuse``, ``quote``,
    ``allow``; `DICTATED_MODES`); None: refuse, as every prog text (``[policy] dictated``
    overrides either)."""

    def description_for(self, parameter: str) -> str | None:
        """The stored description of `parameter` (case-insensitive), if any."""
        for name, text in self.parameter_descriptions:
            if name.lower() == parameter.lower():
                return text
        return None

    def rebound(self, parameter_names: list[str]) -> CustomTool:
        """Descriptions aligned to a prog's parameters: stale ones pruned, missing ones blank.

        The types it was written for are dropped: it now follows that prog as it is.
        """
        descs = tuple((p, self.description_for(p) or "") for p in parameter_names)
        return replace(self, parameter_descriptions=descs, parameter_types=(), return_type=None)


@dataclass(frozen=True)
class Storyteller:
    """One configured storyteller and all its settings."""

    name: str
    id: int | None = None
    description: str = DEFAULT_DESCRIPTION
    model: str = DEFAULT_MODEL
    time_model: str | None = None
    attention_model: str | None = None
    reasoning_effort: ReasoningEffort | None = None
    time_reasoning_effort: ReasoningEffort | None = None
    attention_reasoning_effort: ReasoningEffort | None = None
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    time_system_prompt: str | None = None
    attention_prompt: str = DEFAULT_ATTENTION_PROMPT
    subscriptions: frozenset[EventKind] = frozenset({EventKind.ROOM})
    heartbeats: frozenset[Heartbeat] = frozenset()
    status_progs: tuple[tuple[Heartbeat, str], ...] = ()
    player_info_prog: str | None = None
    paused: bool = True
    speech_context_count: int = 0
    speech_context_window: timedelta = DEFAULT_SPEECH_CONTEXT_WINDOW
    custom_tools: tuple[CustomTool, ...] = ()
    surveillance: Surveillance = field(default_factory=Surveillance)
    attention_rules: tuple[AttentionRule, ...] = ()
    """Deterministic ignore / always-attend rules checked before the attention model."""
    mcp_grants: tuple[McpGrant, ...] = ()
    """The MCP servers whose tools it may call, each with its allow-list (`domain.mcp`)."""
    direction: Direction = field(default_factory=Direction)
    """Plans, co-operation, pacing and context providers (`domain.direction`)."""
    daily_budget_usd: float | None = None
    """Its own daily USD cap (0: none); None leaves it to ``[budgets]`` in the configuration."""
    written_for: str | None = None
    """The world its pack was written for (``sim``, or a game's name); None: unsaid."""
    revision: int = 0
    created_on: datetime | None = None

    def __post_init__(self) -> None:
        if self.daily_budget_usd is not None:
            validate_daily_budget(self.daily_budget_usd)

    def model_for(self, scope: Scope) -> str:
        """The model used for a scope, with the fallbacks applied."""
        if scope is Scope.TIME:
            return self.time_model or self.model or DEFAULT_MODEL
        if scope is Scope.ATTENTION:
            return self.attention_model or self.model or DEFAULT_MODEL
        return self.model or DEFAULT_MODEL

    def effort_for(self, scope: Scope) -> ReasoningEffort:
        """The reasoning effort used for a scope, with the fallbacks applied."""
        event = self.reasoning_effort or ReasoningEffort.MEDIUM
        if scope is Scope.TIME:
            return self.time_reasoning_effort or event
        if scope is Scope.ATTENTION:
            return self.attention_reasoning_effort or ReasoningEffort.LOW
        return event

    def system_prompt_for(self, scope: Scope) -> str:
        """The system prompt used for a scope (heartbeats use the time system prompt)."""
        if scope is Scope.TIME and self.time_system_prompt is not None:
            return self.time_system_prompt
        return self.system_prompt

    def status_prog(self, heartbeat: Heartbeat) -> str | None:
        """The status prog whose output is appended to a heartbeat prompt."""
        return dict(self.status_progs).get(heartbeat)

    def mcp_grant(self, server: str) -> McpGrant | None:
        """The grant of one MCP server, by its name."""
        return next((g for g in self.mcp_grants if g.server == server), None)

    def tool(self, name: str) -> CustomTool | None:
        """A custom tool by name, case-insensitively."""
        for t in self.custom_tools:
            if t.name.lower() == name.lower():
                return t
        return None
