"""Approval: a marked tool's call waits for an admin, runs at most once, or expires unrun.

Turns run through the real turn runner (scripted model, sim world, SQLite); the daemon's
`ApprovalRunner` runs approved calls; a prog that ran shows as a new event in the world.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from agent_doubles import ScriptedModel, calls

from storyteller_daemon.agent.policy import Policy
from storyteller_daemon.agent.records import TurnRecord
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import PolicyConfig
from storyteller_daemon.domain.approvals import ApprovalState
from storyteller_daemon.domain.storytellers import CustomTool, Heartbeat, Storyteller
from storyteller_daemon.errors import ConflictError, NotFoundError
from storyteller_daemon.runtime.scheduling.approvals import ApprovalRunner
from storyteller_daemon.runtime.turns import AgentTurnRunner
from storyteller_daemon.storage.approvals import ApprovalRepository
from storyteller_daemon.storage.policy_actions import PolicyActionRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.sim import SimWorld

QUAY = 101
ECHO = CustomTool(
    "EchoToRoom", "Shows a line to a room.", "EchoToRoom", False,
    (("Room", "Room to echo into."), ("Text", "What everyone sees.")),
)  # fmt: skip


class Harness:
    """A daemon's approval parts over one store, world and fake clock."""

    def __init__(self, store: Store, world: SimWorld, teller: Storyteller, tmp: Path) -> None:
        self.store, self.world, self.teller = store, world, teller
        self.clock = FakeClock()
        self.kill_file = tmp / "storyteller.kill"
        self.repo = ApprovalRepository(store.db)
        self.actions = PolicyActionRepository(store.db)
        self.policy = self.new_policy()
        self.model = ScriptedModel()
        self.runner = self.new_runner()

    def new_policy(self, **settings: Any) -> Policy:
        defaults: dict[str, Any] = {"approve": ["*/echotoroom"], "approval_expiry_seconds": 600}
        return Policy(
            PolicyConfig(**(defaults | settings)),
            self.clock,
            kill_file=self.kill_file,
            journal=self.actions.add,
            approvals=self.repo,
        )

    def new_runner(self) -> AgentTurnRunner:
        return turn_runner(
            self.store,
            self.world,
            self.model,
            clock=self.clock,
            recorded=False,
            policy=self.policy,
        )

    def approvals(self) -> ApprovalRunner:
        """The daemon side, as built at start-up (a new one stands for a restarted daemon)."""
        return ApprovalRunner(
            self.repo,
            self.storyteller,
            self.runner.run_approved,
            self.policy,
            self.clock,
        )

    async def storyteller(self, storyteller_id: int) -> Storyteller:
        if storyteller_id != self.teller.id:
            raise NotFoundError(f"no storyteller {storyteller_id}")
        return self.teller

    async def turn(self, text: str = "The bell tolls.", key: str = "turn-1") -> TurnRecord:
        self.model.add(calls(("EchoToRoom", {"Room": QUAY, "Text": text})), calls(("Noop", {})))
        trigger = Trigger(TriggerKind.HEARTBEAT, self.clock.now(), heartbeat=Heartbeat.TEN_MINUTES)
        return await self.runner.run_turn(self.teller, trigger, key)

    def echoes(self, text: str) -> int:
        return sum(text in line for line in self.world.output_of(1001))


@pytest.fixture
async def harness(sqlite_store: Store, world: SimWorld, tmp_path: Path) -> Harness:
    teller = await sqlite_store.storytellers.create("Harbour Watch")
    return Harness(sqlite_store, world, replace(teller, custom_tools=(ECHO,)), tmp_path)


async def test_a_marked_call_waits_and_runs_once_when_approved(harness: Harness) -> None:
    record = await harness.turn()
    [call] = record.calls[:1]
    assert call.parked and call.rule == "approval" and not call.refused
    assert call.envelope["ok"] is True and call.envelope["result"]["awaiting_approval"] is True
    assert harness.echoes("The bell tolls.") == 0  # nothing reached the game

    again = await harness.turn()  # the same turn re-run after a crash finds the same call
    assert again.calls[0].envelope["result"]["approval"] == call.envelope["result"]["approval"]
    [parked] = await harness.repo.list([ApprovalState.PENDING])
    assert json.loads(parked.arguments) == {"Room": QUAY, "Text": "The bell tolls."}

    daemon = harness.approvals()
    assert await daemon.run_once() == []  # not approved yet
    await harness.repo.decide(parked.id, approve=True, now=harness.clock.now(), by="ops")
    ran = await daemon.run_once()
    assert [a.id for a in ran] == [parked.id]
    assert harness.echoes("The bell tolls.") == 1
    done = await harness.repo.get(parked.id)
    assert done.state is ApprovalState.DONE and json.loads(done.result)["ok"] is True
    assert await daemon.run_once() == []  # never twice
    with pytest.raises(ConflictError, match="is done, not pending"):
        await harness.repo.decide(parked.id, approve=True, now=harness.clock.now())


