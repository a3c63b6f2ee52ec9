"""Composition root: the only place that names concrete adapters (world, model, database).

Everything below receives its collaborators; this module decides which ones to build from the
configuration and the environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from progs.types import ProgSignature
from storyteller_daemon.agent.attention import AttentionOptions
from storyteller_daemon.agent.breaker import CircuitBreaker
from storyteller_daemon.agent.model import Model
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.policy_rules import kill_file_path
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.alerts import Alerts, DiscordWebhookSink, webhook_url_problem
from storyteller_daemon.alerts.crash_loop import StartHistory
from storyteller_daemon.alerts.service import describe_policy_refusals, describe_queue_overflow
from storyteller_daemon.clock import Clock, SystemClock
from storyteller_daemon.config import Config, database_url
from storyteller_daemon.domain.approvals import OPEN_APPROVAL_STATES
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.errors import ConfigError, StorageError
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.approvals import ApprovalRunner
from storyteller_daemon.runtime.budgets import Admission, BudgetKeeper
from storyteller_daemon.runtime.daemon import Daemon, complete_even_if_cancelled
from storyteller_daemon.runtime.health import HealthServer, check_http_settings
from storyteller_daemon.runtime.lookup_cache import CachedWorld
from storyteller_daemon.runtime.metering import LatencyHistogram, MeteredModel
from storyteller_daemon.runtime.observers import LoggingObserver
from storyteller_daemon.runtime.pipeline import Observer, Pipeline, TurnOutcome, Verdict
from storyteller_daemon.runtime.routing import Router
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.runtime.turns import AgentTurnRunner
from storyteller_daemon.storage.approvals import ApprovalRepository, PolicyActionRepository
from storyteller_daemon.storage.backlog import BacklogRepository
from storyteller_daemon.storage.inbox import InboxRepository
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from world_adapter.errors import FatalStreamError, WorldAdapterError
from world_adapter.protocol import WorldClient

log = logging.getLogger(__name__)

OFFLINE_BANNER = (
    "No API key: using the OFFLINE STAND-IN, a rule-based responder. It is not a language "
    "model; it only shows the machinery working."
)


def daemon_secrets(cfg: Config, environ: Mapping[str, str] = os.environ) -> list[str]:
    """The values of every secret the configuration names (API key, tokens, webhook, database
    URL): no tool argument may carry one out (see `agent.policy`)."""
    names = [
        cfg.model.api_key_env,
        cfg.world.token_env,
        cfg.alerts.discord_webhook_env,
        cfg.http.token_env,
        cfg.database.url_env,
    ]
    return [environ[n] for n in names if n and environ.get(n, "").strip()]


def open_store(cfg: Config, environ: Mapping[str, str] = os.environ) -> Store:
    """A store over the configured database."""
    return Store.open(database_url(cfg, environ), busy_timeout_ms=cfg.database.busy_timeout_ms)


@dataclass
class ModelChoice:
    """The endpoint the daemon will use, and how to describe it to the admin."""

    model: Model | None
    description: str
    offline: bool = False


def choose_model(cfg: Config, environ: Mapping[str, str] = os.environ) -> ModelChoice:
    """OpenAI (or a compatible server) with a key; the offline stand-in if allowed; else none."""
    key = environ.get(cfg.model.api_key_env, "").strip()
    if key:
        from storyteller_daemon.agent.openai_responses import OpenAIResponsesModel

        model = OpenAIResponsesModel(
            api_key=key,
            base_url=cfg.model.base_url or None,
            timeout_seconds=cfg.model.request_timeout_seconds,
            max_retries=cfg.model.max_retries,
        )
        return ModelChoice(model, model.name)
    if cfg.model.offline_when_no_key:
        from storyteller_daemon.agent.offline import OfflineStandInModel

        offline = OfflineStandInModel()
        return ModelChoice(offline, offline.name, offline=True)
    return ModelChoice(
        None,
        f"none: {cfg.model.api_key_env} is not set, so storytellers will not call a model",
    )


def build_world(
    cfg: Config, environ: Mapping[str, str] = os.environ, *, request_seconds: float = 10.0
) -> WorldClient:
    """The configured world: the embedded sim world, or a game over the bridge protocol.

    A bridged game is not contacted here; it is first reached by the first query or
    subscription (each request gets `request_seconds`, reconnects included).
    """
    if cfg.world.kind == "sim":
        from world_adapter.sim import SimWorld

        return SimWorld.harbour_town(seed=cfg.world.sim_seed)
    from world_adapter.bridge.client import BridgeWorldClient, check_bridge_url
    from world_adapter.bridge.timing import BridgeTimings

    try:
        url = check_bridge_url(cfg.world.url)
    except ValueError as exc:
        raise ConfigError("config", str(exc), key="world.url") from None
    if not cfg.world.token_env:
        raise ConfigError("config", "a bridged world needs token_env", key="world.token_env")
    token = environ.get(cfg.world.token_env, "").strip()
    if not token:
        raise ConfigError(
            "config",
            f"environment variable {cfg.world.token_env} is not set",
            key="world.token_env",
        )
    timings = BridgeTimings(request_seconds=request_seconds)
    return BridgeWorldClient(url, token, timings=timings, client_name="storyteller")


async def prog_catalogue(cfg: Config) -> list[ProgSignature] | None:
    """The configured world's prog catalogue, or None when the world cannot be reached.

    The embedded sim world is always reachable; a bridged game may not be running, so it gets
    a short time budget.
    """
    if cfg.world.kind == "sim":
        return await build_world(cfg).progs()
    world = build_world(cfg, request_seconds=3.0)
    try:
        return await world.progs()
    except WorldAdapterError:
        return None
    finally:
        close = getattr(world, "close", None)
        if close is not None:
            await close()


def build_alerts(cfg: Config, clock: Clock, environ: Mapping[str, str] = os.environ) -> Alerts:
    """Alerts to the log, and to Discord when `alerts.discord_webhook_env` names a webhook.

    An unset variable leaves Discord out with a warning (storytelling matters more than its
    alerts; `storyteller doctor` reports it).

    Raises:
        ConfigError: the variable holds something that is not a Discord webhook URL.
    """
    name = cfg.alerts.discord_webhook_env
    discord = None
    url = environ.get(name, "").strip() if name else ""
    if name and not url:
        log.warning("%s is not set: alerts go to the log only", name)
    if url:
        problem = webhook_url_problem(url)
        if problem is not None:
            raise ConfigError(
                "config",
                f"environment variable {name}: {problem}",
                key="alerts.discord_webhook_env",
            )
        discord = DiscordWebhookSink(
            url,
            clock=clock,
            source=f"storyteller@{socket.gethostname()}",
            period_seconds=cfg.alerts.repeat_window_seconds,
        )
    return Alerts(clock=clock, discord=discord)


def start_history(cfg: Config, environ: Mapping[str, str] = os.environ) -> StartHistory | None:
    """Where starts are recorded for crash-loop detection, or None for no detection.

    The configured file, else ``$STATE_DIRECTORY/start-history.json`` when systemd runs us.
    """
    if cfg.alerts.start_history_file:
        return StartHistory(Path(cfg.alerts.start_history_file))
    state = environ.get("STATE_DIRECTORY", "").split(":")[0]
    return StartHistory(Path(state) / "start-history.json") if state else None


def http_token(cfg: Config, environ: Mapping[str, str] = os.environ) -> str:
    """The listener's bearer token ("" for none), checked against the listen address.

    Raises:
        ConfigError: the listener would be reachable from other machines without a token.
    """
    token = environ.get(cfg.http.token_env, "").strip() if cfg.http.token_env else ""
    check_http_settings(cfg.http, token)
    return token


@dataclass
class Runtime:
    """A fully wired daemon and the parts a caller may want to look at."""

    cfg: Config
    store: Store
    world: WorldClient
    choice: ModelChoice
    stats: RuntimeStats
    pipeline: Pipeline
    daemon: Daemon
    runner: AgentTurnRunner | None = None
    alerts: Alerts | None = None
    health: HealthServer | None = None
    budget: BudgetKeeper | None = None
    recorder: RunRecorder | None = None
    approvals: ApprovalRunner | None = None
    summaries: LoggingObserver | None = None
    """The log's per-minute summaries (None when the caller observes the pipeline itself)."""
    summaries_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    """How the summaries wait for the next minute (the runtime clock's sleep)."""

    async def run(self, stop: asyncio.Event) -> None:
        """Run the daemon, alert delivery and the HTTP listener (if enabled) until `stop`."""
        async with self._services():
            try:
                await self._run_daemon(stop)
            except Exception as exc:
                # Logged while alert delivery still runs, so the admins hear of it; the
                # traceback follows from the caller.
                first = exc.exceptions[0] if isinstance(exc, ExceptionGroup) else exc
                log.error("the daemon stopped on an unexpected %s", type(first).__name__)
                raise

    @contextlib.asynccontextmanager
    async def _services(self) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if self.alerts is not None:
                await stack.enter_async_context(self.alerts.running())
            if self.health is not None:
                await stack.enter_async_context(self.health)
            yield

    async def keep_catalogue(self) -> None:
        """Once running, store the world's progs, so admin commands can check prog names
        against them while the world cannot be asked from their shell."""
        await self.daemon.ready.wait()
        try:
            progs = await self.world.progs()
            # A stop must not cut the write off mid-transaction.
            save = self.store.catalogues.save(self.cfg.world.identity, progs, datetime.now(UTC))
            await complete_even_if_cancelled(save)
        except (WorldAdapterError, StorageError) as exc:
            log.info("the world's prog catalogue was not stored (%s); admin commands ask it", exc)

    async def _run_daemon(self, stop: asyncio.Event) -> None:
        """Run the daemon and its side work (the sim world's activity, pruning, approvals, the
        prog catalogue, the minute summaries) in one TaskGroup until `stop` is set."""
        failure: Exception | None = None
        try:
            async with asyncio.TaskGroup() as group:
                side = [
                    group.create_task(_logged(name, work), name=name)
                    for name, work in self._side_work()
                ]
                try:
                    await self.daemon.run(stop)
                except Exception as exc:  # raised below as it is, not wrapped by the group
                    failure = exc
                finally:
                    for task in side:
                        task.cancel()
        finally:
            if self.summaries is not None:
                self.summaries.flush()  # the last, partial minute
        if isinstance(failure, FatalStreamError):  # the operator must act: one line, no retry
            raise ConfigError(
                "config", f"the game refused the daemon: {failure}", key="world"
            ) from failure
        if failure is not None:
            raise failure

    def _side_work(self) -> Iterator[tuple[str, Coroutine[Any, Any, None]]]:
        run_activity = getattr(self.world, "run_activity", None)
        if run_activity is not None:
            yield "sim-activity", run_activity(self.cfg.world.sim_tick_seconds)
        if self.recorder is not None:  # at start-up, then daily
            runs = self.cfg.runs
            yield (
                "run-pruning",
                self.recorder.prune_daily(
                    retention_days=runs.retention_days,
                    ledger_retention_days=runs.ledger_retention_days,
                ),
            )
        if self.approvals is not None:
            yield "approvals", self.approvals.run()
        yield "prog-catalogue", self.keep_catalogue()
        if self.summaries is not None:
            yield "minute-summaries", self.summaries.run(self.summaries_sleep)

    async def close(self) -> None:
        """Release the model client, the world's connections and the database."""
        close = getattr(self.choice.model, "close", None)
        if close is not None:
            await close()
        close_world = getattr(self.world, "close", None)
        if close_world is not None:
            await close_world()
        await self.store.close()


