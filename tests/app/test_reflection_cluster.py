"""A digest refreshed from the shell beside a cluster's daemons checks each request against the
shared ledger as the daemons do: a request another daemon has in flight counts, so the daily
cap is not crossed because the shell read today's spend a moment before."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from storyteller_daemon.agent.models.interface import ModelRequest, ModelResponse, Usage
from storyteller_daemon.app import one_shot_reflection
from storyteller_daemon.app.adapters import ModelChoice
from storyteller_daemon.config import parse_config
from storyteller_daemon.storage.ledger import LedgerEntry
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, text

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


async def _digest(_request: ModelRequest) -> ModelResponse:
    return text("Maren keeps the harbour ledger.", Usage(input_tokens=100, output_tokens=20))


@pytest.mark.postgres
@pytest.mark.parametrize("clustered", [True, False])
async def test_a_digest_from_the_shell_counts_the_requests_a_daemon_has_in_flight(
    pg_url: str, clustered: bool
) -> None:
    clock = FakeClock(T0)
    store = Store.open(pg_url, clock=clock)
    try:
        await store.db.upgrade()
        st = await store.storytellers.save(
            replace(await store.storytellers.create("Harbour Watch"), paused=False)
        )
        assert st.id is not None
        await store.memories.create(st.id, 1001, "Ledger", "Maren keeps the ledger.")
        cfg = parse_config(
            {
                "cluster": {"enabled": clustered, "instance": "shell"},
                "budgets": {"daily_usd": 1.0},
                "reflection": {"model": "gpt-5"},
                "model": {
                    "prices": {"gpt-5": {"input": 1.25, "cached_input": 0.125, "output": 10}}
                },
            },
            "st.toml",
        )
        model = ScriptedModel(then=_digest)
        choice = ModelChoice(model, "scripted")
        async with one_shot_reflection(cfg, store, choice=choice, clock=clock) as reflection:
            # a daemon of the cluster sends a request that may cost the day's whole cap
            await store.ledger.add(
                [LedgerEntry(clock.now(), "turn", "gpt-5", cost_usd=1.0, status="sent")]
            )
            task = asyncio.create_task(reflection.reflect(st))
            while not task.done():
                await clock.advance(30)
                await asyncio.wait([task], timeout=0.2)
            report = task.result()
    finally:
        await store.close()
    if clustered:  # it waited for room; the daemon's request never settled, so it was spent
        assert report.digest.outcome == "budget_exceeded" and model.requests == []
    else:  # alone, the shell knows only the spend it read
        assert report.digest.outcome == "refreshed" and len(model.requests) == 1
