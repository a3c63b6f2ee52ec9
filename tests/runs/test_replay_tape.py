"""The tape: values survive the trip through JSON, and recording never changes a live call."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from progs.types import ProgParameter, ProgSignature, ProgType, ValueType
from storyteller_daemon.agent.ports import MemoryStore, SituationStore
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.domain.situations import Situation
from storyteller_daemon.errors import NotFoundError, ToolError
from storyteller_daemon.runs.tape import MISS_MESSAGE, RecordedFailure, Tape, decode, encode
from world_adapter.errors import WorldCommandError
from world_adapter.facts import CharacterInfo, ProgOutcome, RoomInfo
from world_adapter.protocol import WorldClient
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def through_json(value: Any, hint: Any) -> Any:
    return decode(json.loads(json.dumps(encode(value, hint))), hint)


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        (Situation(7, 1, "Cutpurse", "Wren robbed Maren.", T0, room_id=101), Situation),
        (
            [ProgSignature(11, "EchoToRoom", (ProgParameter("Room", ValueType(ProgType.LOCATION)),),
                           ValueType(ProgType.BOOLEAN))],
            list[ProgSignature],
        ),
        (RoomInfo(101, "Harbour Quay", 1, "Wet stone.", (1001, 1002)), RoomInfo | None),
        (None, CharacterInfo | None),
        ({1001: 2, 1002: 1}, dict[int, int]),
        ({1: frozenset({101, 102})}, dict[int, frozenset[int]]),
        (ProgOutcome("EchoToRoom", "Boolean", {"any": ["json"]}, replayed=True), ProgOutcome),
        (ReferenceDocument(name="Tides", id=3, restricted_to=frozenset({2, 1})), ReferenceDocument),
    ],
)  # fmt: skip
def test_service_values_survive_the_tape(value: Any, hint: Any) -> None:
    assert through_json(value, hint) == value


async def test_plans_and_times_replay_exactly() -> None:
    """Durations (a plan's age) and calendar readings go through the world's own codec."""
    world = SimWorld.harbour_town()
    world.set_plans(1001, "find the ledger", "leave the harbour")
    tape = Tape()
    taped: WorldClient = tape.record("world", WorldClient, world)
    plans = await taped.recent_plans(timedelta(hours=1))
    plan = await taped.character_plan(1001)
    times = await taped.room_times([101])
    replayed = Tape(json.loads(json.dumps(tape.entries)))
    stand_in: WorldClient = replayed.replay("world", WorldClient)
    assert await stand_in.recent_plans(timedelta(hours=1)) == plans
    assert await stand_in.character_plan(1001) == plan and plan is not None
    assert plan.updated_ago is not None
    assert await stand_in.room_times([101]) == times
    assert replayed.misses == [] and replayed.unused() == []


async def test_a_recorded_world_answers_a_replay_and_acts_on_nothing() -> None:
    world = SimWorld.harbour_town()
    tape = Tape()
    taped: WorldClient = tape.record("world", WorldClient, world)
    outcome = await taped.execute_prog("EchoToRoom", {"Room": 101, "Text": "A gull cries."}, "k1")
    room = await taped.room(101)
    with pytest.raises(WorldCommandError):
        await taped.execute_prog("NoSuchProg", {}, "k2")
    heard = world.output_of(1001)

    replayed = Tape(json.loads(json.dumps(tape.entries)))
    stand_in: WorldClient = replayed.replay("world", WorldClient)
    assert await stand_in.room(101) == room  # answered out of order, by arguments
    again = await stand_in.execute_prog("EchoToRoom", {"Room": 101, "Text": "A gull cries."}, "k1")
    assert again == outcome
    with pytest.raises(WorldCommandError):
        await stand_in.execute_prog("NoSuchProg", {}, "k2")
    with pytest.raises(WorldCommandError, match=MISS_MESSAGE):
        await stand_in.execute_prog("EchoToRoom", {"Room": 102, "Text": "A gull cries."}, "k3")
    assert world.output_of(1001) == heard
    assert [m["args"]["arguments"] for m in replayed.misses] == [
        {"Room": 102, "Text": "A gull cries."}
    ]
    assert replayed.unused() == []


class Odd:
    """A value no tape can hold."""


class OddStore:
    async def get(self, storyteller_id: int, memory_id: int) -> Any:
        return Odd()

    async def forget(self, storyteller_id: int, memory_id: int) -> Any:
        raise NotFoundError(f"No memory with id {memory_id} exists.")


async def test_what_cannot_be_recorded_still_reaches_the_caller() -> None:
    tape = Tape()
    taped: MemoryStore = tape.record("memories", MemoryStore, OddStore())
    assert isinstance(await taped.get(1, 5), Odd)
    with pytest.raises(NotFoundError):
        await taped.forget(1, 6)
    stand_in: MemoryStore = Tape(tape.entries).replay("memories", MemoryStore)
    with pytest.raises(RecordedFailure, match="the recorded Odd was not kept"):
        await stand_in.get(1, 5)
    with pytest.raises(NotFoundError, match="No memory with id 6 exists."):
        await stand_in.forget(1, 6)


async def test_a_repository_miss_is_a_tool_error_and_touched_situations_are_listed() -> None:
    def entry(method: str, args: dict[str, Any], **outcome: Any) -> dict[str, Any]:
        return {"service": "situations", "method": method, "args": args, **outcome}

    tape = Tape(
        [
            entry("get", {"storyteller_id": 1, "situation_id": 4}, result=None),
            entry("create", {}, result={"id": 9}),
            entry("update", {"situation_id": 4}, error={"type": "NotFoundError", "message": "x"}),
        ]
    )
    assert tape.touched_situations() == [4, 9]
    stand_in: SituationStore = tape.replay("situations", SituationStore)
    with pytest.raises(ToolError, match=MISS_MESSAGE):
        await stand_in.get(1, 5)
