"""Storytellers' story plans: stored, changed by the rules of `domain.story_plans`, expired.

Every change goes through one of the domain's transitions inside one transaction, stamped with
this repository's clock, so the plan's history (creation, each step done or failed, each replan
with its reason, the end) is the plan's own record. Goal, steps and history are JSON columns:
a plan is always read and written whole.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from storyteller_daemon.clock import Clock
from storyteller_daemon.domain.story_plans import (
    MAX_ACTIVE_PLANS,
    PlanEvent,
    PlanStatus,
    PlanStep,
    StepState,
    StoryPlan,
    WaitFor,
    abandon,
    expire,
    new_plan,
    replan,
    step_done,
    step_failed,
)
from storyteller_daemon.errors import NotFoundError, ValidationError
from storyteller_daemon.storage.database import Database
from storyteller_daemon.storage.models.story import StoryPlanRow
from storyteller_daemon.storage.storytellers import as_utc

OPEN = (PlanStatus.ACTIVE.value, PlanStatus.NEEDS_REPLAN.value)


def _steps_json(steps: tuple[PlanStep, ...]) -> str:
    return json.dumps(
        [
            {
                "tool": s.tool,
                "intent": s.intent,
                "arguments": s.arguments,
                "wait_for": asdict(s.wait_for) if s.wait_for is not None else None,
                "state": s.state.value,
                "note": s.note,
            }
            for s in steps
        ],
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _steps(text: str) -> tuple[PlanStep, ...]:
    steps = []
    for entry in json.loads(text):
        wait = entry.get("wait_for")
        steps.append(
            PlanStep(
                tool=entry["tool"],
                intent=entry["intent"],
                arguments=entry.get("arguments"),
                wait_for=WaitFor(**wait) if wait else None,
                state=StepState(entry.get("state", "pending")),
                note=entry.get("note", ""),
            )
        )
    return tuple(steps)


def _history_json(history: tuple[PlanEvent, ...]) -> str:
    return json.dumps(
        [
            {
                "at": e.at.isoformat(),
                "action": e.action,
                "step": e.step,
                "reason": e.reason,
                "run": e.run,
            }
            for e in history
        ],  # fmt: skip
        ensure_ascii=False,
        separators=(",", ":"),
    )


def _history(text: str) -> tuple[PlanEvent, ...]:
    return tuple(
        PlanEvent(
            at=as_utc(datetime.fromisoformat(e["at"])),
            action=e["action"],
            step=e.get("step"),
            reason=e.get("reason", ""),
            run=e.get("run", ""),
        )
        for e in json.loads(text)
    )


def plan_to_domain(row: StoryPlanRow) -> StoryPlan:
    """Row → `StoryPlan`."""
    return StoryPlan(
        id=row.id,
        storyteller_id=row.storyteller_id,
        goal=row.goal,
        steps=_steps(row.steps),
        expires_at=as_utc(row.expires_at),
        status=PlanStatus(row.status),
        created_on=as_utc(row.created_on),
        updated_on=as_utc(row.updated_on),
        history=_history(row.history),
        from_player=row.from_player,
    )


def _write(row: StoryPlanRow, plan: StoryPlan) -> None:
    row.goal, row.status = plan.goal, plan.status.value
    row.steps, row.history = _steps_json(plan.steps), _history_json(plan.history)
    row.expires_at, row.from_player = plan.expires_at, plan.from_player
    row.updated_on = plan.updated_on or plan.expires_at


class StoryPlanRepository:
    """Create, change, expire and list story plans."""

    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    async def _row(self, session: AsyncSession, storyteller_id: int, plan_id: int) -> StoryPlanRow:
        row = await session.get(StoryPlanRow, plan_id)
        if row is None or row.storyteller_id != storyteller_id:
            raise NotFoundError(f"No story plan with id {plan_id} exists for this storyteller.")
        return row

    async def _change(
        self, storyteller_id: int, plan_id: int, change: Callable[[StoryPlan], StoryPlan]
    ) -> StoryPlan:
        async with self._db.session() as session:
            row = await self._row(session, storyteller_id, plan_id)
            plan = plan_to_domain(row)
            now = self._clock.now()
            if plan.expired_at(now):
                _write(row, expire(plan, now))
                raise ValidationError(f"Story plan {plan_id} has expired; make a new plan.")
            changed = change(plan)
            _write(row, changed)
            return changed

    async def create(
        self,
        storyteller_id: int,
        goal: str,
        steps: tuple[PlanStep, ...],
        *,
        expires_in: timedelta,
        run: str = "",
        from_player: bool = False,
    ) -> StoryPlan:
        """A new active plan (at most `MAX_ACTIVE_PLANS` open at once)."""
        now = self._clock.now()
        plan = new_plan(storyteller_id, goal, steps, now, expires_in, run, from_player)
        async with self._db.session() as session:
            open_count = (
                await session.execute(
                    select(func.count(StoryPlanRow.id)).where(
                        StoryPlanRow.storyteller_id == storyteller_id,
                        StoryPlanRow.status.in_(OPEN),
                        StoryPlanRow.expires_at > now,
                    )
                )
            ).scalar_one()
            if open_count >= MAX_ACTIVE_PLANS:
                raise ValidationError(
                    f"This storyteller already has {open_count} open plans (at most "
                    f"{MAX_ACTIVE_PLANS}); finish, replan or abandon one first."
                )
            row = StoryPlanRow(storyteller_id=storyteller_id, created_on=now)
            _write(row, plan)
            session.add(row)
            await session.flush()
            return plan_to_domain(row)

    async def get(self, storyteller_id: int, plan_id: int) -> StoryPlan:
        """One of this storyteller's plans, whatever its status."""
        async with self._db.session() as session:
            return plan_to_domain(await self._row(session, storyteller_id, plan_id))

    async def step_done(
        self, storyteller_id: int, plan_id: int, *, note: str = "", run: str = ""
    ) -> StoryPlan:
        """Mark the due step done (completing the plan after its last step)."""
        now = self._clock.now()
        return await self._change(storyteller_id, plan_id, lambda p: step_done(p, now, run, note))

    async def step_failed(
        self, storyteller_id: int, plan_id: int, *, reason: str, run: str = ""
    ) -> StoryPlan:
        """Mark the due step failed: the plan then needs a replan."""
        now = self._clock.now()
        return await self._change(
            storyteller_id, plan_id, lambda p: step_failed(p, now, reason, run)
        )

    async def replan(
        self,
        storyteller_id: int,
        plan_id: int,
        steps: tuple[PlanStep, ...],
        *,
        reason: str,
        run: str = "",
        goal: str | None = None,
        expires_in: timedelta | None = None,
    ) -> StoryPlan:
        """Replace the pending steps (and optionally goal and expiry), the reason on record."""
        now = self._clock.now()
        until = now + expires_in if expires_in is not None else None
        return await self._change(
            storyteller_id,
            plan_id,
            lambda p: replan(p, steps, now, reason, run, goal=goal, expires_at=until),
        )

    async def abandon(
        self, storyteller_id: int, plan_id: int, *, reason: str, run: str = ""
    ) -> StoryPlan:
        """Give a plan up, the reason on record."""
        now = self._clock.now()
        return await self._change(storyteller_id, plan_id, lambda p: abandon(p, now, reason, run))

    async def open_plans(self, storyteller_id: int) -> builtins.list[StoryPlan]:
        """The storyteller's open plans, oldest first; overdue ones are marked expired first."""
        now = self._clock.now()
        async with self._db.session() as session:
            rows = (
                await session.execute(
                    select(StoryPlanRow)
                    .where(
                        StoryPlanRow.storyteller_id == storyteller_id,
                        StoryPlanRow.status.in_(OPEN),
                    )
                    .order_by(StoryPlanRow.id)
                )
            ).scalars()
            plans = []
            for row in rows:
                plan = plan_to_domain(row)
                if plan.expired_at(now):
                    _write(row, expire(plan, now))
                else:
                    plans.append(plan)
            return plans

    async def list(
        self, storyteller_id: int | None = None, *, include_closed: bool = True
    ) -> builtins.list[StoryPlan]:
        """Plans (of one storyteller, or all), newest first, as stored (no expiry applied)."""
        query: Any = select(StoryPlanRow).order_by(StoryPlanRow.id.desc())
        if storyteller_id is not None:
            query = query.where(StoryPlanRow.storyteller_id == storyteller_id)
        if not include_closed:
            query = query.where(StoryPlanRow.status.in_(OPEN))
        async with self._db.session() as session:
            return [plan_to_domain(r) for r in (await session.execute(query)).scalars()]

    async def find(self, plan_id: int) -> StoryPlan:
        """Any storyteller's plan by id (the admin's view)."""
        async with self._db.session() as session:
            row = await session.get(StoryPlanRow, plan_id)
            if row is None:
                raise NotFoundError(f"No story plan with id {plan_id} exists.")
            return plan_to_domain(row)