async def test_a_call_cut_off_while_running_is_not_run_twice_after_a_restart(
    harness: Harness,
) -> None:
    await harness.turn()
    [parked] = await harness.repo.list()
    await harness.repo.decide(parked.id, approve=True, now=harness.clock.now())
    [claimed] = await harness.repo.claim()  # the daemon claimed it ...
    await harness.runner.run_approved(harness.teller, claimed)  # ... it reached the game ...
    assert harness.echoes("The bell tolls.") == 1  # ... and the daemon died before recording it
    restarted = harness.approvals()
    [again] = await restarted.run_once()  # sent again under the same key: the game remembers
    assert again.id == parked.id
    assert harness.echoes("The bell tolls.") == 1
    assert (await harness.repo.get(parked.id)).state is ApprovalState.DONE


async def test_a_rejected_call_never_runs(harness: Harness) -> None:
    await harness.turn()
    [parked] = await harness.repo.list()
    rejected = await harness.repo.decide(
        parked.id, approve=False, now=harness.clock.now(), by="ops", note="not tonight"
    )
    assert rejected.state is ApprovalState.REJECTED and rejected.note == "not tonight"
    assert await harness.approvals().run_once() == []
    assert harness.echoes("The bell tolls.") == 0
    with pytest.raises(NotFoundError, match="no parked call #999"):
        await harness.repo.decide(999, approve=True, now=harness.clock.now())


async def test_an_undecided_call_expires_and_cannot_be_approved_late(harness: Harness) -> None:
    await harness.turn()
    [parked] = await harness.repo.list()
    await harness.clock.advance(601)
    daemon = harness.approvals()
    assert await daemon.run_once() == []
    assert (await harness.repo.get(parked.id)).state is ApprovalState.EXPIRED
    with pytest.raises(ConflictError, match="expired"):
        await harness.repo.decide(parked.id, approve=True, now=harness.clock.now())
    # one found expired at approval time is marked so, and does not run either
    await harness.turn("Second bell.", key="turn-2")
    [late] = await harness.repo.list([ApprovalState.PENDING])
    await harness.clock.advance(601)
    with pytest.raises(ConflictError, match="will not run"):
        await harness.repo.decide(late.id, approve=True, now=harness.clock.now())
    assert (await harness.repo.get(late.id)).state is ApprovalState.EXPIRED
    assert harness.echoes("bell") == 0


async def test_the_kill_switch_holds_approved_calls_until_resumed(harness: Harness) -> None:
    await harness.turn()
    [parked] = await harness.repo.list()
    await harness.repo.decide(parked.id, approve=True, now=harness.clock.now())
    harness.kill_file.touch()
    assert await harness.approvals().run_once() == []
    assert (await harness.repo.get(parked.id)).state is ApprovalState.APPROVED
    harness.kill_file.unlink()
    assert len(await harness.approvals().run_once()) == 1
    assert harness.echoes("The bell tolls.") == 1


async def test_an_approved_call_whose_tool_is_gone_fails_without_running(
    harness: Harness,
) -> None:
    await harness.turn()
    [parked] = await harness.repo.list()
    await harness.repo.decide(parked.id, approve=True, now=harness.clock.now())
    harness.teller = replace(harness.teller, custom_tools=())
    await harness.approvals().run_once()
    failed = await harness.repo.get(parked.id)
    assert failed.state is ApprovalState.FAILED
    assert "has no custom tool EchoToRoom" in json.loads(failed.result)["error"]
    assert harness.echoes("The bell tolls.") == 0


async def test_without_a_queue_a_marked_call_is_refused(harness: Harness) -> None:
    harness.policy = Policy(PolicyConfig(approve=["*"]), harness.clock)
    harness.runner = harness.new_runner()
    record = await harness.turn()
    assert record.calls[0].refused and record.calls[0].rule == "approval"
    assert harness.echoes("The bell tolls.") == 0


async def test_caps_and_cooldowns_hold_across_a_restart(harness: Harness) -> None:
    harness.policy = harness.new_policy(approve=[])
    harness.runner = harness.new_runner()
    first = await harness.turn()
    assert first.calls[0].envelope["ok"] is True and not first.calls[0].parked
    await harness.clock.advance(60)
    restarted = harness.new_policy(approve=[])  # a new daemon: counts come from the store
    restarted.restore(
        await harness.actions.since(harness.clock.now() - timedelta(days=1)), harness.clock.now()
    )
    harness.policy = restarted
    harness.runner = harness.new_runner()
    second = await harness.turn("The bell again.", key="turn-2")
    assert second.calls[0].rule == "cooldown"
    assert harness.echoes("The bell again.") == 0
