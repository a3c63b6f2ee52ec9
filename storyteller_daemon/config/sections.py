"""The sections of the configuration file other than ``[policy]``.

Each section is one frozen model of `fields._Section` whose attributes are its keys with their
defaults: ``[database]``, ``[model]`` (with its price table), ``[limits]``, ``[attention]``,
``[world]``, ``[alerts]``, ``[daemon]``, ``[cluster]``, ``[http]``, ``[logging]``, ``[runs]``,
``[budgets]`` and ``[reflection]``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from storyteller_daemon.config.endpoints import HeaderEnvs, Headers
from storyteller_daemon.config.fields import (
    EnvVarName,
    NonNegativeFloat,
    NonNegativeInt,
    PositiveFloat,
    PositiveInt,
    _Section,
    normalise_database_url,
)


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
    """The default Responses-API endpoint (``[endpoints]`` adds more) and the price table."""

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
    headers: Headers = Field(default_factory=dict)
    """Extra headers sent with every request to this endpoint (not secret)."""
    header_envs: HeaderEnvs = Field(default_factory=dict)
    """Extra secret headers: header name → environment variable name."""
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
    prompt_max_tokens: PositiveInt = 16_000
    """Estimated tokens of a turn's first request: instructions, tool schemas and user prompt
    (`agent.context` shares it out by priority)."""
    max_situation_titles: PositiveInt = 25
    """Open situations listed at most in each of a prompt's two situation blocks."""
    max_argument_chars: PositiveInt = 65_536
    """Characters of one tool call's argument text; a longer one is refused as malformed."""
    max_argument_depth: PositiveInt = 32
    """Nesting of arrays and objects in one tool call's arguments, checked before parsing."""

    @model_validator(mode="before")
    @classmethod
    def _retired_keys(cls, data: Any) -> Any:
        if isinstance(data, dict) and "prompt_max_chars" in data:
            raise ValueError(
                "prompt_max_chars was replaced by prompt_max_tokens (prompts are budgeted in "
                "tokens, instructions and tools included); remove it"
            )
        return data


class AttentionConfig(_Section):
    """How events are judged: burst windows, batches, repeats, expiry, request limits."""

    quiet_seconds: NonNegativeFloat = 8.0
    """A storyteller's batch is judged once no new event has come for this long..."""
    max_wait_seconds: NonNegativeFloat = 12.0
    """...or once its oldest event has waited this long, whichever is first."""
    routine_kinds: Annotated[tuple[Literal["room_echo", "speech"], ...], Field(strict=False)] = (
        "room_echo",
    )
    """Event kinds that are a world's routine: while a batch holds only these, the quiet gap
    is `routine_quiet_seconds` instead (never past `max_wait_seconds`)."""
    routine_quiet_seconds: NonNegativeFloat = 30.0
    """The quiet gap of a batch of routine kinds only: a trickle of echoes is judged together
    rather than one request each."""
    calm_wait_factor: Annotated[float, Field(ge=1.0)] = 10.0
    """Events the model must judge may wait up to this many `max_wait_seconds` (10: two minutes)
    for a request while none of them is lively (an urgent kind, a burst, a scene: see
    `scene_events`, `scene_hold_seconds`) and the storyteller is over its allowance
    (`calm_requests_per_hour`): calm lines ride together with the next request instead of
    costing one each window. 1: off, every window asks (latency for calls)."""
    calm_requests_per_hour: NonNegativeFloat = 30.0
    """The storyteller's allowance of attention requests: while it asked fewer than this lately
    (a bucket holding ten minutes of it, full at the start), calm events are asked as their
    window closes; above it they wait (`calm_wait_factor`), so a quiet world's lines are judged
    within `max_wait_seconds` and a busy world's requests are paced. Every request counts,
    lively ones too. 0: calm events always wait."""
    scene_events: NonNegativeInt = 5
    """This many new events in one room within `scene_seconds`, the last of them just now,
    are a burst (a fight, a quarrel): judged at once (0: no bursts)."""
    scene_seconds: PositiveFloat = 8.0
    """See `scene_events`."""
    scene_hold_seconds: NonNegativeFloat = 60.0
    """A room stays a scene this long after the attention model attended to an event in it:
    its next events are judged within `scene_wait_seconds`."""
    scene_wait_seconds: NonNegativeFloat = 4.0
    """A new event in a scene closes the window this long after it came (never later than
    `max_wait_seconds`): a fight's next lines are judged while it goes on."""
    urgent_kinds: Annotated[
        tuple[Literal["room_echo", "speech", "crime"], ...], Field(strict=False)
    ] = ("crime",)
    """Event kinds judged at once, without waiting for the window; they also fail open (get a
    turn when no reply could judge them; crimes always do)."""
    max_batch_events: Annotated[int, Field(gt=0, le=500)] = 60
    """Events judged in one attention request at most (a bigger backlog is judged in turns)."""
    parallel_requests: Annotated[int, Field(ge=1, le=16)] = 4
    """Attention requests one storyteller may have in flight at once. While the backlog holds
    more than a full batch, further batches are sent without waiting for the first answer, so
    a storyteller keeps up with `parallel_requests × max_batch_events` events per latency."""
    max_turn_events: PositiveInt = 20
    """Interested events handled together in one turn at most."""
    turn_retries: Annotated[int, Field(ge=0, le=20)] = 3
    """Times a turn a crash interrupted is run again before its events are marked failed (with
    an alert; `storyteller runs retry` queues it again). A clean stop's cut is not counted."""
    repeat_seconds: NonNegativeFloat = 30.0
    """The same text heard in several rooms within this window is judged once (0: off)."""
    room_repeat_seconds: NonNegativeFloat = 300.0
    """The same text repeated in one room within this window is judged once (0: off)."""
    verdict_memory_hours: NonNegativeFloat = 6.0
    """An echo or speech whose text (names and numbers as placeholders), kind and room class
    the attention model ignored within this many hours is settled ``ignore`` without a model
    call (0: off)."""
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
    cache_floor_tokens: NonNegativeInt = 1024
    """The provider's prompt-cache floor: batch instructions shorter than this get worked
    examples of the verdict contract, so their prefix is cached (0: never)."""
    one_call_per_event: bool = False
    """The reference design, for comparison: no window, no batching, no repeats or verdict
    memory, one turn each."""
    retention_hours: PositiveFloat = 24.0
    """Finished work items are kept this long for `storyteller` inspection, then pruned."""

    @property
    def calm_max_wait_seconds(self) -> float:
        """How long calm events may wait for a request (`calm_wait_factor`)."""
        return self.calm_wait_factor * self.max_wait_seconds


