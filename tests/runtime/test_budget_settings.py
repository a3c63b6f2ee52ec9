"""A storyteller's own daily budget: it wins over ``[budgets]``, and the keeper learns changes."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_budgets import CRIER, T0, WATCH, keeper, request, run_of

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.config import BudgetsConfig
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.errors import BudgetExceeded, ValidationError
from storyteller_daemon.runs import attributed
from storyteller_daemon.runtime.spending.budgets import daily_cap
from storyteller_daemon.testing.clock import FakeClock


def test_the_stored_setting_wins_over_the_configuration() -> None:
    cfg = BudgetsConfig(storyteller_daily_usd=5.0, storyteller_overrides={"crier": 2.0})
    assert daily_cap(cfg, WATCH) == 5.0 and daily_cap(cfg, CRIER) == 2.0
    assert daily_cap(cfg, replace(WATCH, daily_budget_usd=0.5)) == 0.5
    assert daily_cap(cfg, replace(CRIER, daily_budget_usd=0.0)) == 0.0  # its own: no cap


@pytest.mark.parametrize("usd", [-0.01, float("inf"), float("nan")])
def test_a_budget_below_zero_or_not_finite_is_refused(usd: float) -> None:
    with pytest.raises(ValidationError, match="A daily budget must be 0 or more USD"):
        Storyteller(name="Harbour Watch", daily_budget_usd=usd)


def test_the_keeper_refuses_once_the_stored_cap_is_reached_though_the_configured_one_is_not() -> (
    None
):
    alerts: list[tuple[str, str]] = []
    budget = keeper(FakeClock(T0), alerts, daily_usd=0, storyteller_daily_usd=10.0)
    budget.learn([replace(WATCH, daily_budget_usd=0.05), CRIER])
    assert budget.cap_for(1, "Harbour Watch") == 0.05 and budget.cap_for(2, "Crier") == 10.0
    for storyteller in (WATCH, CRIER):
        with attributed(run_of(storyteller)):
            budget.settle(budget.reserve(request(max_output=1)), Usage(), 0.049)
    with attributed(run_of(WATCH)), pytest.raises(BudgetExceeded, match=r"daily budget of \$0.05"):
        budget.reserve(request())
    assert budget.blocked(1, "Harbour Watch") == "its daily budget of $0.05 is spent"
    assert budget.blocked(2, "Crier") is None  # $0.049 of the configured $10
    with attributed(run_of(CRIER)):
        budget.reserve(request())
    assert alerts[-1][0] == "error" and "Harbour Watch (#1) reached" in alerts[-1][1]


def test_learning_a_changed_cap_lifts_or_reaches_it_at_once() -> None:
    alerts: list[tuple[str, str]] = []
    budget = keeper(FakeClock(T0), alerts, daily_usd=0, storyteller_daily_usd=0.05)
    budget.learn([WATCH])
    with attributed(run_of(WATCH)):
        budget.settle(budget.reserve(request(max_output=1)), Usage(), 0.06)
    assert budget.blocked(1, "Harbour Watch") is not None  # the configured $0.05 is spent

    budget.learn([replace(WATCH, daily_budget_usd=1.0)])  # raised: no longer reached
    assert budget.blocked(1, "Harbour Watch") is None
    with attributed(run_of(WATCH)):
        budget.release(budget.reserve(request()))

    alerts.clear()
    budget.learn([replace(WATCH, daily_budget_usd=1.0)])  # unchanged: nothing happens
    assert alerts == []
    budget.learn([replace(WATCH, daily_budget_usd=0.02)])  # lowered below today's spend
    assert budget.blocked(1, "Harbour Watch") == "its daily budget of $0.02 is spent"
    assert [level for level, _ in alerts] == ["error"]

    budget.learn([WATCH])  # back to the configuration's $0.05: still spent
    assert budget.blocked(1, "Harbour Watch") == "its daily budget of $0.05 is spent"
    budget.learn([replace(WATCH, daily_budget_usd=0.0)])  # its own: no cap at all
    assert budget.blocked(1, "Harbour Watch") is None
