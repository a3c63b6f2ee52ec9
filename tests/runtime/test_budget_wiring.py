"""The composition root wires budgets, run records, alerts and start-up pruning together."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.app import ModelChoice, build_runtime
from storyteller_daemon.config import parse_config
from storyteller_daemon.runtime.dashboard.views import Controls, DashboardData
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


async def test_a_stored_budget_wins_over_the_configuration_and_a_reload_applies_it(
    sqlite_store: Store, sqlite_url: str
) -> None:
    """The configuration caps nobody; the storyteller's own $0.13 is learnt at the next
    settings reload (no restart), refuses the second turn, and 'default' lifts it again."""
    st = await sqlite_store.storytellers.create("Harbour Watch")
    st = await sqlite_store.storytellers.save(replace(st, paused=False))
    assert st.id is not None
    cfg = parse_config(
        {
            "database": {"url": sqlite_url},
            "model": {"prices": {"gpt-5": {"input": 1.25, "output": 10.0}}},
            "budgets": {"daily_usd": 0, "storyteller_daily_usd": 0},
        },
        "test",
    )
    clock = FakeClock(NOW)
    runtime = await build_runtime(
        cfg,
        environ={},
        world=SimWorld.harbour_town(),
        choice=ModelChoice(
            ScriptedModel(then=calls(("Noop", {}), usage=Usage(40_000, 0, 1000, 0))), "noop"
        ),
        store=sqlite_store,
        clock=clock,
    )
    assert runtime.runner is not None and runtime.budget is not None
    dashboard = DashboardData(sqlite_store, cfg.budgets, clock, Controls(cfg.policy, None))

    async def turn(text: str) -> str:
        assert runtime.runner is not None
        current = await sqlite_store.storytellers.get(st.id or 0)
        trigger = Trigger(TriggerKind.DIRECT, occurred_at=NOW, text=text)
        return (await runtime.runner.run_turn(current, trigger)).outcome

    async def cap_shown() -> float:
        [row] = (await dashboard.overview())["storytellers"]
        cap: float = row["spend"]["cap_usd"]
        return cap

    assert await runtime.daemon.reload(force=True)
    assert await turn("the bells") == "noop"  # $0.06: no cap in the configuration
    assert await turn("the bells again") == "noop"  # $0.12: still none
    assert runtime.budget.cap_for(st.id, st.name) == 0.0 and await cap_shown() == 0.0

    await sqlite_store.storytellers.save(
        replace(await sqlite_store.storytellers.get(st.id), daily_budget_usd=0.13)
    )
    assert await runtime.daemon.reload()  # the revision changed: the keeper learns the cap
    assert runtime.budget.cap_for(st.id, st.name) == 0.13 and await cap_shown() == 0.13
    assert await turn("a third time") == "budget_exceeded"  # $0.12 + at least $0.012 > $0.13
    assert runtime.budget.blocked(st.id, st.name) == "its daily budget of $0.13 is spent"

    await sqlite_store.storytellers.save(
        replace(await sqlite_store.storytellers.get(st.id), daily_budget_usd=None)
    )
    assert await runtime.daemon.reload()
    assert runtime.budget.blocked(st.id, st.name) is None  # back to the configuration: no cap
    assert await cap_shown() == 0.0
    assert await turn("and again") == "noop"
