"""Story plans: what a storyteller means to do next, step by step, and what became of it.

A plan has a goal, ordered steps and an expiry. Each step names the tool it intends to use, what
it means to achieve, optionally the arguments it has in mind (a JSON object as text) and a
condition to wait for (`WaitFor`: an event of some kind, in some room, about some character,
with some words). The plan's *due* step is its first pending one; a step with a condition is due
only on a turn whose events meet it.

Plans are called *story* plans to keep them apart from the characters' own plans (FutureMUD's
``RecentCharacterPlans`` and ``CharacterPlans``, in `agent.tools.plans`), which are what players
say their characters intend.

The transitions are pure functions returning a new `StoryPlan` with a `PlanEvent` appended to
its history, so every change (above all every replan, with its reason) is on record:

* `step_done`: the due step is done; after the last one the plan is completed;
* `step_failed`: the due step failed; the plan needs a replan before anything else;
* `replan`: new steps replace the pending ones (done and failed ones stay, for the record);
* `expire`, `abandon`: the plan ends.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from storyteller_daemon.domain import argument_limits
from storyteller_daemon.domain.argument_limits import MalformedJson, json_object
from storyteller_daemon.errors import ValidationError

MAX_STEPS = 10
MAX_ACTIVE_PLANS = 5
MAX_GOAL_CHARS = argument_limits.GOAL_CHARS
MAX_INTENT_CHARS = argument_limits.INTENT_CHARS
MAX_REASON_CHARS = argument_limits.PLAN_REASON_CHARS
MAX_ARGUMENT_CHARS = argument_limits.STEP_ARGUMENTS_CHARS
MAX_EXPIRY = timedelta(days=7)
EVENT_KINDS = ("room_echo", "speech", "crime", "state")


class PlanStatus(StrEnum):
    """Where a plan stands."""

    ACTIVE = "active"
    NEEDS_REPLAN = "needs_replan"
    COMPLETED = "completed"
    EXPIRED = "expired"
    ABANDONED = "abandoned"

    @property
    def open(self) -> bool:
        """Whether the plan still steers the storyteller (shown in prompts)."""
        return self in (PlanStatus.ACTIVE, PlanStatus.NEEDS_REPLAN)


class StepState(StrEnum):
    """Where a step stands."""

    PENDING = "pending"
    DONE = "done"
    FAILED = "failed"


@dataclass(frozen=True)
class WaitFor:
    """A condition a step waits for: an event matching every field given."""

    kind: str | None = None
    room_id: int | None = None
    character_id: int | None = None
    words: str | None = None

    def __post_init__(self) -> None:
        if self.kind is not None and self.kind not in EVENT_KINDS:
            raise ValidationError(
                f"WaitFor kind '{self.kind}' is not one of {', '.join(EVENT_KINDS)}."
            )
        if self.words is not None and not self.words.strip():
            raise ValidationError("WaitFor words must not be blank.")
        if not (self.kind or self.room_id or self.character_id or self.words):
            raise ValidationError("A WaitFor condition must name a kind, room, character or words.")

    def met_by(self, kind: str, room_id: int | None, characters: frozenset[int], text: str) -> bool:
        """Whether an event with these features meets the condition."""
        return (
            (self.kind is None or self.kind == kind)
            and (self.room_id is None or self.room_id == room_id)
            and (self.character_id is None or self.character_id in characters)
            and (self.words is None or self.words.strip().casefold() in text.casefold())
        )

    def describe(self) -> str:
        """The condition in words."""
        parts = [self.kind.replace("_", " ") if self.kind else "an event"]
        if self.room_id is not None:
            parts.append(f"in room #{self.room_id}")
        if self.character_id is not None:
            parts.append(f"involving character #{self.character_id}")
        if self.words is not None:
            parts.append(f"mentioning {json.dumps(self.words, ensure_ascii=False)}")
        return " ".join(parts)


@dataclass(frozen=True)
class PlanStep:
    """One step of a plan."""

    tool: str
    intent: str
    arguments: str | None = None
    """The arguments it has in mind, as a JSON object's text (None: decided when due)."""
    wait_for: WaitFor | None = None
    state: StepState = StepState.PENDING
    note: str = ""
    """How it went (the tool's error for a failed step)."""

    def __post_init__(self) -> None:
        if not self.tool.strip():
            raise ValidationError("A plan step must name the tool it intends to use.")
        if not self.intent.strip():
            raise ValidationError("A plan step must say what it intends.")
        if len(self.intent) > MAX_INTENT_CHARS:
            raise ValidationError(f"A step's intent is over {MAX_INTENT_CHARS} characters.")
        if self.arguments is not None:
            if len(self.arguments) > MAX_ARGUMENT_CHARS:
                raise ValidationError(f"A step's arguments are over {MAX_ARGUMENT_CHARS} chars.")
            try:
                json_object(self.arguments)
            except MalformedJson:
                raise ValidationError(
                    "A step's Arguments must be a JSON object's text, or null."
                ) from None

    def parsed_arguments(self) -> dict[str, Any] | None:
        """The arguments as an object."""
        return None if self.arguments is None else json_object(self.arguments)


@dataclass(frozen=True)
class PlanEvent:
    """One change of a plan, for the record."""

    at: datetime
    action: str
    """``created``, ``step_done``, ``step_failed``, ``replanned``, ``completed``, ``expired``
    or ``abandoned``."""
    step: int | None = None
    """The step concerned, counted from 1."""
    reason: str = ""
    run: str = ""
    """The key of the turn that made the change ("" for the daemon or an admin)."""


