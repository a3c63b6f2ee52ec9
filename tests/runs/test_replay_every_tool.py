"""Every built-in tool's turn, recorded and replayed, comes out identical and acts on nothing.

Each turn calls one built-in tool with arguments that succeed on the harbour town (plus its
storyteller's own situation, memory, reference document and digest), then ends. The run
record's tape holds what the world and the repositories answered; the replay runs today's
runner over that tape and the recorded model answers and must reproduce the turn call for
call, result for result, with no difference, no tape miss and no change to the world or the
database.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from storyteller_daemon.agent.tools.registry import BUILTIN_TOOLS
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.digest import Digest
from storyteller_daemon.domain.direction import Direction
from storyteller_daemon.domain.references import ReferenceDocument
from storyteller_daemon.domain.story_plans import PlanStep
from storyteller_daemon.domain.storytellers import Storyteller
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.domain.tool_names import DIRECTOR_TOOLS, FULL_PROFILE_TOOLS
from storyteller_daemon.runs import replay_turn
from storyteller_daemon.runtime.turns import replay_runner
from storyteller_daemon.storage.runs import RunRepository
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.model import ScriptedModel, calls, text
from storyteller_daemon.testing.turns import turn_runner
from world_adapter.sim import SimWorld

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
MAREN, WREN, QUAY, TEMPLE, HARBOUR_WARD = 1001, 2004, 101, 202, 1
PATH = "IgnoreDoors"

# Arguments that succeed for each built-in; "{situation}", "{memory}" and "{document}" are the
# ids of what the test creates first.
ARGUMENTS: dict[str, dict[str, Any]] = {
    "CreateSituation": {
        "Title": "Cutpurse", "Description": "Wren robbed Maren.", "CharacterId": None,
        "RoomId": QUAY,
    },
    "UpdateSituation": {
        "Id": "{situation}", "Title": "Smugglers, bolder", "Description": "Two boats now.",
        "CharacterId": None, "RoomId": QUAY, "ClearScope": None,
    },
    "ResolveSituation": {
        "Id": "{situation}", "Title": "Smugglers gone", "Description": "The watch came.",
        "CharacterId": None, "RoomId": None, "ClearScope": True,
    },
    "ShowSituation": {"Id": "{situation}"},
    "Noop": {},
    "OnlinePlayers": {},
    "PlayerInformation": {"Id": MAREN},
    "ListMemoriesForPlayer": {"Id": MAREN},
    "ShowMemory": {"Id": "{memory}"},
    "CreateMemory": {"Id": WREN, "Title": "Quick hands", "Details": "Robbed Maren at noon."},
    "UpdateMemory": {"Id": "{memory}", "Title": "Owes the temple", "Details": "Twelve silver."},
    "ForgetMemory": {"Id": "{memory}"},
    "Landmarks": {},
    "ShowLandmark": {"Id": "the harbour lighthouse"},
    "SearchReferenceDocuments": {"Query": "tide"},
    "ShowReferenceDocument": {"Id": "{document}"},
    "PathBetweenRooms": {
        "OriginRoomId": QUAY, "DestinationRoomId": TEMPLE, "PathSearchFunction": PATH,
    },
    "PathFromCharacterToRoom": {
        "OriginCharacterId": MAREN, "DestinationRoomId": TEMPLE, "PathSearchFunction": PATH,
    },
    "PathBetweenCharacters": {
        "OriginCharacterId": MAREN, "DestinationCharacterId": WREN, "PathSearchFunction": PATH,
    },
    "RecentCharacterPlans": {},
    "CharacterPlans": {"Id": MAREN},
    "CurrentDateTime": {},
    "DateTimeForTarget": {"CharacterId": MAREN, "RoomId": None},
    "CalendarDefinition": {"Id": "harvest", "Year": None},
    "CreateStoryPlan": {
        "Goal": "Find the ledger", "ExpiresInHours": None,
        "Steps": [{"Tool": "CreateSituation", "Intent": "Open a thread", "Arguments": None,
                   "WaitFor": {"Kind": "speech", "RoomId": QUAY, "CharacterId": None,
                               "Words": "ledger"}}],
    },
    "UpdateStoryPlan": {
        "Id": "{plan}", "Action": "replan", "Reason": "The temple is closer.", "Goal": None,
        "ExpiresInHours": 2,
        "Steps": [{"Tool": "PathBetweenRooms", "Intent": "Find the way", "Arguments": None,
                   "WaitFor": None}],
    },
    "ClaimScene": {"RoomId": TEMPLE, "Minutes": 20, "Reason": "The vigil"},
    "ReleaseScene": {"RoomId": QUAY},
}  # fmt: skip


TOOLS = (*FULL_PROFILE_TOOLS, *DIRECTOR_TOOLS)


def test_every_built_in_tool_has_replay_arguments() -> None:
    assert set(ARGUMENTS) == set(TOOLS) == set(BUILTIN_TOOLS)


async def prepared(store: Store) -> tuple[Storyteller, dict[str, int]]:
    """A storyteller (a direct trigger offers every built-in) with a situation, a memory,
    a document and a digest (which the prompt shows)."""
    st = await store.storytellers.create("Harbour Watch")
    watch = Surveillance(zones=frozenset({HARBOUR_WARD}))  # one calendar and clock in view
    st = await store.storytellers.save(
        replace(st, paused=False, surveillance=watch, direction=Direction(plans=True))
    )
    sid = st.id or 0
    situation = await store.situations.create(sid, "Smugglers", "A boat at night.", room_id=QUAY)
    memory = await store.memories.create(sid, MAREN, "Owes money", "Six silver to the temple.")
    document = await store.references.create(
        ReferenceDocument(name="Tide tables", keywords="tide harbour", contents="High tide at six.")
    )
    await store.digests.save(Digest(sid, "The smugglers came back.", "f1", "digest-1", T0))
    plan = await store.plans.create(
        sid, "Watch the quay", (PlanStep("Noop", "Wait"),), expires_in=timedelta(days=1)
    )
    await store.claims.claim(sid, QUAY, minutes=30, reason="The smugglers")
    ids = {
        "situation": situation.id,
        "memory": memory.id,
        "document": document.id or 0,
        "plan": plan.id,
    }
    return st, ids


def filled(arguments: dict[str, Any], ids: dict[str, int]) -> dict[str, Any]:
    return {
        key: ids[value[1:-1]] if isinstance(value, str) and value[1:-1] in ids else value
        for key, value in arguments.items()
    }


async def snapshot(store: Store, st: Storyteller, world: SimWorld) -> Any:
    sid = st.id or 0
    return (
        [(s.id, s.title, s.text, s.resolved, s.room_id) for s in await store.situations.list(sid)],
        [(m.id, m.character_id, m.title, m.text) for m in await store.memories.list(sid)],
        world.output_of(MAREN),
        await store.plans.list(sid),
        await store.claims.recent(),
    )


@pytest.mark.parametrize("tool", TOOLS)
async def test_a_turn_calling_each_built_in_replays_identically(
    tool: str, sqlite_store: Store
) -> None:
    world = SimWorld.harbour_town()
    world.set_plans(MAREN, "find the ledger", "leave the harbour")
    st, ids = await prepared(sqlite_store)
    arguments = filled(ARGUMENTS[tool], ids)
    model = ScriptedModel(calls((tool, arguments)), text("done"))
    clock = FakeClock(T0)
    db = sqlite_store.db
    uses = ("digests", "plans", "claims", "queries")
    agent = turn_runner(sqlite_store, world, model, *uses, clock=clock)
    trigger = Trigger(TriggerKind.DIRECT, occurred_at=T0, text="Look into the harbour.")
    turn = await agent.run_turn(st, trigger)
    [call] = turn.calls
    assert call.name == tool
    assert call.envelope["ok"] is True, call.envelope  # the tool really ran

    before = await snapshot(sqlite_store, st, world)
    [summary] = await RunRepository(db).list(kind="turn")
    stored = await RunRepository(db).get(summary.id)
    assert "The smugglers came back." in stored.record["prompt"]
    report = await replay_turn(
        summary.id, stored.record, st, LimitsConfig(), runner=replay_runner, clock=FakeClock()
    )
    assert report.identical, report.differences
    assert report.replayed["calls"] == report.recorded["calls"]
    assert await snapshot(sqlite_store, st, world) == before  # the replay acted on nothing
