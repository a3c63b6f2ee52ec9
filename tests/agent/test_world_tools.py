"""Landmark and path tools, and which profile offers them (FutureMUD 11, 31-33).

Every call goes through the real dispatch (`invoke` on the registered tool, or the tool loop)
against the harbour town.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from agent_doubles import ScriptedModel, calls, execute

from storyteller_daemon.agent.loop import ToolLoop
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.tools.registry import BUILTIN_TOOLS, builtin_tools
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.storytellers import Heartbeat, Storyteller
from storyteller_daemon.domain.tool_names import DIRECTOR_TOOLS, FULL_PROFILE_TOOLS, ToolProfile
from storyteller_daemon.testing.clock import FakeClock
from world_adapter.events import CharacterState
from world_adapter.sim import SimWorld

MAREN, OSRIC, ILSA, HOLT, PER, COYLE = 1001, 1002, 1003, 2001, 2003, 2005
QUAY, FISH_MARKET, TAVERN, CUSTOMS, TEMPLE_SQUARE, WATCH_HOUSE, GUILDHALL = (
    101, 102, 103, 104, 202, 203, 205,
)  # fmt: skip
GUILDHALL_DOOR = 5
PATH_KEYS = {"PathSearchFunction", "HasPath", "Directions"}


async def _path(ctx: ToolContext, tool: str, search: str, **ids: int) -> dict[str, Any]:
    envelope = await execute(ctx, tool, {**ids, "PathSearchFunction": search})
    assert envelope["ok"], envelope
    result: dict[str, Any] = envelope["result"]
    return result


async def _error(ctx: ToolContext, tool: str, arguments: dict[str, Any]) -> str:
    envelope = await execute(ctx, tool, arguments)
    assert envelope["ok"] is False, envelope
    return str(envelope["error"])


# ---------------------------------------------------------------- profiles (11)


def test_configure_tool_loop_response_options_event_focused_profile_excludes_heavy_tools() -> None:
    event_focused = [t.name for t in builtin_tools(ToolProfile.EVENT_FOCUSED)]
    full = [t.name for t in builtin_tools(ToolProfile.FULL)]
    for name in ("Noop", "CreateSituation", "ResolveSituation", "CurrentDateTime"):
        assert name in event_focused
    assert "DateTimeForTarget" in event_focused
    for name in ("PathBetweenRooms", "Landmarks", "CharacterPlans", "CalendarDefinition"):
        assert name not in event_focused and name in full
    assert full == list(FULL_PROFILE_TOOLS) and len(full) == 24
    assert len(event_focused) == 16 and set(BUILTIN_TOOLS) == set(full) | set(DIRECTOR_TOOLS)
    directed = [t.name for t in builtin_tools(ToolProfile.EVENT_FOCUSED, director=True)]
    assert directed == event_focused + list(DIRECTOR_TOOLS)


async def test_an_event_focused_turn_refuses_full_only_world_tools(
    storyteller: Storyteller, ctx: ToolContext, world: SimWorld
) -> None:
    arguments = {"Id": MAREN}
    loop = ToolLoop(
        ScriptedModel(calls(("CharacterPlans", arguments)), calls(("Noop", {}))),
        LimitsConfig(),
        FakeClock(),
    )
    echo = Trigger.from_event(world.emote(MAREN, "waves."))
    record = await loop.run(storyteller, echo, "Maren waves.", ctx, turn_key="echo-1")
    assert record.calls[0].refused
    assert record.calls[0].envelope == {
        "ok": False,
        "error": "Tool 'CharacterPlans' is not available for this trigger.",
    }
    heartbeat = Trigger(
        TriggerKind.HEARTBEAT, datetime(2026, 5, 1, tzinfo=UTC), heartbeat=Heartbeat.HOUR
    )
    full_model = ScriptedModel(calls(("CharacterPlans", arguments)), calls(("Noop", {})))
    loop = ToolLoop(full_model, LimitsConfig(), FakeClock())
    record = await loop.run(storyteller, heartbeat, "An hour passes.", ctx, turn_key="hb-1")
    assert record.calls[0].envelope["ok"] is True
    assert record.calls[0].envelope["result"]["Name"] == "Maren Tidewell"
    offered = [t.name for t in full_model.requests[0].tools]
    assert offered[:24] == list(FULL_PROFILE_TOOLS)
    output = next(
        i for i in full_model.requests[1].input if i.get("type") == "function_call_output"
    )
    assert json.loads(output["output"]) == record.calls[0].envelope


# ---------------------------------------------------------------- landmarks


async def test_execute_function_call_landmarks_lists_every_landmark_with_its_room(
    ctx: ToolContext,
) -> None:
    envelope = await execute(ctx, "Landmarks", {})
    assert envelope == {
        "ok": True,
        "result": {
            "Landmarks": [
                {"Id": "the Drowned Lantern", "RoomId": TAVERN, "RoomName": "The Drowned Lantern"},
                {"Id": "the harbour lighthouse", "RoomId": 107, "RoomName": "Lighthouse Steps"},
                {"Id": "the Old Town Gate", "RoomId": 201, "RoomName": "Old Town Gate"},
                {
                    "Id": "the Temple of the Tides",
                    "RoomId": TEMPLE_SQUARE,
                    "RoomName": "Temple Square",
                },
            ]
        },
    }


async def test_execute_function_call_show_landmark_returns_room_details_and_occupants(
    ctx: ToolContext, world: SimWorld
) -> None:
    world.move(MAREN, TAVERN)
    envelope = await execute(ctx, "ShowLandmark", {"Id": "THE DROWNED LANTERN"})
    result = envelope["result"]
    assert (result["Id"], result["RoomId"], result["RoomName"]) == (
        "the Drowned Lantern",
        TAVERN,
        "The Drowned Lantern",
    )
    assert result["RoomDescription"].startswith("A low-beamed taproom thick with pipe smoke")
    assert len(result["Details"]) == 2
    assert result["Details"][0].startswith("A harbour tavern where sailors drink")
    assert result["Occupants"] == [
        {
            "Id": MAREN,
            "Name": "Maren Tidewell",
            "Gender": "Female",
            "ShortDescription": "a weather-tanned woman with salt-stiff braids",
        },
        {
            "Id": OSRIC,
            "Name": "Osric Vell",
            "Gender": "Male",
            "ShortDescription": "a paunchy man in a threadbare velvet doublet",
        },
    ]
    world.set_online(OSRIC, False)
    result = (await execute(ctx, "ShowLandmark", {"Id": "the drowned lantern"}))["result"]
    assert [o["Id"] for o in result["Occupants"]] == [MAREN]


async def test_show_landmark_with_an_unknown_name_is_an_error(ctx: ToolContext) -> None:
    assert await _error(ctx, "ShowLandmark", {"Id": "the moon"}) == (
        "No landmark with id 'the moon' exists."
    )
    assert await _error(ctx, "ShowLandmark", {"Id": None}) == "Missing required property 'Id'."


# ---------------------------------------------------------------- paths (31-33)


async def test_execute_function_call_path_between_rooms_returns_directions_payload(
    ctx: ToolContext,
) -> None:
    result = await _path(
        ctx, "PathBetweenRooms", "RespectClosedDoors", OriginRoomId=QUAY, DestinationRoomId=QUAY
    )
    assert result == {
        "OriginRoomId": QUAY,
        "DestinationRoomId": QUAY,
        "PathSearchFunction": "RespectClosedDoors",
        "HasPath": True,
        "Directions": [],
    }


@pytest.mark.parametrize(
    ("origin", "destination", "search", "used", "directions"),
    [
        (QUAY, GUILDHALL, "IgnorePresenceOfDoors", "IgnorePresenceOfDoors",
         ["n", "n", "n", "e", "enter door"]),
        (QUAY, GUILDHALL, "ignoredoors", "IgnorePresenceOfDoors",
         ["n", "n", "n", "e", "enter door"]),
        (QUAY, GUILDHALL, "IncludeUnlockedDoors", "IncludeUnlockedDoors",
         ["n", "n", "n", "e", "enter door"]),
        (QUAY, GUILDHALL, "RespectClosedDoors", "RespectClosedDoors", None),
        (QUAY, TAVERN, "RespectClosedDoors", "RespectClosedDoors", ["e", "enter door"]),
        (QUAY, CUSTOMS, "IncludeUnlockedDoors", "IncludeUnlockedDoors", None),
        (QUAY, CUSTOMS, "PathIgnoreDoors", "IgnorePresenceOfDoors", ["enter door"]),
        (TEMPLE_SQUARE, WATCH_HOUSE, "IncludeFireableDoors", "IncludeFireableDoors", ["w"]),
        (TEMPLE_SQUARE, WATCH_HOUSE, "PathIncludeUnlockedDoors", "IncludeUnlockedDoors", None),
        (WATCH_HOUSE, TAVERN, "pathrespectcloseddoors", "RespectClosedDoors", None),
    ],
)  # fmt: skip
async def test_path_between_rooms_walks_multi_step_paths_through_the_doors_the_function_allows(
    ctx: ToolContext,
    origin: int,
    destination: int,
    search: str,
    used: str,
    directions: list[str] | None,
) -> None:
    result = await _path(
        ctx, "PathBetweenRooms", search, OriginRoomId=origin, DestinationRoomId=destination
    )
    assert result["PathSearchFunction"] == used
    assert result["HasPath"] is (directions is not None)
    assert result["Directions"] == (directions or [])


async def test_path_between_rooms_follows_doors_as_they_are_now(
    ctx: ToolContext, world: SimWorld
) -> None:
    ids = {"OriginRoomId": QUAY, "DestinationRoomId": GUILDHALL}
    assert not (await _path(ctx, "PathBetweenRooms", "RespectClosedDoors", **ids))["HasPath"]
    world.set_door(GUILDHALL_DOOR, closed=False)
    opened = await _path(ctx, "PathBetweenRooms", "RespectClosedDoors", **ids)
    assert opened["Directions"] == ["n", "n", "n", "e", "enter door"]
    world.set_door(GUILDHALL_DOOR, closed=True, locked=True)
    locked = await _path(ctx, "PathBetweenRooms", "IncludeUnlockedDoors", **ids)
    assert locked["HasPath"] is False and locked["Directions"] == []


async def test_path_between_rooms_refuses_bad_functions_and_rooms(ctx: ToolContext) -> None:
    rooms = {"OriginRoomId": QUAY, "DestinationRoomId": GUILDHALL}
    assert await _error(ctx, "PathBetweenRooms", {**rooms, "PathSearchFunction": "Sideways"}) == (
        "Unknown PathSearchFunction 'Sideways'. Valid values are RespectClosedDoors, "
        "PathRespectClosedDoors, IncludeUnlockedDoors, PathIncludeUnlockedDoors, "
        "IncludeFireableDoors, IgnorePresenceOfDoors, IgnoreDoors, PathIgnoreDoors, "
        "IncludeUnlockableDoors, PathIncludeUnlockableDoors."
    )
    for search in ("IncludeUnlockableDoors", "PathIncludeUnlockableDoors"):
        message = await _error(ctx, "PathBetweenRooms", {**rooms, "PathSearchFunction": search})
        assert "needs a character" in message and "PathFromCharacterToRoom" in message
    unknown = {"OriginRoomId": 999, "DestinationRoomId": QUAY, "PathSearchFunction": "IgnoreDoors"}
    assert await _error(ctx, "PathBetweenRooms", unknown) == "No room with id 999 exists."
    missing = {**rooms, "PathSearchFunction": None}
    assert await _error(ctx, "PathBetweenRooms", missing) == (
        "Missing required property 'PathSearchFunction'."
    )


async def test_execute_function_call_path_from_character_to_room_returns_directions_payload(
    ctx: ToolContext,
) -> None:
    result = await _path(
        ctx,
        "PathFromCharacterToRoom",
        "PathIncludeUnlockableDoors",
        OriginCharacterId=MAREN,
        DestinationRoomId=QUAY,
    )
    assert result == {
        "OriginCharacterId": MAREN,
        "OriginRoomId": QUAY,
        "DestinationRoomId": QUAY,
        "PathSearchFunction": "PathIncludeUnlockableDoors",
        "HasPath": True,
        "Directions": [],
    }


@pytest.mark.parametrize(
    ("character", "destination", "directions"),
    [
        (COYLE, CUSTOMS, ["leave door", "w", "w", "enter door"]),  # his keys open doors 1 and 3
        (HOLT, TEMPLE_SQUARE, ["e"]),  # his key opens the watch house door
        (ILSA, WATCH_HOUSE, None),  # no key
        (MAREN, CUSTOMS, None),
    ],
)
async def test_path_from_character_to_room_passes_the_locked_doors_the_character_has_keys_to(
    ctx: ToolContext, character: int, destination: int, directions: list[str] | None
) -> None:
    result = await _path(
        ctx,
        "PathFromCharacterToRoom",
        "IncludeUnlockableDoors",
        OriginCharacterId=character,
        DestinationRoomId=destination,
    )
    assert result["PathSearchFunction"] == "IncludeUnlockableDoors"
    assert (result["HasPath"], result["Directions"]) == (directions is not None, directions or [])


async def test_path_variants_avoid_exits_a_character_cannot_cross(
    ctx: ToolContext, world: SimWorld
) -> None:
    world.change_state(MAREN, CharacterState.UNCONSCIOUS)
    ids = {"OriginCharacterId": MAREN, "DestinationRoomId": FISH_MARKET}
    plain = await _path(ctx, "PathFromCharacterToRoom", "RespectClosedDoors", **ids)
    assert (plain["HasPath"], plain["Directions"]) == (True, ["e"])
    variant = await _path(ctx, "PathFromCharacterToRoom", "PathRespectClosedDoors", **ids)
    assert variant["PathSearchFunction"] == "PathRespectClosedDoors"
    assert (variant["HasPath"], variant["Directions"]) == (False, [])
    world.recover(MAREN)
    again = await _path(ctx, "PathFromCharacterToRoom", "PathRespectClosedDoors", **ids)
    assert again["Directions"] == ["e"]


async def test_execute_function_call_path_between_characters_returns_directions_payload(
    ctx: ToolContext,
) -> None:
    result = await _path(
        ctx,
        "PathBetweenCharacters",
        "PathIgnoreDoors",
        OriginCharacterId=MAREN,
        DestinationCharacterId=PER,
    )
    assert result == {
        "OriginCharacterId": MAREN,
        "OriginRoomId": QUAY,
        "DestinationCharacterId": PER,
        "DestinationRoomId": QUAY,
        "PathSearchFunction": "PathIgnoreDoors",
        "HasPath": True,
        "Directions": [],
    }


async def test_path_between_characters_walks_from_one_to_the_other(
    ctx: ToolContext, world: SimWorld
) -> None:
    result = await _path(
        ctx,
        "PathBetweenCharacters",
        "RespectClosedDoors",
        OriginCharacterId=MAREN,
        DestinationCharacterId=ILSA,
    )
    assert (result["OriginRoomId"], result["DestinationRoomId"]) == (QUAY, TEMPLE_SQUARE)
    assert result["Directions"] == ["n", "n", "n"]
    world.set_online(ILSA, False)  # offline characters keep their place
    still = await _path(
        ctx,
        "PathBetweenCharacters",
        "RespectClosedDoors",
        OriginCharacterId=MAREN,
        DestinationCharacterId=ILSA,
    )
    assert still["Directions"] == ["n", "n", "n"]
    unknown = {
        "OriginCharacterId": MAREN,
        "DestinationCharacterId": 4242,
        "PathSearchFunction": "IgnoreDoors",
    }
    assert await _error(ctx, "PathBetweenCharacters", unknown) == (
        "No character with id 4242 exists."
    )
    assert (
        set(result)
        == {
            "OriginCharacterId",
            "OriginRoomId",
            "DestinationCharacterId",
            "DestinationRoomId",
        }
        | PATH_KEYS
    )


async def test_a_characters_plain_functions_are_named_by_their_canonical_spelling(
    ctx: ToolContext,
) -> None:
    ids = {"OriginCharacterId": MAREN, "DestinationRoomId": CUSTOMS}
    ignoring = await _path(ctx, "PathFromCharacterToRoom", "IGNOREDOORS", **ids)
    assert (ignoring["PathSearchFunction"], ignoring["Directions"]) == (
        "IgnorePresenceOfDoors",
        ["enter door"],
    )
    variant = await _path(ctx, "PathFromCharacterToRoom", "pathignoredoors", **ids)
    assert variant["PathSearchFunction"] == "PathIgnoreDoors"
