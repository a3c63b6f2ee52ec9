"""Composition root: the only place that names concrete adapters (world, model, database).

Everything below receives its collaborators; this module decides which ones to build from the
configuration and the environment.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from progs.types import ProgSignature
from storyteller_daemon.agent.model import Model
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.config import Config
from storyteller_daemon.domain.settings import Storyteller
from storyteller_daemon.errors import ConfigError
from storyteller_daemon.runtime.clock import Clock, SystemClock
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.metering import MeteredModel
from storyteller_daemon.runtime.observers import LoggingObserver
from storyteller_daemon.runtime.pipeline import Observer, Pipeline, TurnOutcome, Verdict
from storyteller_daemon.runtime.routing import Router
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.runtime.turns import AgentTurnRunner
from storyteller_daemon.storage.store import Store
from world_adapter.protocol import WorldClient

log = logging.getLogger(__name__)

OFFLINE_BANNER = (
    "No API key: using the OFFLINE STAND-IN, a rule-based responder. It is not a language "
    "model; it only shows the machinery working."
)


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
        return value
    return cfg.database.url


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


def build_world(cfg: Config) -> WorldClient:
    """The configured world."""
    if cfg.world.kind == "sim":
        from world_adapter.sim import SimWorld

        return SimWorld.harbour_town(seed=cfg.world.sim_seed)
    raise ConfigError(
        "config",
        "the bridge world client is not available in this version; use kind = 'sim'",
        key="world.kind",
    )


async def prog_catalogue(cfg: Config) -> list[ProgSignature] | None:
    """The configured world's prog catalogue, or None when the world cannot be reached.

    The embedded sim world is always reachable; a bridged game may not be running.
    """
    if cfg.world.kind == "sim":
        return await build_world(cfg).progs()
    return None


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
    extra_tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def run(self, stop: asyncio.Event) -> None:
        """Run the daemon (and the sim world's activity, if any) until `stop` is set."""
        activity: asyncio.Task[None] | None = None
        run_activity = getattr(self.world, "run_activity", None)
        if run_activity is not None:
            activity = asyncio.create_task(run_activity(self.cfg.world.sim_tick_seconds))
        try:
            await self.daemon.run(stop)
        finally:
            if activity is not None:
                activity.cancel()
                await asyncio.gather(activity, return_exceptions=True)

    async def close(self) -> None:
        """Release the model client and the database."""
        close = getattr(self.choice.model, "close", None)
        if close is not None:
            await close()
        await self.store.close()


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
    drain_seconds: float = 30.0,
) -> Runtime:
    """Wire the daemon. Checks the schema is current; warns once when there is no model."""
    store = store or open_store(cfg, environ)
    await store.db.require_current()
    world = world or build_world(cfg)
    choice = choice or choose_model(cfg, environ)
    clock = clock or SystemClock()
    stats = RuntimeStats()
    if choice.model is None:
        log.warning("model: %s", choice.description)
    elif choice.offline:
        log.warning(OFFLINE_BANNER)
    runner = None
    if choice.model is not None:
        runner = AgentTurnRunner(
            world=world,
            situations=store.situations,
            memories=store.memories,
            references=store.references,
            model=MeteredModel(choice.model, stats, cfg.model.prices),
            limits=cfg.limits,
            clock=clock,
            stats=stats,
        )
    pipeline = Pipeline(
        router=Router(),
        runner=runner or _NoModel(),
        clock=clock,
        stats=stats,
        observer=observer or LoggingObserver(debug_payloads=cfg.logging.debug_payloads),
        queue_size=cfg.limits.queue_size,
        model_available=runner is not None,
    )
    daemon = Daemon(
        settings=store.storytellers,
        world=world,
        pipeline=pipeline,
        clock=clock,
        reload_seconds=reload_seconds,
        drain_seconds=drain_seconds,
    )
    return Runtime(cfg, store, world, choice, stats, pipeline, daemon, runner)


class _NoModel:
    """Stands in for the runner when no model is configured; the api_key stage stops first."""

    async def judge(self, storyteller: Storyteller, triggers: Sequence[Trigger]) -> list[Verdict]:
        raise RuntimeError("no model configured")

    async def run_turn(self, storyteller: Storyteller, trigger: Trigger) -> TurnOutcome:
        raise RuntimeError("no model configured")
