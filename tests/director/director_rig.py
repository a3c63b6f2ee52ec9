"""A storyteller that plans, over the harbour town, a real store on a fake clock, and the daemon's
turn runner with a scripted model: turns run exactly as the daemon runs them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from storyteller_daemon.agent.models.interface import Model
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import PolicyConfig
from storyteller_daemon.domain.direction import Direction
from storyteller_daemon.domain.storytellers import CustomTool, Heartbeat, Storyteller
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.runtime.turns import AgentTurnRunner
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, Step, calls
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MAREN, WREN = 1001, 2004
QUAY, MARKET, HARBOUR_WARD = 101, 102, 1
ECHO = CustomTool(
    "EchoToRoom", "Shows a line to a room.", "EchoToRoom", False,
    (("Room", "Room to echo into."), ("Text", "What everyone sees.")),
)  # fmt: skip


def echo(room: int, words: str = "A gull screams.") -> tuple[str, dict[str, Any]]:
    return ("EchoToRoom", {"Room": room, "Text": words})


def step(tool: str, intent: str, **extra: Any) -> dict[str, Any]:
    return {"Tool": tool, "Intent": intent, "Arguments": None, "WaitFor": None, **extra}


def create_plan(goal: str, *steps: dict[str, Any], hours: int | None = None) -> Step:
    return calls(("CreateStoryPlan", {"Goal": goal, "Steps": list(steps), "ExpiresInHours": hours}))


def noop() -> Step:
    return calls(("Noop", {}))


@dataclass
class Rig:
    """One director test's world, store, clock, runner and storyteller."""

    world: SimWorld
    store: Store
    clock: FakeClock
    model: ScriptedModel
    runner: AgentTurnRunner
    teller: Storyteller
    policy: Policy | None

    def heartbeat(self) -> Trigger:
        return Trigger(TriggerKind.HEARTBEAT, self.clock.now(), heartbeat=Heartbeat.HOUR)

    async def beat(
        self, *steps: Step, trigger: Trigger | None = None, teller: Storyteller | None = None
    ) -> TurnRecord:
        """One turn of the rig's storyteller (or `teller`), a heartbeat by default, answered by
        `steps`, then Noop."""
        self.model.add(*steps, noop())
        if teller is None:
            self.teller = teller = await self.store.storytellers.get(self.teller.id or 0)
        else:
            teller = await self.store.storytellers.get(teller.id or 0)
        return await self.runner.run_turn(teller, trigger or self.heartbeat())

    async def last_run(self) -> dict[str, Any]:
        """The newest stored run record."""
        runs = RunRepository(self.store.db)
        newest = (await runs.list(kind="turn"))[0]
        return (await runs.get(newest.id)).record

    async def advance(self, hours: float) -> None:
        await self.clock.advance(hours * 3600)

    async def other(self, name: str, **direction: Any) -> Storyteller:
        """Another storyteller watching the same ward."""
        st = await self.store.storytellers.create(name)
        return await self.store.storytellers.save(
            replace(
                st,
                paused=False,
                custom_tools=(ECHO,),
                surveillance=Surveillance(zones=frozenset({HARBOUR_WARD})),
                direction=Direction(**direction),
            )
        )


@asynccontextmanager
async def director_rig(
    url: str, *, policy: PolicyConfig | None = None, model: Model | None = None, **direction: Any
) -> AsyncIterator[Rig]:
    """A rig over the database at `url` (migrated here); `direction` sets the storyteller's
    direction (plans on unless given), `policy` adds a policy point, `model` answers instead
    of the rig's scripted model."""
    clock = FakeClock(T0)
    store = Store.open(url, clock=clock)
    await store.db.upgrade()
    try:
        world = SimWorld.harbour_town()
        st = await store.storytellers.create("Harbour Watch")
        direction.setdefault("plans", True)
        st = await store.storytellers.save(
            replace(
                st,
                paused=False,
                custom_tools=(ECHO,),
                surveillance=Surveillance(zones=frozenset({HARBOUR_WARD})),
                direction=Direction(**direction),
            )
        )
        point = None
        if policy is not None:
            point = Policy(
                policy,
                clock,
                cells_of=lambda _: frozenset({QUAY, MARKET, 103}),
                claims=store.claims,
            )
        scripted = ScriptedModel()
        uses = ("digests", "plans", "claims", "queries")
        runner = turn_runner(store, world, model or scripted, *uses, clock=clock, policy=point)
        yield Rig(world, store, clock, scripted, runner, st, point)
    finally:
        await store.close()


def hours(n: float) -> timedelta:
    return timedelta(hours=n)
