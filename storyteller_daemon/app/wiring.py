"""`build_runtime`: the daemon wired from the configuration.

It opens what the configuration chooses (see `adapters`) unless the caller passes its own, checks
the database schema is current, and puts the parts together: the budget keeper and run recorder,
the world look-up cache, the policy with the prog calls of the last day restored, the MCP hub
(with MCP servers configured), the metered model behind its circuit breaker and the turn runner
(only with a model), the pipeline, reflection while idle, the daemon, the alert counters, the
HTTP listener and the approval runner. With ``[cluster] enabled`` (PostgreSQL only) a lease
keeper holds the daemon's share of the storytellers: the daemon sees and runs only those, and
the backlog, the turn journal and prog calls are fenced by its leases.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING

from storyteller_daemon.agent.attention import AttentionOptions
from storyteller_daemon.agent.models.breaker import CircuitBreaker
from storyteller_daemon.agent.models.metering import LatencyHistogram, MeteredModel
from storyteller_daemon.agent.models.service_tiers import TierFallback
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.policy_rules import kill_file_path, kill_switch_on
from storyteller_daemon.agent.services import TurnServices
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.agent.turn_runner import Finish, TurnOutcome, Verdict
from storyteller_daemon.alerts import Alerts
from storyteller_daemon.alerts.service import describe_policy_refusals, describe_queue_overflow
from storyteller_daemon.app.adapters import (
    OFFLINE_BANNER,
    ModelChoice,
    build_alerts,
    build_world,
    choose_model,
    daemon_secrets,
    http_token,
    open_store,
)
from storyteller_daemon.app.cluster_wiring import cluster_parts
from storyteller_daemon.app.runtime import Runtime
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import Config, check_cluster_database, database_url
from storyteller_daemon.domain.approvals import OPEN_APPROVAL_STATES
from storyteller_daemon.domain.cluster import KILL_SWITCH_FLAG
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.mcp import McpHub
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.cluster import LeasedSettings
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.game_admin import GameAdmin
from storyteller_daemon.runtime.lookup_cache import CachedWorld
from storyteller_daemon.runtime.pipeline import Observer, Pipeline
from storyteller_daemon.runtime.pipeline.observers import LoggingObserver
from storyteller_daemon.runtime.pipeline.routing import Router
from storyteller_daemon.runtime.reflection import (
    DigestRefresher,
    Reflection,
    ReflectionScheduler,
)
from storyteller_daemon.runtime.scheduling.approvals import ApprovalRunner
from storyteller_daemon.runtime.spending.admission import Admission
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.spending.shared import SharedLedger
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.runtime.turns import AgentTurnRunner
from storyteller_daemon.storage.store import Store
from storyteller_daemon.storage.work_notices import send_work_notice, work_notices
from world_adapter.invocations import InvocationChannel
from world_adapter.protocol import WorldClient

if TYPE_CHECKING:
    from world_adapter.bridge.client import BridgeWorldClient

log = logging.getLogger(__package__)

DASHBOARD_KEEPALIVE_SECONDS = 15.0
"""A live timeline with nothing new is sent a keep-alive this often (runs wake it at once)."""


def attention_options(cfg: Config) -> AttentionOptions:
    """How the daemon sends attention requests (``[attention]``)."""
    return AttentionOptions(
        timeout_seconds=cfg.attention.request_timeout_seconds,
        max_retries=cfg.attention.max_retries,
        debug_reasons=cfg.attention.debug_reasons,
        reference=cfg.attention.one_call_per_event,
        remit_max_chars=cfg.attention.remit_max_chars,
        cache_floor_tokens=cfg.attention.cache_floor_tokens,
    )


async def build_runtime(
    cfg: Config,
    *,
    environ: Mapping[str, str] = os.environ,
    world: WorldClient | None = None,
    choice: ModelChoice | None = None,
    observer: Observer | None = None,
    clock: Clock,
    store: Store | None = None,
    reload_seconds: float = 5.0,
    drain_seconds: float | None = None,
    alerts: Alerts | None = None,
    admin_cli: Sequence[str] | None = None,
) -> Runtime:
    """Wire the daemon. Checks the schema is current; warns once when there is no model.

    `drain_seconds` defaults to ``[daemon] drain_seconds``; `alerts` to `build_alerts`. With
    `admin_cli` (the command that starts this configuration's CLI), a bridged game's in-game
    admin commands run through it (`GameAdmin`); without, the daemon refuses them.
    """
    token = http_token(cfg, environ)
    alerts = alerts or build_alerts(cfg, clock, environ)
    store = store or open_store(cfg, clock, environ)
    await store.db.require_current()
    check_cluster_database(cfg, store.db.url)
    stamped = store.stamped_by(clock)  # what the pipeline writes carries the daemon's time
    keeper = forwarder = cursor_key = lease_store = None
    cluster = cluster_parts(cfg, store, stamped, clock, alerts) if cfg.cluster.enabled else None
    if cluster is not None:
        keeper, forwarder, stamped = cluster.keeper, cluster.forwarder, cluster.fenced
        cursor_key, lease_store = cluster.cursor_key, cluster.lease_store
    world = world or build_world(cfg, environ)
    choice = choice or choose_model(cfg, environ)
    stats = RuntimeStats()
    budget = BudgetKeeper(cfg.budgets, cfg.model.prices, clock, alert=alerts.reporter("budget"))
    ledger = store.ledger
    await budget.load(ledger)  # today's spend survives a restart
    journal = stamped.journal
    recorder = RunRecorder(
        store.runs,
        ledger,
        clock,
        record=cfg.runs.record,
        unit=store.db.unit,
        journal=journal,
    )
    if choice.model is None:
        log.warning("model: %s", choice.description)
    elif choice.offline:
        log.warning(OFFLINE_BANNER)
    lookups = CachedWorld(world, clock)
    router = Router()
    actions = store.policy_actions
    approvals = store.approvals
    policy = Policy(
        cfg.policy,
        clock,
        secrets=daemon_secrets(cfg, environ),
        cells_of=router.cells_of,
        kill_file=kill_file_path(cfg.policy, database_url(cfg, environ)),
        journal=actions.add,
        approvals=approvals,
        claims=store.claims,
        kill_flag=lambda: store.flags.on(KILL_SWITCH_FLAG),
        holds=keeper.holds_now if keeper is not None else None,
    )
    # The caps and cooldowns count the prog calls of the last day, across restarts.
    policy.restore(await actions.since(clock.now() - timedelta(days=1)), clock.now())
    mcp = McpHub(cfg.mcp, clock=clock, alerts=alerts, environ=environ) if cfg.mcp.servers else None
    runner = None
    metered: MeteredModel | None = None
    latency: dict[str, LatencyHistogram] = {}
    if choice.model is not None:
        breaker = CircuitBreaker(
            choice.model,
            pause_seconds=cfg.model.refused_pause_seconds,
            clock=clock,
        )
        metered = metered_model(
            breaker,
            stats,
            cfg.model.prices,
            budget=budget,
            shared=SharedLedger.of(cfg.cluster, cfg.model) if keeper is not None else None,
            clock=clock,
        )
        latency = metered.latency
        services = TurnServices(
            world=world,
            situations=store.situations,
            memories=store.memories,
            references=store.references,
            speech=store.speech,
            digests=store.digests,
            mcp=mcp,
            plans=store.plans,
            claims=store.claims,
            queries=store.queries,
            journal=journal,
        )
        runner = AgentTurnRunner(
            services,
            model=metered,
            limits=cfg.limits,
            clock=clock,
            stats=stats,
            alerts=alerts,
            recorder=recorder,
            attention=attention_options(cfg),
            lookups=lookups,
            policy=policy,
        )
    summaries = None  # the log's minute summaries, unless the caller observes the pipeline
    if observer is None:
        observer = summaries = LoggingObserver(
            clock=clock, debug_payloads=cfg.logging.debug_payloads, stats=stats
        )
    pipeline = Pipeline(
        router=router,
        runner=runner or _NoModel(),
        clock=clock,
        stats=stats,
        observer=observer,
        backlog=stamped.backlog,
        attention=cfg.attention,
        queue_size=cfg.limits.queue_size,
        model_available=runner is not None,
        speech=store.speech,
        admission=Admission(
            budget,
            lookups,
            skip_idle_heartbeats=cfg.budgets.skip_idle_heartbeats,
            kill_switch=lambda: kill_switch_on(cfg.policy, policy.kill_file),
            kill_flag=lambda: store.flags.on(KILL_SWITCH_FLAG),
        ),
        alerts=alerts,
        source=cfg.world.kind,
        observe=lookups.observe,
        plans=store.plans,
        verdict_memory=stamped.verdicts,
        # A cluster's daemon routes the events it stores to every storyteller, wherever run.
        everyone=Router() if keeper is not None else None,
        elsewhere=functools.partial(send_work_notice, store.db) if keeper is not None else None,
    )
    reflection = None
    if cfg.reflection.enabled:
        refresher = DigestRefresher(
            store=store,
            runs=store.runs if cfg.runs.record else None,
            model=TierFallback(metered, clock) if metered is not None else None,
            recorder=recorder,
            clock=clock,
            cfg=cfg.reflection,
        )
        reflection = Reflection(refresher, store.memories, cfg.reflection, stats)
    daemon = Daemon(
        settings=LeasedSettings(store.storytellers, keeper) if keeper else store.storytellers,
        world=lookups,
        pipeline=pipeline,
        clock=clock,
        reload_seconds=reload_seconds,
        drain_seconds=cfg.daemon.drain_seconds if drain_seconds is None else drain_seconds,
        handover_seconds=cfg.cluster.handover_seconds if keeper is not None else None,
        alerts=alerts,
        # A bridged game's epochs are unique per boot, so its events are stored durably and
        # the stream resumes from the stored cursor; the in-process sim restarts at "sim-1".
        inbox=stamped.inbox if cfg.world.kind == "bridge" else None,
        world_key=cfg.world.kind,
        cursor_key=cursor_key,
        intake_activity=_stream_activity(world),
        stall_seconds=cfg.daemon.intake_stall_seconds,
        idle_work=(
            ReflectionScheduler(reflection, pipeline, clock, cfg.reflection)
            if reflection is not None
            else None
        ),
        settings_listeners=[budget.learn],
        invocations=_invocation_channel(world),
        turn_runs=store.runs if cfg.runs.record else None,
        leases=keeper,
        followed=store.storytellers if keeper is not None else None,
        forwarder=forwarder,
        work_notices=functools.partial(work_notices, store.db, clock)
        if keeper is not None
        else None,
        sweep_seconds=cfg.cluster.lease_seconds,
    )
    if keeper is not None:
        keeper.listen(daemon.watch.poll_now)
    bridged = _bridge_client(world)
    if admin_cli is not None and bridged is not None:
        bridged.admin = GameAdmin(admin_cli, daemon, store.audit, clock)
    alerts.watch_counter("queue_overflow", lambda: stats.queue_overflow, describe_queue_overflow)
    alerts.watch_counter("policy_refused", lambda: policy.stats.refused, describe_policy_refusals)
    health = None
    if cfg.http.enabled:  # the listener's modules (aiohttp's server) only for a listener
        from storyteller_daemon.runtime.health.server import HealthServer

        dashboard = None
        if cfg.http.dashboard:  # and the dashboard's (jinja2) only for the dashboard
            from storyteller_daemon.runtime.dashboard import (
                Controls,
                Dashboard,
                DashboardData,
                RunFeed,
            )

            feed = RunFeed(poll_seconds=DASHBOARD_KEEPALIVE_SECONDS)
            recorder.listen(feed.stored)
            controls = Controls(cfg.policy, policy.kill_file)
            data = DashboardData(store, cfg.budgets, clock, controls, daemon, stats)
            dashboard = Dashboard(data, feed)
        health = HealthServer(
            daemon=daemon,
            db_check=store.db.current_revision,
            latency=latency,
            alerts=alerts,
            host=cfg.http.host,
            port=cfg.http.port,
            token=token,
            web_app=dashboard,
            clock=clock,
            leases=keeper,
            cluster_status=stamped.leases.status if keeper is not None else None,
        )
    runtime = Runtime(cfg, store, world, choice, stats, pipeline, daemon, clock, runner)
    runtime.summaries = summaries
    # Parked calls are looked at every few seconds only where approvals are in use: tools are
    # marked for approval, or calls parked under an earlier configuration are still open.
    in_use = bool(cfg.policy.approve) or bool(await approvals.list(OPEN_APPROVAL_STATES, limit=1))
    if runner is not None and in_use:
        runtime.approvals = ApprovalRunner(
            approvals,
            store.storytellers.get,
            runner.run_approved,
            policy,
            clock,
            held=(lambda: keeper.held) if keeper is not None else None,
        )
    runtime.alerts, runtime.health, runtime.mcp = alerts, health, mcp
    runtime.budget, runtime.recorder = budget, recorder
    runtime.reflection = reflection
    runtime.leases = keeper
    if lease_store is not None:
        runtime.closing.append(lease_store.close)
    return runtime


def _bridge_client(world: WorldClient) -> BridgeWorldClient | None:
    """`world` if it is a bridged game's client. The client's module (and aiohttp) is looked
    up, not imported: a world of another kind does not load it, and no client exists without
    it."""
    client = sys.modules.get("world_adapter.bridge.client")
    return world if client is not None and isinstance(world, client.BridgeWorldClient) else None


def _invocation_channel(world: WorldClient) -> InvocationChannel | None:
    """The bridge client, which carries the game's invocations (None for other worlds)."""
    return _bridge_client(world)


def _stream_activity(world: WorldClient) -> Callable[[], int] | None:
    """The bridge's frame and reconnect count, for the intake watchdog (None for other worlds;
    the bridge's module is looked up, not imported, as in `_bridge_client`)."""
    connection = sys.modules.get("world_adapter.bridge.connection")
    stats = getattr(world, "stats", None)
    if connection is None or not isinstance(stats, connection.BridgeStats):
        return None
    return lambda: stats.activity


class _NoModel:
    """Stands in for the runner when no model is configured; the api_key stage stops first."""

    async def judge(self, storyteller: Storyteller, triggers: Sequence[Trigger]) -> list[Verdict]:
        raise RuntimeError("no model configured")

    async def run_turn(
        self, storyteller: Storyteller, trigger: Trigger, key: str, *, finish: Finish | None = None
    ) -> TurnOutcome:
        raise RuntimeError("no model configured")

    async def interrupted(
        self,
        storyteller: Storyteller,
        trigger: Trigger,
        key: str,
        attempt: int,
        *,
        given_up: bool = False,
    ) -> int | None:
        """Nothing ran without a model, so nothing was cut off."""
        return None
