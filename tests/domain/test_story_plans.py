"""The rules of story plans: steps, conditions, and every change kept with its reason."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from storyteller_daemon.domain.story_plans import (
    PlanStatus,
    PlanStep,
    StepState,
    WaitFor,
    abandon,
    expire,
    new_plan,
    replan,
    step_done,
    step_failed,
)
from storyteller_daemon.errors import ValidationError

T0 = datetime(2026, 3, 1, tzinfo=UTC)
STEPS = (PlanStep("EchoToRoom", "Shout"), PlanStep("CreateSituation", "Note it"))


def test_steps_are_done_in_order_and_the_last_completes_the_plan() -> None:
    plan = new_plan(1, "Goal", STEPS, T0, timedelta(hours=2), run="turn-1")
    assert plan.due == STEPS[0] and plan.expires_at == T0 + timedelta(hours=2)
    plan = step_done(plan, T0, "turn-2", "ran")
    assert plan.due_index == 1 and plan.status is PlanStatus.ACTIVE
    plan = step_done(plan, T0, "turn-3")
    assert plan.status is PlanStatus.COMPLETED and plan.due is None
    assert [e.action for e in plan.history] == ["created", "step_done", "step_done", "completed"]
    with pytest.raises(ValidationError, match="completed; no step is due"):
        step_done(plan, T0)


def test_a_failed_step_waits_for_a_replan_with_a_reason() -> None:
    plan = step_failed(new_plan(1, "Goal", STEPS, T0, timedelta(hours=2)), T0, "no such room")
    assert plan.status is PlanStatus.NEEDS_REPLAN and plan.steps[0].state is StepState.FAILED
    with pytest.raises(ValidationError, match="no step is due"):
        step_done(plan, T0)
    with pytest.raises(ValidationError, match="Give a reason"):
        replan(plan, (PlanStep("Noop", "Wait"),), T0, "  ")
    again = replan(plan, (PlanStep("Noop", "Wait"),), T0, "The quay will do", goal="New goal")
    assert again.status is PlanStatus.ACTIVE and again.goal == "New goal"
    assert [s.state for s in again.steps] == [StepState.FAILED, StepState.PENDING]
    assert (again.history[-1].action, again.history[-1].reason) == ("replanned", "The quay will do")


def test_plans_end_by_expiry_or_abandonment() -> None:
    plan = new_plan(1, "Goal", STEPS, T0, timedelta(hours=1))
    assert not plan.expired_at(T0) and plan.expired_at(T0 + timedelta(hours=1))
    assert expire(plan, T0).status is PlanStatus.EXPIRED
    gone = abandon(plan, T0, "The smugglers left town")
    assert gone.status is PlanStatus.ABANDONED and not gone.status.open
    with pytest.raises(ValidationError, match="already abandoned"):
        abandon(gone, T0, "again")
    with pytest.raises(ValidationError, match="between a minute and 7 days"):
        new_plan(1, "Goal", STEPS, T0, timedelta(days=8))


def test_steps_and_conditions_are_checked() -> None:
    with pytest.raises(ValidationError, match="JSON object"):
        PlanStep("EchoToRoom", "Shout", arguments="[1, 2]")
    assert PlanStep("EchoToRoom", "Shout", '{"Room": 101}').parsed_arguments() == {"Room": 101}
    with pytest.raises(ValidationError, match="must name a kind"):
        WaitFor()
    with pytest.raises(ValidationError, match="not one of"):
        WaitFor(kind="earthquake")
    wait = WaitFor(kind="speech", room_id=101, words="Ledger")
    assert wait.met_by("speech", 101, frozenset({7}), "where is the LEDGER?")
    assert not wait.met_by("speech", 102, frozenset(), "the ledger")
    assert not wait.met_by("room_echo", 101, frozenset(), "the ledger")
    assert wait.describe() == 'speech in room #101 mentioning "Ledger"'
