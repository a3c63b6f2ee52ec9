"""Kept eval results: the latest evaluation per storyteller, the trend, and the bound kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import storyteller_daemon.storage.eval_results as kept
from storyteller_daemon.clock import SystemClock
from storyteller_daemon.domain.eval_results import EvalResult, EvalRound
from storyteller_daemon.storage.store import Store

T0 = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
WATCH = "Harbour Ward Watch"


def result(scenario: str, at: datetime, *, passed: bool = True, skipped: bool = False,
           storyteller: str = WATCH, model: str = "stand-in") -> EvalResult:  # fmt: skip
    return EvalResult(
        storyteller=storyteller,
        pack="harbour-ward",
        scenario=scenario,
        model=model,
        evaluated_at=at,
        runs=3,
        threshold=0.8,
        pass_rate=1.0 if passed else 1 / 3,
        passed=passed and not skipped,
        skipped=skipped,
        tokens=1500.0,
        usd=0.002,
        seconds=2.5,
    )


@pytest.fixture
async def store(db_url: str) -> Store:
    store = Store.open(db_url, clock=SystemClock())
    await store.db.upgrade()
    return store


async def test_latest_is_each_storytellers_newest_evaluation(store: Store) -> None:
    try:
        repo = store.eval_results
        await repo.add([result("thief", T0, passed=False), result("quiet", T0)])
        later = T0 + timedelta(days=1)
        await repo.add([result("thief", later), result("quiet", later, passed=False),
                        result("judgement", later, skipped=True)])  # fmt: skip
        await repo.add([result("steward", T0, storyteller="Narrative Steward")])
        latest = await repo.latest()
        assert sorted(latest) == [WATCH, "Narrative Steward"]
        watch = latest[WATCH]
        assert [(r.scenario, r.passed, r.skipped) for r in watch] == [
            ("judgement", False, True),
            ("quiet", False, False),
            ("thief", True, False),
        ]
        assert watch[0].evaluated_at == later and watch[2].usd == 0.002
        assert await repo.rounds(WATCH) == [
            EvalRound(WATCH, T0, "stand-in", passed=1, failed=1, skipped=0),
            EvalRound(WATCH, later, "stand-in", passed=1, failed=1, skipped=1),
        ]
        assert (await repo.rounds(WATCH))[1].share == 0.5
        assert await repo.rounds("Nobody") == []
    finally:
        await store.close()


async def test_only_the_newest_evaluations_of_a_scenario_are_kept(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kept, "KEEP_PER_SCENARIO", 2)
    try:
        for day in range(4):
            at = T0 + timedelta(days=day)
            await store.eval_results.add([result("thief", at), result("quiet", at)])
        rounds = await store.eval_results.rounds(WATCH)
        assert [r.evaluated_at for r in rounds] == [T0 + timedelta(days=d) for d in (2, 3)]
        assert all(r.passed == 2 for r in rounds)
    finally:
        await store.close()