async def _logged(name: str, work: Coroutine[Any, Any, None]) -> None:
    """Side work that fails is logged; the daemon goes on without it rather than stop."""
    try:
        await work
    except Exception:
        log.exception("%s stopped on an unexpected error; the daemon goes on without it", name)


async def build_runtime(
    cfg: Config,
    *,
    environ: Mapping[str, str] = os.environ,
    world: WorldClient | None = None,
    choice: ModelChoice | None = None,
    observer: Observer | None = None,
    clock: Clock | None = None,
    store: Store | None = None,
    reload_seconds: float = 5.0,
    drain_seconds: float | None = None,
    alerts: Alerts | None = None,
) -> Runtime:
    """Wire the daemon. Checks the schema is current; warns once when there is no model.

    `drain_seconds` defaults to ``[daemon] drain_seconds``; `alerts` to `build_alerts`.
    """
    token = http_token(cfg, environ)
    clock = clock or SystemClock()
    alerts = alerts or build_alerts(cfg, clock, environ)
    store = store or open_store(cfg, environ)
    await store.db.require_current()
    world = world or build_world(cfg, environ)
    choice = choice or choose_model(cfg, environ)
    stats = RuntimeStats()
    budget = BudgetKeeper(cfg.budgets, cfg.model.prices, clock, alert=alerts.reporter("budget"))
    ledger = LedgerRepository(store.db)
    await budget.load(ledger)  # today's spend survives a restart
    recorder = RunRecorder(RunRepository(store.db), ledger, clock, record=cfg.runs.record)
    if choice.model is None:
        log.warning("model: %s", choice.description)
    elif choice.offline:
        log.warning(OFFLINE_BANNER)
    lookups = CachedWorld(world, clock.monotonic)
    router = Router()
    actions = PolicyActionRepository(store.db)
    approvals = ApprovalRepository(store.db)
    policy = Policy(
        cfg.policy,
        clock.monotonic,
        secrets=daemon_secrets(cfg, environ),
        cells_of=router.cells_of,
        kill_file=kill_file_path(cfg.policy, database_url(cfg, environ)),
        now=clock.now,
        journal=actions.add,
        approvals=approvals,
    )
    # The caps and cooldowns count the prog calls of the last day, across restarts.
    policy.restore(await actions.since(clock.now() - timedelta(days=1)), clock.now())
    runner = None
    latency: dict[str, LatencyHistogram] = {}
    if choice.model is not None:
        breaker = CircuitBreaker(
            choice.model,
            pause_seconds=cfg.model.refused_pause_seconds,
            monotonic=clock.monotonic,
        )
        metered = MeteredModel(
            breaker,
            stats,
            cfg.model.prices,
            monotonic=clock.monotonic,
            budget=budget,
            now=clock.now,
        )
        latency = metered.latency
        runner = AgentTurnRunner(
            world=world,
            situations=store.situations,
            memories=store.memories,
            references=store.references,
            model=metered,
            limits=cfg.limits,
            clock=clock,
            stats=stats,
            speech=store.speech,
            alerts=alerts,
            recorder=recorder,
            attention=AttentionOptions(
                timeout_seconds=cfg.attention.request_timeout_seconds,
                max_retries=cfg.attention.max_retries,
                debug_reasons=cfg.attention.debug_reasons,
                reference=cfg.attention.one_call_per_event,
                remit_max_chars=cfg.attention.remit_max_chars,
            ),
            lookups=lookups,
            policy=policy,
        )
    summaries = None  # the log's minute summaries, unless the caller observes the pipeline
    if observer is None:
        observer = summaries = LoggingObserver(
            debug_payloads=cfg.logging.debug_payloads, clock=clock.monotonic, stats=stats
        )
    pipeline = Pipeline(
        router=router,
        runner=runner or _NoModel(),
        clock=clock,
        stats=stats,
        observer=observer,
        backlog=BacklogRepository(store.db, clock.now),
        attention=cfg.attention,
        queue_size=cfg.limits.queue_size,
        model_available=runner is not None,
        speech=store.speech,
        admission=Admission(budget, lookups, skip_idle_heartbeats=cfg.budgets.skip_idle_heartbeats),
        alerts=alerts,
        source=cfg.world.kind,
        observe=lookups.observe,
    )
    daemon = Daemon(
        settings=store.storytellers,
        world=lookups,
        pipeline=pipeline,
        clock=clock,
        reload_seconds=reload_seconds,
        drain_seconds=cfg.daemon.drain_seconds if drain_seconds is None else drain_seconds,
        alerts=alerts,
        # A bridged game's epochs are unique per boot, so its events are stored durably and
        # the stream resumes from the stored cursor; the in-process sim restarts at "sim-1".
        inbox=InboxRepository(store.db) if cfg.world.kind == "bridge" else None,
        world_key=cfg.world.kind,
        intake_activity=_stream_activity(world),
        stall_seconds=cfg.daemon.intake_stall_seconds,
    )
    alerts.watch_counter("queue_overflow", lambda: stats.queue_overflow, describe_queue_overflow)
    alerts.watch_counter("policy_refused", lambda: policy.stats.refused, describe_policy_refusals)
    health = None
    if cfg.http.enabled:
        health = HealthServer(
            daemon=daemon,
            db_check=store.db.current_revision,
            latency=latency,
            alerts=alerts,
            host=cfg.http.host,
            port=cfg.http.port,
            token=token,
        )
    runtime = Runtime(cfg, store, world, choice, stats, pipeline, daemon, runner)
    runtime.summaries, runtime.summaries_sleep = summaries, clock.sleep
    # Parked calls are looked at every few seconds only where approvals are in use: tools are
    # marked for approval, or calls parked under an earlier configuration are still open.
    in_use = bool(cfg.policy.approve) or bool(await approvals.list(OPEN_APPROVAL_STATES, limit=1))
    if runner is not None and in_use:
        runtime.approvals = ApprovalRunner(
            approvals, store.storytellers.get, runner.run_approved, policy, clock
        )
    runtime.alerts, runtime.health = alerts, health
    runtime.budget, runtime.recorder = budget, recorder
    return runtime


def _stream_activity(world: WorldClient) -> Callable[[], int] | None:
    """The bridge's frame and reconnect count, for the intake watchdog (None for other worlds)."""
    from world_adapter.bridge.connection import BridgeStats

    stats = getattr(world, "stats", None)
    if not isinstance(stats, BridgeStats):
        return None
    return lambda: stats.activity


class _NoModel:
    """Stands in for the runner when no model is configured; the api_key stage stops first."""

    async def judge(self, storyteller: Storyteller, triggers: Sequence[Trigger]) -> list[Verdict]:
        raise RuntimeError("no model configured")

    async def run_turn(self, storyteller: Storyteller, trigger: Trigger, key: str) -> TurnOutcome:
        raise RuntimeError("no model configured")

    async def interrupted(
        self, storyteller: Storyteller, trigger: Trigger, key: str, attempt: int
    ) -> None:
        """Nothing ran without a model, so nothing was cut off."""
