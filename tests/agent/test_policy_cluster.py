"""The policy point of a daemon sharing its database: the kill switch's database twin stops
prog calls, and a daemon that lost a storyteller's lease sends none of its prog calls."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest
from agent_doubles import ScriptedModel, calls

from storyteller_daemon.agent.loop import ToolLoop
from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import ClusterConfig, LimitsConfig, PolicyConfig
from storyteller_daemon.domain.cluster import KILL_SWITCH_FLAG
from storyteller_daemon.domain.storytellers import CustomTool, Heartbeat, Storyteller
from storyteller_daemon.runtime.cluster import LeaseKeeper
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from world_adapter.sim import SimWorld

QUAY = 101
ECHO = CustomTool(
    "EchoToRoom", "Shows a line to a room.", "EchoToRoom", False,
    (("Room", "Room to echo into."), ("Text", "What everyone sees.")),
)  # fmt: skip
HEARTBEAT = Trigger(
    TriggerKind.HEARTBEAT, datetime(2026, 1, 1, tzinfo=UTC), heartbeat=Heartbeat.HOUR
)


def echo(words: str) -> tuple[str, dict[str, Any]]:
    return ("EchoToRoom", {"Room": QUAY, "Text": words})


async def turn(
    policy: Policy, teller: Storyteller, services: ToolContext, words: str, key: str
) -> TurnRecord:
    model = ScriptedModel(calls(echo(words)), calls(("Noop", {})))
    loop = ToolLoop(model, LimitsConfig(), FakeClock(), policy=policy)
    return await loop.run(teller, HEARTBEAT, "Something happened.", services, turn_key=key)


def refusals(record: TurnRecord) -> list[str | None]:
    return [c.rule for c in record.calls if c.refused]


@pytest.fixture
def teller(storyteller: Storyteller) -> Storyteller:
    return replace(storyteller, custom_tools=(ECHO,))


async def test_the_database_twin_of_the_kill_switch_stops_prog_calls(
    teller: Storyteller, services: ToolContext, world: SimWorld, sqlite_store: Store
) -> None:
    flags = sqlite_store.flags
    policy = Policy(
        PolicyConfig(target_cooldown_seconds=0),
        FakeClock(),
        kill_flag=lambda: flags.on(KILL_SWITCH_FLAG),
    )
    before = world.cursor.seq
    assert (await turn(policy, teller, services, "A gull.", "turn-1")).calls[0].envelope["ok"]
    await flags.set(KILL_SWITCH_FLAG, True, by="admin")  # another daemon's admin, say
    record = await turn(policy, teller, services, "No.", "turn-2")
    assert refusals(record) == ["kill_switch"]
    await flags.set(KILL_SWITCH_FLAG, False, by="admin")
    again = await turn(policy, teller, services, "Yes.", "turn-3")
    assert refusals(again) == []
    assert world.cursor.seq == before + 2


async def test_a_daemon_that_lost_the_lease_sends_no_prog_call(
    teller: Storyteller, services: ToolContext, world: SimWorld, sqlite_store: Store
) -> None:
    clock = FakeClock()
    cfg = ClusterConfig(enabled=True, lease_seconds=10.0, renew_seconds=2.0)
    a = LeaseKeeper(sqlite_store.stamped_by(clock).leases, cfg, "a", clock)
    b = LeaseKeeper(sqlite_store.stamped_by(clock).leases, cfg, "b", clock)
    await a.start()
    assert teller.id in a.held
    policy = Policy(PolicyConfig(target_cooldown_seconds=0), clock, holds=a.holds_now)
    before = world.cursor.seq
    ok = await turn(policy, teller, services, "A gull.", "turn-1")
    assert ok.calls[0].envelope["ok"] is True
    await clock.advance(11)  # a froze past its lease; b takes the storyteller over
    await b.start()
    assert teller.id in b.held and teller.id in a.held  # a has not noticed yet
    record = await turn(policy, teller, services, "Late.", "turn-2")
    assert refusals(record) == ["lease_lost"]
    assert "another daemon runs this storyteller" in record.calls[0].envelope["error"]
    assert world.cursor.seq == before + 1  # the second call never reached the game
