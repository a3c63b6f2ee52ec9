"""`Runtime`: a fully wired daemon, run with its side work and closed.

It runs the daemon inside alert delivery, the HTTP listener (when enabled) and the MCP hub
(when MCP servers are configured: their sessions close when the run ends), with side work
beside it in one task group: the sim world's activity, run pruning, parked approvals, storing the
world's prog catalogue and the log's minute summaries. Side work that fails is logged and the
daemon goes on without it; a game that refuses the daemon ends the run as a configuration error.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from storyteller_daemon.alerts import Alerts
from storyteller_daemon.app.adapters import ModelChoice, close_if_closable
from storyteller_daemon.clock import Clock, uncancelled
from storyteller_daemon.config import Config
from storyteller_daemon.errors import ConfigError, StorageError
from storyteller_daemon.mcp import McpHub
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.cluster import LeaseKeeper
from storyteller_daemon.runtime.daemon import Daemon
from storyteller_daemon.runtime.pipeline import Pipeline
from storyteller_daemon.runtime.pipeline.observers import LoggingObserver
from storyteller_daemon.runtime.reflection import Reflection
from storyteller_daemon.runtime.scheduling.approvals import ApprovalRunner
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper
from storyteller_daemon.runtime.spending.shared import SettledSpend, SharedLedger
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.runtime.turns import AgentTurnRunner
from storyteller_daemon.storage.store import Store
from world_adapter.errors import FatalStreamError, WorldAdapterError
from world_adapter.protocol import WorldClient

if TYPE_CHECKING:  # the listener (aiohttp's server) is imported only when configured
    from storyteller_daemon.runtime.health.server import HealthServer

log = logging.getLogger(__package__)


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
    clock: Clock
    """The runtime's clock (the catalogue's storing time)."""
    runner: AgentTurnRunner | None = None
    alerts: Alerts | None = None
    health: HealthServer | None = None
    budget: BudgetKeeper | None = None
    recorder: RunRecorder | None = None
    approvals: ApprovalRunner | None = None
    reflection: Reflection | None = None
    """Reflection while idle (its daemon task is `daemon.idle_work`); None when disabled."""
    mcp: McpHub | None = None
    """The MCP servers storytellers' tools call (None when none are configured)."""
    summaries: LoggingObserver | None = None
    """The log's per-minute summaries (None when the caller observes the pipeline itself)."""
    leases: LeaseKeeper | None = None
    """The storyteller leases of a daemon of a cluster (None: not clustered)."""
    closing: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    """Closed after the store (a cluster daemon's lease connections)."""

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
            if self.mcp is not None:
                await stack.enter_async_context(self.mcp)
            yield

    async def keep_catalogue(self) -> None:
        """Once running, store the world's progs, so admin commands can check prog names
        against them while the world cannot be asked from their shell."""
        await self.daemon.ready.wait()
        try:
            progs = await self.world.progs()
            # A stop must not cut the write off mid-transaction.
            save = self.store.catalogues.save(self.cfg.world.identity, progs, self.clock.now())
            await uncancelled(save)
        except (WorldAdapterError, StorageError) as exc:
            log.info("the world's prog catalogue was not stored (%s); admin commands ask it", exc)

    async def _run_daemon(self, stop: asyncio.Event) -> None:
        """Run the daemon and its side work (the sim world's activity, pruning, approvals, in a
        cluster the others' spend, the prog catalogue, the minute summaries) in one TaskGroup
        until `stop` is set."""
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
        if run_activity is not None and self.cfg.world.sim_activity:
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
        if self.leases is not None and self.budget is not None:  # the other daemons' spend
            yield (
                "shared-spend",
                self.budget.follow(
                    SettledSpend(
                        self.store.ledger,
                        SharedLedger.of(self.cfg.cluster, self.cfg.model),
                        self.clock,
                    ),
                    self.cfg.cluster.renew_seconds,
                ),
            )
        yield "prog-catalogue", self.keep_catalogue()
        if self.summaries is not None:
            yield "minute-summaries", self.summaries.run()

    async def close(self) -> None:
        """Release the model client, the world's connections and the database."""
        await close_if_closable(self.choice.model)
        await close_if_closable(self.world)
        await self.store.close()
        for close in self.closing:
            await close()


async def _logged(name: str, work: Coroutine[Any, Any, None]) -> None:
    """Side work that fails is logged; the daemon goes on without it rather than stop."""
    try:
        await work
    except Exception:
        log.exception("%s stopped on an unexpected error; the daemon goes on without it", name)
