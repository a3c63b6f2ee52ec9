"""Reflection over a real database, a scripted model behind the real metering and budget door,
and a fake clock: what the reflection tests share."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.config import BudgetsConfig, ModelPrice, ReflectionConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runs import RunRecorder
from storyteller_daemon.runtime.reflection import DigestRefresher, Reflection
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper
from storyteller_daemon.runtime.spending.metering import metered_model
from storyteller_daemon.runtime.stats import RuntimeStats
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.ledger import LedgerRepository
from storyteller_daemon.storage.runs import NewRun, RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
PRICES = {"gpt-5-mini": ModelPrice(input=0.25, cached_input=0.025, output=2.0)}
USAGE = Usage(1000, 0, 200, 0)
COST = (1000 * 0.25 + 200 * 2.0) / 1_000_000
"""What a digest request answered with `USAGE` costs."""


@dataclass
class Rig:
    store: Store
    clock: FakeClock
    model: ScriptedModel
    budget: BudgetKeeper
    runs: RunRepository
    ledger: LedgerRepository
    stats: RuntimeStats
    reflection: Reflection


def reflection_rig(
    db: Database,
    model: ScriptedModel,
    *,
    cfg: ReflectionConfig | None = None,
    budgets: BudgetsConfig | None = None,
    clock: FakeClock | None = None,
    with_model: bool = True,
) -> Rig:
    """Reflection over `db` whose repositories stamp times on the fake clock."""
    clock = clock or FakeClock(T0)
    cfg = cfg or ReflectionConfig()
    store = Store(db, clock)
    stats = RuntimeStats()
    budget = BudgetKeeper(budgets or BudgetsConfig(daily_usd=0), PRICES, clock)
    metered = metered_model(model, stats, PRICES, budget=budget, clock=clock)
    runs, ledger = RunRepository(db), LedgerRepository(db)
    refresher = DigestRefresher(
        store=store,
        runs=runs,
        model=metered if with_model else None,
        recorder=RunRecorder(runs, ledger, clock),
        clock=clock,
        cfg=cfg,
    )
    reflection = Reflection(refresher, store.memories, cfg, stats)
    return Rig(store, clock, model, budget, runs, ledger, stats, reflection)


async def storyteller(store: Store, name: str = "Harbour Watch") -> Storyteller:
    """An unpaused storyteller whose attention model is gpt-5-mini."""
    st = await store.storytellers.create(name)
    return await store.storytellers.save(replace(st, paused=False, attention_model="gpt-5-mini"))


def call(name: str, arguments: str, **flags: Any) -> dict[str, Any]:
    """One tool call of a turn record, answered ok unless `flags` say otherwise."""
    return {
        "round": 1,
        "call_id": f"call_{name}",
        "name": name,
        "arguments": arguments,
        "envelope": flags.pop("envelope", {"ok": True, "result": {}}),
        **flags,
    }


async def record_turn(
    runs: RunRepository, st: Storyteller, at: datetime, calls: list[dict[str, Any]]
) -> None:
    """A stored turn run with these calls."""
    await runs.add(
        NewRun(
            kind="turn",
            turn_key=f"st{st.id}:event:e:{at.timestamp():.0f}",
            storyteller_id=st.id or 0,
            storyteller_name=st.name,
            trigger_kind="room_echo",
            trigger_label="Room Echo",
            outcome="completed",
            started_at=at,
            tool_calls=len(calls),
            record={"turn": {"calls": calls}},
        )
    )


def fenced_blocks(content: str) -> tuple[dict[str, str], str]:
    """The fenced blocks of a request's input by source, and the text outside them."""
    token = re.search(r"only markers with the token (\w+) open", content, re.IGNORECASE)
    assert token is not None, content
    pattern = re.compile(
        rf"<<world-text {token[1]} from ([^>]+)>>\n(.*?)\n<<end world-text {token[1]}>>", re.S
    )
    blocks = dict(pattern.findall(content))
    return blocks, pattern.sub("", content)
