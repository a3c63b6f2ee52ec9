"""The pipeline's last checks before a model is called for a trigger: the budget and idleness."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.runtime.spending.budgets import BudgetKeeper
from world_adapter.errors import WorldAdapterError
from world_adapter.protocol import WorldClient


class Admission:
    """The pipeline's last checks before a model is called for a trigger.

    A storyteller whose daily cap (or the global one) is reached is dropped at the ``budget``
    stage. With `skip_idle_heartbeats`, a heartbeat is dropped at the ``idle`` stage while no
    player is online in the storyteller's watched rooms (anywhere in the world, for a
    storyteller that watches none): a world nobody is in costs nothing.

    Args:
        budget: the caps, or None.
        world: asked who is online, or None.
        skip_idle_heartbeats: ``budgets.skip_idle_heartbeats``.
        kill_switch: whether the policy's kill switch is on; a game's direct invocation is
            then refused at the ``kill_switch`` stage (the turn would exist to act, and the
            switch stops acting).
        kill_flag: the kill switch's database twin, asked the same way.
    """

    def __init__(
        self,
        budget: BudgetKeeper | None,
        world: WorldClient | None,
        *,
        skip_idle_heartbeats: bool = True,
        kill_switch: Callable[[], bool] | None = None,
        kill_flag: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        self._budget = budget
        self._world = world
        self._skip_idle = skip_idle_heartbeats
        self._kill_switch = kill_switch
        self._kill_flag = kill_flag

    async def _killed(self) -> bool:
        if self._kill_switch is not None and self._kill_switch():
            return True
        return self._kill_flag is not None and await self._kill_flag()

    async def admit(
        self, storyteller: Storyteller, trigger: Trigger, watched: frozenset[int]
    ) -> tuple[str, str] | None:
        """None to go on, or the stage and reason to drop the trigger with."""
        if trigger.kind is TriggerKind.DIRECT and await self._killed():
            return "kill_switch", "the kill switch is on"
        if self._budget is not None and storyteller.id is not None:
            reason = self._budget.blocked(storyteller.id, storyteller.name)
            if reason is not None:
                return "budget", reason
        if self._skip_idle and self._world is not None and trigger.kind is TriggerKind.HEARTBEAT:
            try:
                players = await self._world.online_players()
            except WorldAdapterError:
                return None  # cannot tell: let the turn find out
            if not any(p.is_player and (not watched or p.location_id in watched) for p in players):
                return "idle", "no player is online in its watched rooms"
        return None