@dataclass(frozen=True)
class StoryPlan:
    """A storyteller's plan."""

    storyteller_id: int
    goal: str
    steps: tuple[PlanStep, ...]
    expires_at: datetime
    id: int = 0
    status: PlanStatus = PlanStatus.ACTIVE
    created_on: datetime | None = None
    updated_on: datetime | None = None
    history: tuple[PlanEvent, ...] = ()
    from_player: bool = False
    """Whether players' text had reached the turns that wrote it."""

    def __post_init__(self) -> None:
        if not self.goal.strip():
            raise ValidationError("A plan needs a goal.")
        if len(self.goal) > MAX_GOAL_CHARS:
            raise ValidationError(f"A plan's goal is over {MAX_GOAL_CHARS} characters.")
        if not self.steps:
            raise ValidationError("A plan needs at least one step.")
        if len(self.steps) > MAX_STEPS:
            raise ValidationError(f"A plan may have at most {MAX_STEPS} steps.")

    @property
    def due_index(self) -> int | None:
        """The index of the first pending step (None when none is left)."""
        return next((i for i, s in enumerate(self.steps) if s.state is StepState.PENDING), None)

    @property
    def due(self) -> PlanStep | None:
        """The first pending step, if any."""
        index = self.due_index
        return None if index is None else self.steps[index]

    def expired_at(self, now: datetime) -> bool:
        """Whether an open plan has run past its expiry at `now`."""
        return self.status.open and now >= self.expires_at


def _reason(reason: str) -> str:
    text = " ".join(reason.split())
    if not text:
        raise ValidationError("Give a reason: it is kept with the plan's history.")
    return text[:MAX_REASON_CHARS]


def _noted(plan: StoryPlan, event: PlanEvent, **changes: Any) -> StoryPlan:
    return replace(plan, history=(*plan.history, event), updated_on=event.at, **changes)


def _due_or_refuse(plan: StoryPlan) -> int:
    if plan.status is not PlanStatus.ACTIVE:
        raise ValidationError(f"Plan {plan.id} is {plan.status.value}; no step is due.")
    index = plan.due_index
    if index is None:
        raise ValidationError(f"Plan {plan.id} has no pending step.")
    return index


def step_done(plan: StoryPlan, at: datetime, run: str = "", note: str = "") -> StoryPlan:
    """The due step done; the plan completed when it was the last."""
    index = _due_or_refuse(plan)
    steps = list(plan.steps)
    steps[index] = replace(steps[index], state=StepState.DONE, note=note[:MAX_REASON_CHARS])
    done = _noted(plan, PlanEvent(at, "step_done", index + 1, note, run), steps=tuple(steps))
    if done.due_index is None:
        return _noted(done, PlanEvent(at, "completed", None, "", run), status=PlanStatus.COMPLETED)
    return done


def step_failed(plan: StoryPlan, at: datetime, reason: str, run: str = "") -> StoryPlan:
    """The due step failed: the plan waits for a replan."""
    index = _due_or_refuse(plan)
    why = _reason(reason)
    steps = list(plan.steps)
    steps[index] = replace(steps[index], state=StepState.FAILED, note=why)
    return _noted(
        plan,
        PlanEvent(at, "step_failed", index + 1, why, run),
        steps=tuple(steps),
        status=PlanStatus.NEEDS_REPLAN,
    )


def replan(
    plan: StoryPlan,
    steps: tuple[PlanStep, ...],
    at: datetime,
    reason: str,
    run: str = "",
    *,
    goal: str | None = None,
    expires_at: datetime | None = None,
) -> StoryPlan:
    """New pending steps in place of the old pending ones, with the reason on record."""
    if not plan.status.open:
        raise ValidationError(f"Plan {plan.id} is {plan.status.value} and cannot be replanned.")
    if not steps:
        raise ValidationError("A replan needs at least one new step.")
    kept = tuple(s for s in plan.steps if s.state is not StepState.PENDING)
    fresh = tuple(replace(s, state=StepState.PENDING, note="") for s in steps)
    return _noted(
        replace(plan, goal=goal or plan.goal, expires_at=expires_at or plan.expires_at),
        PlanEvent(at, "replanned", len(kept) + 1, _reason(reason), run),
        steps=kept + fresh,
        status=PlanStatus.ACTIVE,
    )


def expire(plan: StoryPlan, at: datetime) -> StoryPlan:
    """The plan ran out of time."""
    return _noted(
        plan,
        PlanEvent(at, "expired", plan.due_index + 1 if plan.due_index is not None else None),
        status=PlanStatus.EXPIRED,
    )


def abandon(plan: StoryPlan, at: datetime, reason: str, run: str = "") -> StoryPlan:
    """The storyteller (or an admin) gave the plan up."""
    if not plan.status.open:
        raise ValidationError(f"Plan {plan.id} is already {plan.status.value}.")
    return _noted(
        plan, PlanEvent(at, "abandoned", None, _reason(reason), run), status=PlanStatus.ABANDONED
    )


def new_plan(
    storyteller_id: int,
    goal: str,
    steps: tuple[PlanStep, ...],
    at: datetime,
    expires_in: timedelta,
    run: str = "",
    from_player: bool = False,
) -> StoryPlan:
    """A new active plan, its creation on record."""
    if not timedelta(minutes=1) <= expires_in <= MAX_EXPIRY:
        raise ValidationError("A plan must expire between a minute and 7 days from now.")
    return StoryPlan(
        storyteller_id=storyteller_id,
        goal=" ".join(goal.split()),
        steps=steps,
        expires_at=at + expires_in,
        created_on=at,
        updated_on=at,
        history=(PlanEvent(at, "created", None, "", run),),
        from_player=from_player,
    )
