"""What a storyteller's open story plans wait for, held in memory for the attention stage.

A plan step that waits for an event (`domain.story_plans.WaitFor`) is acted on in a turn whose
events meet it; an event the attention model ignored never gets a turn, so the plan would
never wake. The attention stage therefore settles an event that meets the condition of a due
step as interesting, without a model call (recorded with rule ``plan:<id>``).

The pipeline must not read the database for every event, so each lane keeps the waits of its
storyteller's open plans' due steps here. They are loaded before the lane's first attention pass
and reloaded before the first pass after each turn of the storyteller or a settings reload
(`stale`): plans change in turns, or by expiry or an admin. A plan that expired, or that an admin
abandoned, meanwhile may keep its wait until the next reload; the turn such an event gets finds
nothing due, and the reload after it drops the wait.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from storyteller_daemon.agent.director import event_features
from storyteller_daemon.agent.trigger import Trigger
from storyteller_daemon.domain.story_plans import PlanStatus, StoryPlan, WaitFor


@dataclass(frozen=True)
class PlanWait:
    """The condition the due step of one open plan waits for."""

    plan_id: int
    wait_for: WaitFor


class PlanWaits:
    """One storyteller's plan waits, and whether they must be reloaded before they are used."""

    def __init__(self) -> None:
        self.waits: tuple[PlanWait, ...] = ()
        self.stale = True

    def load(self, plans: Iterable[StoryPlan], now: datetime) -> None:
        """Take the waits of the due steps of the active, unexpired plans among `plans`."""
        waits = []
        for plan in plans:
            step = plan.due if plan.status is PlanStatus.ACTIVE else None
            if step is not None and step.wait_for is not None and not plan.expired_at(now):
                waits.append(PlanWait(plan.id, step.wait_for))
        self.waits = tuple(waits)
        self.stale = False

    def mark_stale(self) -> None:
        """Reload the waits before they are next used (plans may have changed)."""
        self.stale = True

    def clear(self) -> None:
        """Forget the waits (the storyteller does not plan); reload them when it does again."""
        self.waits = ()
        self.stale = True

    def waiting(self, trigger: Trigger) -> int | None:
        """The id of the oldest plan whose due step the trigger's event meets, or None."""
        features = event_features(trigger)
        for wait in self.waits:
            if any(wait.wait_for.met_by(*f) for f in features):
                return wait.plan_id
        return None
