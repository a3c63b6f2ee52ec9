"""A prog call whose characters, rooms, items and exits were checked against the world replays
identically: the world's answers to those checks are on the run's tape."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.storytellers import CustomTool
from storyteller_daemon.runs import RunRecorder, replay_turn
from storyteller_daemon.runtime.turns import replay_runner
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls, text
from storyteller_daemon.testing.turns import turn_runner
from storyteller_daemon.testing.world import InstrumentedWorld
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
THINGS = {"Character": 1001, "Location": 101, "Item": 351, "Exit": 11}
INSPECT = CustomTool(
    "InspectThings", "What its arguments name.", "InspectThings", False,
    tuple((p, f"A {p}.") for p in THINGS),
)  # fmt: skip


async def test_a_checked_prog_call_replays_from_the_tape(sqlite_store: Store) -> None:
    world = InstrumentedWorld(SimWorld.harbour_town())
    st = await sqlite_store.storytellers.create("Harbour Watch")
    st = replace(st, paused=False, custom_tools=(INSPECT,))
    clock = FakeClock(T0)
    runs = RunRepository(sqlite_store.db)
    model = ScriptedModel(calls(("InspectThings", THINGS)), text("done"))
    agent = turn_runner(
        sqlite_store, world, model, clock=clock, recorder=RunRecorder(runs, None, clock)
    )
    trigger = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="What is on the quay?")
    turn = await agent.run_turn(st, trigger)
    assert turn.calls[0].envelope["ok"] is True, turn.calls[0].envelope
    assert [world.count(m) for m in ("character", "room", "entity", "execute_prog")] == [
        1,
        1,
        2,
        1,
    ]

    [summary] = await runs.list(kind="turn")
    stored = await runs.get(summary.id)
    asked = len(world.calls)
    report = await replay_turn(
        summary.id, stored.record, st, LimitsConfig(), runner=replay_runner, clock=FakeClock()
    )
    assert report.identical, report.differences
    assert len(world.calls) == asked  # the replay asked the tape, not the world
