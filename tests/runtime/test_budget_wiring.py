"""The composition root wires budgets, run records, alerts and start-up pruning together."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from storyteller_daemon.agent.model import Usage
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.app import ModelChoice, build_runtime
from storyteller_daemon.config import parse_config
from storyteller_daemon.storage.runs import NewRun, RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls
from world_adapter.sim import SimWorld

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def old_run(started: datetime) -> NewRun:
    return NewRun(
        kind="turn",
        turn_key=f"st1:direct:{started.isoformat()}",
        storyteller_id=1,
        storyteller_name="Harbour Watch",
        trigger_kind="direct",
        trigger_label="Direct Invocation",
        outcome="noop",
        started_at=started,
        record={},
    )


async def test_the_daemon_records_runs_enforces_budgets_and_prunes_at_start_up(
    sqlite_store: Store, sqlite_url: str
) -> None:
    st = await sqlite_store.storytellers.create("Harbour Watch")
    st = await sqlite_store.storytellers.save(replace(st, paused=False))
    runs = RunRepository(sqlite_store.db)
    await runs.add(old_run(NOW - timedelta(days=40)))
    recent = await runs.add(old_run(NOW - timedelta(days=2)))
    cfg = parse_config(
        {
            "database": {"url": sqlite_url},
            "model": {"prices": {"gpt-5": {"input": 1.25, "output": 10.0}}},
            "budgets": {"storyteller_overrides": {"harbour watch": 0.07}},
        },
        "test",
    )
    runtime = await build_runtime(
        cfg,
        environ={},
        world=SimWorld.harbour_town(),
        choice=ModelChoice(
            ScriptedModel(then=calls(("Noop", {}), usage=Usage(40_000, 0, 1000, 0))), "noop"
        ),
        store=sqlite_store,
        clock=FakeClock(NOW),
    )
    assert runtime.runner is not None and runtime.budget is not None
    assert runtime.recorder is not None and runtime.alerts is not None

    def direct(text: str) -> Trigger:
        return Trigger(TriggerKind.DIRECT, occurred_at=NOW, text=text)

    first = await runtime.runner.run_turn(st, direct("the bells"))
    second = await runtime.runner.run_turn(st, direct("the bells again"))
    assert (first.outcome, second.outcome) == ("noop", "budget_exceeded")
    # $0.06 spent of $0.07: no room for another request's worst case (at least $0.012)
    assert runtime.budget.blocked(st.id or 0, st.name) == "its daily budget of $0.07 is spent"
    assert runtime.alerts.raised["budget"] == 3  # 50 %, 80 %, then reached
    assert runtime.stats.cost_usd == runtime.budget.spent(st.id)
    recorded = [r.outcome for r in await runs.list(since=NOW - timedelta(hours=1))]
    assert recorded == ["budget_exceeded", "noop"]

    stop = asyncio.Event()
    task = asyncio.create_task(runtime.run(stop))
    try:
        await asyncio.wait_for(runtime.recorder.wait_prunes(1), 10)
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)
    remaining = {r.id for r in await runs.list()}
    assert recent in remaining and len(remaining) == 3  # only the 40-day-old run went