class WorldConfig(_Section):
    """Which world the daemon watches."""

    kind: Literal["sim", "bridge"] = "sim"
    url: str = ""
    token_env: EnvVarName = ""
    sim_seed: int = 7
    """Random seed of the embedded sim world's scripted activity."""
    sim_tick_seconds: PositiveFloat = 2.0
    sim_activity: bool = True
    """Whether the embedded sim world's town goes about its day on its own; false leaves it
    still, so only what a test or an admin does happens."""

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


class ClusterConfig(_Section):
    """Several daemons sharing one PostgreSQL database (docs/operations.md)."""

    enabled: bool = False
    """Share the storytellers with the other daemons of the database through leases (refused
    on SQLite, which one process only may write)."""
    instance: str = Field(default="", max_length=100, pattern=r"^[A-Za-z0-9_.@:-]*$")
    """This daemon's name among the others, unique and kept across restarts (a systemd
    template unit's ``%i``); empty: the host name."""
    lease_seconds: Annotated[float, Field(ge=2.0)] = 10.0
    """A storyteller's lease lasts this long unless renewed: a daemon that dies loses its
    storytellers to the others this long after its last renewal."""
    renew_seconds: PositiveFloat = 2.0
    """How often the leases are renewed and free ones taken (under half of `lease_seconds`)."""
    handover_seconds: NonNegativeFloat = 1.0
    """On a clean stop, how long a judging pass or turn in flight gets to end before it is cut
    off and its storyteller handed over (at most `[daemon] drain_seconds`): the next holder
    resumes a cut turn from its journal, asking the model again only the request that was in
    flight."""

    @model_validator(mode="after")
    def _renewed_in_time(self) -> ClusterConfig:
        if self.renew_seconds * 2 > self.lease_seconds:
            raise ValueError(
                f"renew_seconds ({self.renew_seconds:g}) must be at most half of lease_seconds "
                f"({self.lease_seconds:g}), so one missed renewal does not lose the leases"
            )
        return self


class HttpConfig(_Section):
    """The optional listener: ``/healthz``, ``/metrics`` and the web dashboard."""

    enabled: bool = False
    host: str = Field(default="127.0.0.1", min_length=1)
    port: Annotated[int, Field(ge=0, le=65535)] = 9464
    """0 picks a free port."""
    token_env: EnvVarName = ""
    """Bearer token required on every request; mandatory when `host` is not a loopback address."""
    dashboard: bool = True
    """Serve the web dashboard (``/``, ``/api/``) beside ``/healthz`` and ``/metrics``."""


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


class ReflectionConfig(_Section):
    """Reflection while idle: the rolling digest and the consolidation of duplicate memories."""

    enabled: bool = True
    """Run reflection passes in the daemon (``storyteller ais digest refresh`` works anyway)."""
    check_seconds: PositiveFloat = 30.0
    """How often the daemon looks for quiet storytellers."""
    quiet_seconds: NonNegativeFloat = 120.0
    """A storyteller is quiet once it has had no open work (no event waiting or being judged,
    no turn waiting or running) for this long."""
    interval_seconds: NonNegativeFloat = 3600.0
    """At most one reflection pass per storyteller in this many seconds."""
    model: str = ""
    """The digest model; empty: each storyteller's attention model."""
    reasoning_effort: Literal["", "none", "minimal", "low", "medium", "high"] = ""
    """Empty: the storyteller's attention effort; ``none`` sends none (non-reasoning models)."""
    digest_max_chars: Annotated[int, Field(ge=200, le=20_000)] = 2400
    """The digest's length bound: asked of the model, and a longer answer is cut."""
    max_output_tokens: PositiveInt = 2000
    """max_output_tokens of a digest request (reasoning tokens included)."""
    service_tier: Literal["", "auto", "default", "flex", "priority"] = "flex"
    """The provider's processing tier for digest requests: ``flex`` costs half and may be
    slower or refused, in which case the request is sent again at the default tier; empty:
    the endpoint's default."""
    max_changes: PositiveInt = 30
    """Of each kind of change (resolved situations, open ones, turns, memory changes), the
    newest this many go into a digest request; the rest are counted."""
    consolidate: bool = True
    """Merge near-duplicate memories about one character on each pass."""
    similarity: Annotated[float, Field(gt=0, le=1)] = 0.8
    """Shingle containment at or above which two memories about one character are merged."""
    merged_max_chars: PositiveInt = 2000
    """A merge whose text would be longer than this is not made (the memories stay apart)."""
