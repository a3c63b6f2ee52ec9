"""Reflection wired for one pass from the shell (``storyteller ais digest refresh``).

The same parts the daemon uses, without the daemon: the configured model behind the metering
and the budget door (today's spend read from the ledger first, so the caps hold across the
daemon and the shell; beside a cluster, each request checked against the shared ledger as the
daemons check theirs), the run recorder, and `Reflection` over the given store.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Mapping

from storyteller_daemon.agent.models.service_tiers import TierFallback
from storyteller_daemon.app.adapters import ModelChoice, choose_model, close_if_closable
from storyteller_daemon.clock import Clock
from storyteller_daemon.config import Config
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.reflection import DigestRefresher, Reflection
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.spending.shared import SharedLedger
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.store import Store


@contextlib.asynccontextmanager
async def one_shot_reflection(
    cfg: Config,
    store: Store,
    *,
    environ: Mapping[str, str] = os.environ,
    choice: ModelChoice | None = None,
    clock: Clock,
) -> AsyncIterator[Reflection]:
    """A `Reflection` over `store` with the configured model (or `choice`'s); a model it chose
    itself is closed afterwards.

    Without a model (no API key and no offline stand-in) it still consolidates memories; its
    digests come back ``no_model``.
    """
    owned = choice is None
    choice = choice or choose_model(cfg, environ)
    ledger = store.ledger
    budget = BudgetKeeper(cfg.budgets, cfg.model.prices, clock)
    await budget.load(ledger)
    budget.learn(await store.storytellers.list())  # the storytellers' own daily caps
    stats = RuntimeStats()
    model = None
    if choice.model is not None:
        model = metered_model(
            choice.model,
            stats,
            cfg.model.prices,
            budget=budget,
            # beside a cluster's daemons, the caps are checked against the shared ledger
            shared=SharedLedger.of(cfg.cluster, cfg.model) if cfg.cluster.enabled else None,
            clock=clock,
        )
    runs = store.runs
    try:
        refresher = DigestRefresher(
            store=store,
            runs=runs if cfg.runs.record else None,
            model=TierFallback(model, clock) if model is not None else None,
            recorder=RunRecorder(runs, ledger, clock, record=cfg.runs.record),
            clock=clock,
            cfg=cfg.reflection,
        )
        yield Reflection(refresher, store.memories, cfg.reflection, stats)
    finally:
        if owned:
            await close_if_closable(choice.model)
