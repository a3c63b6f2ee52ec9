"""Configuration: one TOML file, validated once into frozen objects.

Secrets never live in the file: keys that end in ``_env`` hold the *name* of an environment
variable, and the value is read from the environment by the composition root. Every problem is
reported as a `ConfigError` naming the file, the dotted key and what is wrong.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from storyteller_daemon.errors import ConfigError

ENV_NAME_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SECRET_LOOKING = re.compile(
    r"^(sk-|sk_|xox|ghp_|https?://|Bearer\s)|discord(app)?\.com/api/webhooks", re.IGNORECASE
)

NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeFloat = Annotated[float, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0)]


def _check_env_name(value: str) -> str:
    """Accept an environment-variable name; reject a pasted secret with a pointed message."""
    if value == "":
        return value
    if _SECRET_LOOKING.search(value) or not ENV_NAME_PATTERN.match(value):
        raise ValueError(
            "must be the NAME of an environment variable (like OPENAI_API_KEY), "
            "not the secret itself; put the secret in the environment"
        )
    return value


EnvVarName = Annotated[str, AfterValidator(_check_env_name)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


_ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "postgresql+asyncpg": "postgresql+asyncpg",
}


def normalise_database_url(value: str) -> str:
    """A database URL the daemon can open, from a URL or a plain SQLite file path.

    ``demo.db`` becomes ``sqlite+aiosqlite:///demo.db``; ``sqlite://`` and ``postgresql://``
    get the async drivers the daemon uses.

    Raises:
        ValueError: a URL of a database the daemon does not support.
    """
    value = value.strip()
    scheme, sep, rest = value.partition("://")
    if not sep:
        return f"sqlite+aiosqlite:///{value}"
    driver = _ASYNC_DRIVERS.get(scheme.lower())
    if driver is None:
        raise ValueError(
            f"unsupported database URL scheme {scheme!r}: use sqlite+aiosqlite:///FILE, "
            "postgresql+asyncpg://USER@HOST/DB or a plain SQLite file path"
        )
    return f"{driver}://{rest}"


class DatabaseConfig(_Section):
    """Where everything is persisted."""

    url: Annotated[str, AfterValidator(normalise_database_url)] = Field(
        default="sqlite+aiosqlite:///storyteller.db", min_length=1
    )
    """SQLAlchemy async URL (sqlite+aiosqlite:///path.db, postgresql+asyncpg://...) or a path."""
    url_env: EnvVarName = ""
    """If set, the URL is read from this environment variable instead (for passwords)."""
    busy_timeout_ms: NonNegativeInt = 15_000


class ModelPrice(_Section):
    """USD per million tokens for one model name."""

    input: NonNegativeFloat
    cached_input: NonNegativeFloat = 0.0
    output: NonNegativeFloat


class ModelConfig(_Section):
    """The Responses-API endpoint."""

    api_key_env: EnvVarName = "OPENAI_API_KEY"
    base_url: str = ""
    """Empty means OpenAI; any Responses-API-compatible server otherwise."""
    request_timeout_seconds: PositiveFloat = 60.0
    max_retries: NonNegativeInt = 2
    offline_when_no_key: bool = False
    """Use the offline stand-in (not a language model) when the API key is missing."""
    refused_pause_seconds: NonNegativeFloat = 300.0
    """After the endpoint refuses the key (401, 403) or a model (404), requests for that model
    are not sent for this long, then one is tried again (0: always send)."""
    prices: dict[str, ModelPrice] = Field(default_factory=dict)


class LimitsConfig(_Section):
    """Hard bounds on one storyteller turn and its queue."""

    queue_size: PositiveInt = 25
    max_rounds: PositiveInt = 16
    turn_seconds: PositiveFloat = 30.0
    malformed_json_retries: NonNegativeInt = 3
    missing_call_retries: NonNegativeInt = 2
    max_output_tokens: PositiveInt = 1200
    attention_max_output_tokens: PositiveInt = 400
    prompt_max_chars: PositiveInt = 24_000
    max_situation_titles: PositiveInt = 25


class AttentionConfig(_Section):
    """How events are judged: burst windows, batches, repeats, expiry, request limits."""

    quiet_seconds: NonNegativeFloat = 8.0
    """A storyteller's batch is judged once no new event has come for this long..."""
    max_wait_seconds: NonNegativeFloat = 12.0
    """...or once its oldest event has waited this long, whichever is first."""
    urgent_kinds: Annotated[
        tuple[Literal["room_echo", "speech", "crime"], ...], Field(strict=False)
    ] = ("crime",)
    """Event kinds judged at once, without waiting for the window."""
    max_batch_events: Annotated[int, Field(gt=0, le=500)] = 60
    """Events judged in one attention request at most (a bigger backlog is judged in turns)."""
    parallel_requests: Annotated[int, Field(ge=1, le=16)] = 4
    """Attention requests one storyteller may have in flight at once. While the backlog holds
    more than a full batch, further batches are sent without waiting for the first answer, so
    a storyteller keeps up with `parallel_requests × max_batch_events` events per latency."""
    max_turn_events: PositiveInt = 20
    """Interested events handled together in one turn at most."""
    repeat_seconds: NonNegativeFloat = 30.0
    """The same text heard in several rooms within this window is judged once (0: off)."""
    room_repeat_seconds: NonNegativeFloat = 300.0
    """The same text repeated in one room within this window is judged once (0: off)."""
    max_age_seconds: NonNegativeFloat = 3600.0
    """Events not judged this long after arrival are expired, counted and alerted (0: never)."""
    retry_seconds: PositiveFloat = 2.0
    """First wait after a failed attention request; it doubles per failure up to a minute."""
    request_timeout_seconds: PositiveFloat = 20.0
    """Limit of one HTTP attempt of an attention request."""
    max_retries: NonNegativeInt = 1
    """Retries of one attention request before its events wait for the next pass."""
    debug_reasons: bool = False
    """Ask for a reason on ignore verdicts too (more output tokens; for tuning prompts)."""
    remit_max_chars: NonNegativeInt = 12_000
    """How much of a storyteller's system prompt its attention requests carry as its remit, in
    their cached prefix (0: none)."""
    one_call_per_event: bool = False
    """The reference design, for comparison: no window, no batching, no repeats, one turn each."""
    retention_hours: PositiveFloat = 24.0
    """Finished work items are kept this long for `storyteller` inspection, then pruned."""


class WorldConfig(_Section):
    """Which world the daemon watches."""

    kind: Literal["sim", "bridge"] = "sim"
    url: str = ""
    token_env: EnvVarName = ""
    sim_seed: int = 7
    """Random seed of the embedded sim world's scripted activity."""
    sim_tick_seconds: PositiveFloat = 2.0

    @property
    def identity(self) -> str:
        """Names this world among others a database has seen (``sim`` or ``bridge URL``)."""
        return self.kind if self.kind == "sim" else f"{self.kind} {self.url.strip()}"


class AlertsConfig(_Section):
    """Where admins hear about problems."""

    discord_webhook_env: EnvVarName = ""
    repeat_window_seconds: PositiveFloat = 600.0
    """Quiet period per alert key: repeats inside it are counted and sent as one summary."""
    start_history_file: str = ""
    """Start times for crash-loop detection; empty: $STATE_DIRECTORY/start-history.json."""


class DaemonConfig(_Section):
    """The running daemon."""

    drain_seconds: NonNegativeFloat = 8.0
    """After SIGTERM, how long a judging pass or turn in flight gets to finish; the rest of the
    work stays in the durable backlog for the next start."""
    intake_stall_seconds: PositiveFloat = 120.0
    """A bridged game that keeps sending while no event is stored for this long has stalled
    the intake: health goes red and an alert says so."""


class HttpConfig(_Section):
    """The optional health and metrics listener (``/healthz``, ``/metrics``)."""

    enabled: bool = False
    host: str = Field(default="127.0.0.1", min_length=1)
    port: Annotated[int, Field(ge=0, le=65535)] = 9464
    """0 picks a free port."""
    token_env: EnvVarName = ""
    """Bearer token required on every request; mandatory when `host` is not a loopback address."""


class LoggingConfig(_Section):
    """Log output."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    format: Literal["text", "json"] = "text"
    """``json``: one JSON object per line (level, logger, message, time) for log collectors."""
    debug_payloads: bool = False
    """Write prompts and player text to the log. Off by default: they stay in the database."""


class RunsConfig(_Section):
    """Run records: what each turn and attention call did, kept in the database for audit."""

    record: bool = True
    """Store a run record (trigger, prompts, requests, tool calls, cost) for every model call."""
    retention_days: NonNegativeInt = 30
    """Run records older than this are deleted at start-up and daily; 0 keeps them forever."""
    ledger_retention_days: NonNegativeInt = 400
    """Cost-ledger rows (tokens and USD, no text) are kept this long; 0 keeps them forever."""


class BudgetsConfig(_Section):
    """Hard spending caps, checked before every model request. 0 turns a cap off."""

    daily_usd: NonNegativeFloat = 20.0
    """All storytellers together, per UTC day."""
    storyteller_daily_usd: NonNegativeFloat = 0.0
    """Each storyteller, per UTC day, unless `storyteller_overrides` names it."""
    storyteller_overrides: dict[str, NonNegativeFloat] = Field(default_factory=dict)
    """Storyteller name (any case) → its own daily USD cap."""
    turn_tokens: NonNegativeInt = 200_000
    """Input plus output tokens of all requests of one turn."""
    skip_idle_heartbeats: bool = True
    """Heartbeats call no model while no player is online in the storyteller's watched rooms."""


class PolicyConfig(_Section):
    """Limits every side-effecting tool call passes, whatever the model says (docs/security.md)."""

    kill_switch: bool = False
    """Stop every storyteller's prog calls at once; attention and read-only tools go on."""
    kill_file: str = ""
    """While this file exists, prog calls are stopped as by `kill_switch` (``touch`` it)."""
    shadow: list[str] = Field(default_factory=list)
    """Whose prog calls are recorded, not run: a storyteller's name, ``NAME/TOOL`` for one of
    its tools, ``*/TOOL`` for a tool of every storyteller, or ``*`` for everything."""
    event_turn_scope: Literal["trigger_rooms", "surveillance"] = "trigger_rooms"
    """Where a turn started by a world event may act: the rooms of its events, or anywhere the
    storyteller watches. Heartbeat and direct turns may act anywhere it watches."""
    tool_scope: dict[str, Literal["trigger_rooms", "surveillance"]] = Field(default_factory=dict)
    """`event_turn_scope` for single tools by name (a town crier that speaks in every room)."""
    event_turn_exits: NonNegativeInt = 0
    """With ``trigger_rooms``: rooms this many exits or fewer from an event's room (through any
    door, inside the surveillance) are in scope too; 0 keeps the events' own rooms."""
    approve: list[str] = Field(default_factory=list)
    """Whose prog calls wait for an admin (``storyteller policy approve ID``), in the form of
    `shadow`: a storyteller's name, ``NAME/TOOL``, ``*/TOOL`` or ``*``."""
    approval_expiry_seconds: PositiveFloat = 3600.0
    """A parked call not approved within this many seconds expires and never runs."""
    max_prog_calls_per_turn: PositiveInt = 3
    target_cooldown_seconds: NonNegativeFloat = 600.0
    """The same prog tool on the same room or character at most once in this many seconds."""
    tool_cooldown_seconds: dict[str, NonNegativeFloat] = Field(default_factory=dict)
    """`target_cooldown_seconds` for single tools by name (a summons: once per 10 minutes)."""
    max_prog_calls_per_hour: PositiveInt = 60
    """Prog calls of all storytellers together in any hour."""
    max_prog_calls_per_storyteller_per_hour: PositiveInt = 20
    """Prog calls of one storyteller in any hour."""
    max_prog_calls_per_storyteller_per_day: PositiveInt = 120
    """Prog calls of one storyteller in any 24 hours."""
    max_prog_calls_per_player_per_hour: PositiveInt = 6
    """Prog calls set off by one character's words or actions (echo, speech, crime) an hour."""
    max_text_chars: PositiveInt = 600
    """Longest text a prog argument may carry."""
    destructive_on_player_turns: bool | list[str] = False
    """Offer ForgetMemory, UpdateMemory, ResolveSituation and UpdateSituation on echo and speech
    turns too: ``true`` for every storyteller, or a list of storytellers' names."""

    def shadows(self, storyteller: str, tool: str = "") -> bool:
        """Whether `storyteller`'s calls of `tool` are simulated instead of run."""
        return _covers(self.shadow, storyteller, tool)

    def needs_approval(self, storyteller: str, tool: str) -> bool:
        """Whether `storyteller`'s calls of `tool` wait for an admin's approval."""
        return _covers(self.approve, storyteller, tool)

    def cooldown_for(self, tool: str) -> float:
        """Seconds between calls of `tool` on the same room or character."""
        return _by_tool(self.tool_cooldown_seconds, tool, self.target_cooldown_seconds)

    def scope_for(self, tool: str) -> Literal["trigger_rooms", "surveillance"]:
        """Where a call of `tool` on a turn started by world events may act."""
        return _by_tool(self.tool_scope, tool, self.event_turn_scope)

    def destructive_for(self, storyteller: str) -> bool:
        """Whether `storyteller` is offered the destructive built-ins on echo and speech turns."""
        setting = self.destructive_on_player_turns
        if isinstance(setting, bool):
            return setting
        return storyteller.strip().casefold() in {n.strip().casefold() for n in setting}

    def for_storyteller(self, storyteller: str, tools: Sequence[str]) -> dict[str, Any]:
        """The limits one storyteller's prog tools run under (``ais show``)."""
        return {
            "kill_switch": self.kill_switch,
            "max_prog_calls_per_turn": self.max_prog_calls_per_turn,
            "max_prog_calls_per_hour": self.max_prog_calls_per_storyteller_per_hour,
            "max_prog_calls_per_day": self.max_prog_calls_per_storyteller_per_day,
            "max_prog_calls_per_hour_all_storytellers": self.max_prog_calls_per_hour,
            "max_prog_calls_per_player_per_hour": self.max_prog_calls_per_player_per_hour,
            "max_text_chars": self.max_text_chars,
            "destructive_on_player_turns": self.destructive_for(storyteller),
            "tools": {
                tool: {
                    "scope": self.scope_for(tool),
                    "cooldown_seconds": self.cooldown_for(tool),
                    "shadow": self.shadows(storyteller, tool),
                    "approve": self.needs_approval(storyteller, tool),
                }
                for tool in tools
            },
        }


_V = TypeVar("_V")


def _by_tool(settings: dict[str, _V], tool: str, default: _V) -> _V:
    """A per-tool setting by tool name, ignoring case; `default` for a tool it does not name."""
    wanted = tool.strip().casefold()
    return next((v for k, v in settings.items() if k.strip().casefold() == wanted), default)


def _covers(entries: Sequence[str], storyteller: str, tool: str) -> bool:
    """Whether ``NAME``, ``NAME/TOOL``, ``*/TOOL`` or ``*`` entries cover a storyteller's tool."""
    folded = {n.strip().casefold() for n in entries}
    name, tool = storyteller.strip().casefold(), tool.strip().casefold()
    return bool(folded & {"*", name, f"{name}/{tool}", f"*/{tool}"})


class Config(_Section):
    """The whole configuration file."""

    database: DatabaseConfig = Field(default_factory=DatabaseConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    limits: LimitsConfig = Field(default_factory=LimitsConfig)
    attention: AttentionConfig = Field(default_factory=AttentionConfig)
    world: WorldConfig = Field(default_factory=WorldConfig)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)
    daemon: DaemonConfig = Field(default_factory=DaemonConfig)
    http: HttpConfig = Field(default_factory=HttpConfig)
    logging: LoggingConfig = Field(default_factory=LoggingConfig)
    runs: RunsConfig = Field(default_factory=RunsConfig)
    budgets: BudgetsConfig = Field(default_factory=BudgetsConfig)
    policy: PolicyConfig = Field(default_factory=PolicyConfig)


def _format_pydantic_error(err: dict[str, Any]) -> tuple[str, str]:
    key = ".".join(str(p) for p in err.get("loc", ()))
    kind = err.get("type", "")
    if kind == "extra_forbidden":
        return key, "unknown key"
    if kind == "missing":
        return key, "required key is missing"
    msg = str(err.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ")
    if kind.endswith("_type") or kind in {"bool_parsing", "int_parsing", "float_parsing"}:
        got = type(err.get("input")).__name__
        msg = f"{msg} (got {got} {err.get('input')!r})"
    return key, msg


def parse_config(data: dict[str, Any], path: str) -> Config:
    """Validate an already-parsed TOML table; raise `ConfigError` on the first problem."""
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key, problem = _format_pydantic_error(dict(first))
        raise ConfigError(path, problem, key=key or None) from None


def load_config(path: str | Path) -> Config:
    """Read and validate the TOML file at `path`."""
    p = Path(path)
    try:
        raw = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(str(p), "file not found") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(str(p), f"not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(str(p), f"cannot read file: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(p), f"invalid TOML: {exc}") from None
    return parse_config(data, str(p))


def database_url(cfg: Config, environ: Mapping[str, str] = os.environ) -> str:
    """The database URL: from `database.url_env` when set, else `database.url`."""
    if cfg.database.url_env:
        value = environ.get(cfg.database.url_env, "")
        if not value:
            raise ConfigError(
                "config",
                f"environment variable {cfg.database.url_env} is not set",
                key="database.url_env",
            )
        try:
            return normalise_database_url(value)
        except ValueError as exc:
            raise ConfigError("config", str(exc), key="database.url_env") from None
    return cfg.database.url
