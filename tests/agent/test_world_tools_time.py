"""Plan, date-time and calendar tools (FutureMUD 34-40), on a harbour town with a fixed clock.

At noon UTC on 1 May 2026 it is noon Harbour Tide Time in the Harbour Ward and half past noon
Temple Bell Time in the Old Town, on Tideday, the 1st of Reaping, 1051 A.F.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from agent_doubles import execute

from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.domain.surveillance import Surveillance
from storyteller_daemon.testing import FakeClock
from world_adapter.sim import SimWorld
from world_adapter.sim.harbour_map import HARBOUR_TOWN_MAP
from world_adapter.sim.harbour_people import HARBOUR_TOWN_PEOPLE
from world_adapter.sim.harbour_time import (
    CITY_BELLS,
    HARBOUR_TIMEKEEPING,
    SOLAR_CALENDAR,
    TEMPLE_CALENDAR,
)
from world_adapter.sim.timekeeping import Timekeeping, ZoneReckoning

MAREN, OSRIC, ILSA, HOLT, PER = 1001, 1002, 1003, 2001, 2003
QUAY, TEMPLE_SQUARE, WATCH_HOUSE = 101, 202, 203
START = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
DATE = "Tideday, the 1st of Reaping, 1051 A.F."
HARBOUR_NOW = {
    "CalendarId": 1,
    "CalendarName": "Harbour Solar Calendar",
    "ClockId": 1,
    "ClockName": "City Bells",
    "TimeZoneId": 1,
    "TimeZoneName": "Harbour Tide Time",
    "DateLong": DATE,
    "DateShort": "1/8/1051",
    "TimeLong": "12:00:00 p.m. HTT",
    "TimeShort": "12:00",
    "TimeVague": "High Sun",
    "DateTime": f"12:00:00 p.m. HTT on {DATE}",
}
OLD_TOWN_NOW = {
    **HARBOUR_NOW,
    "TimeZoneId": 2,
    "TimeZoneName": "Temple Bell Time",
    "TimeLong": "12:30:00 p.m. TBT",
    "TimeShort": "12:30",
    "DateTime": f"12:30:00 p.m. TBT on {DATE}",
}
MULTIPLE = (
    "Multiple calendar/clock/timezone contexts are in use. Use DateTimeForTarget with "
    "CharacterId or RoomId."
)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def world(clock: FakeClock) -> SimWorld:
    return SimWorld.harbour_town(clock=clock.now)


def _watching(ctx: ToolContext, **surveillance: frozenset[int]) -> ToolContext:
    watcher = replace(ctx.current, surveillance=Surveillance(**surveillance))
    return ctx.for_turn(watcher, ctx.turn_key)


async def _ok(ctx: ToolContext, tool: str, arguments: dict[str, Any]) -> Any:
    envelope = await execute(ctx, tool, arguments)
    assert envelope["ok"] is True, envelope
    return envelope["result"]


async def _error(ctx: ToolContext, tool: str, arguments: dict[str, Any]) -> str:
    envelope = await execute(ctx, tool, arguments)
    assert envelope["ok"] is False, envelope
    return str(envelope["error"])


# ---------------------------------------------------------------- plans (34-35)


async def test_execute_function_call_recent_character_plans_returns_recent_plans(
    ctx: ToolContext,
) -> None:
    result = await _ok(ctx, "RecentCharacterPlans", {})
    assert result == {
        "WindowDays": 90,
        "Plans": [
            {
                "Id": ILSA,
                "Name": "Ilsa Brand",
                "ShortDescription": "a freckled young woman in a sea-green acolyte's robe",
                "ShortTermPlan": "Gather shell offerings for the Festival of Nets.",
                "LongTermPlan": "Be ordained a priestess of the Tides.",
                "UpdatedAgo": "10.00:00:00",
                "WindowRemaining": "80.00:00:00",
            },
            {
                "Id": MAREN,
                "Name": "Maren Tidewell",
                "ShortDescription": "a weather-tanned woman with salt-stiff braids",
                "ShortTermPlan": "Find out who has been cutting the nets on Net-Menders' Row.",
                "LongTermPlan": "Buy a boat of her own before the autumn storms.",
                "UpdatedAgo": "2.00:00:00",
                "WindowRemaining": "88.00:00:00",
            },
        ],
    }


async def test_recent_character_plans_age_with_the_world_clock(
    ctx: ToolContext, world: SimWorld, clock: FakeClock
) -> None:
    await _ok(ctx, "RecentCharacterPlans", {})  # the world starts at START
    clock.set_now(START + timedelta(days=81, hours=3, minutes=4, seconds=5, microseconds=600))
    world.set_plans(OSRIC, "Pawn the paste rings.", "")
    clock.set_now(clock.now() + timedelta(minutes=30))
    plans = (await _ok(ctx, "RecentCharacterPlans", {}))["Plans"]
    # Ilsa's plans (91 days old) left the window; the newest change is last.
    assert [(p["Id"], p["UpdatedAgo"], p["WindowRemaining"]) for p in plans] == [
        (MAREN, "83.03:34:05", "6.20:25:55"),
        (OSRIC, "00:30:00", "89.23:30:00"),
    ]
    assert plans[1]["ShortTermPlan"] == "Pawn the paste rings."
    assert plans[1]["LongTermPlan"] is None
    world.set_online(MAREN, False)
    world.set_plans(HOLT, "Patrol the quay.", "Retire.")  # an NPC: never listed
    plans = (await _ok(ctx, "RecentCharacterPlans", {}))["Plans"]
    assert [p["Id"] for p in plans] == [OSRIC]


async def test_execute_function_call_character_plans_returns_specific_character_plans(
    ctx: ToolContext,
) -> None:
    result = await _ok(ctx, "CharacterPlans", {"Id": MAREN})
    assert result == {
        "Id": MAREN,
        "Name": "Maren Tidewell",
        "ShortDescription": "a weather-tanned woman with salt-stiff braids",
        "ShortTermPlan": "Find out who has been cutting the nets on Net-Menders' Row.",
        "LongTermPlan": "Buy a boat of her own before the autumn storms.",
        "RecentlyUpdated": True,
        "UpdatedAgo": "2.00:00:00",
        "WindowRemaining": "88.00:00:00",
    }


async def test_character_plans_outside_the_window_for_npcs_and_for_nobody(
    ctx: ToolContext,
) -> None:
    old = await _ok(ctx, "CharacterPlans", {"Id": OSRIC})
    assert (old["RecentlyUpdated"], old["UpdatedAgo"], old["WindowRemaining"]) == (
        False,
        "120.00:00:00",
        None,
    )
    npc = await _ok(ctx, "CharacterPlans", {"Id": str(HOLT)})
    assert (npc["Name"], npc["RecentlyUpdated"], npc["UpdatedAgo"]) == (
        "Watch Sergeant Holt",
        True,
        "1.00:00:00",
    )
    none = await _ok(ctx, "CharacterPlans", {"Id": {"Id": PER}})
    assert (none["ShortTermPlan"], none["LongTermPlan"], none["RecentlyUpdated"]) == (
        None,
        None,
        False,
    )
    assert (none["UpdatedAgo"], none["WindowRemaining"]) == (None, None)
    assert await _error(ctx, "CharacterPlans", {"Id": 4242}) == "No character with id 4242 exists."


# ---------------------------------------------------------------- date and time (36-39)


async def test_execute_function_call_current_date_time_multiple_contexts_returns_error(
    ctx: ToolContext,
) -> None:
    # Both zones keep the same calendar and clock, in different time zones.
    both = _watching(ctx, zones=frozenset({1, 2}))
    assert await _error(both, "CurrentDateTime", {}) == MULTIPLE
    # Watching nothing means every room, which spans both time zones too.
    assert await _error(ctx, "CurrentDateTime", {}) == MULTIPLE
    mixed = _watching(ctx, zones=frozenset({1}), included=frozenset({WATCH_HOUSE}))
    assert await _error(mixed, "CurrentDateTime", {}) == MULTIPLE


async def test_current_date_time_reads_the_one_context_of_the_watched_rooms(
    ctx: ToolContext,
) -> None:
    harbour = _watching(ctx, zones=frozenset({1}))
    assert await _ok(harbour, "CurrentDateTime", {}) == HARBOUR_NOW
    temple = _watching(ctx, included=frozenset({TEMPLE_SQUARE, WATCH_HOUSE}))
    assert await _ok(temple, "CurrentDateTime", {}) == OLD_TOWN_NOW
    trimmed = _watching(ctx, zones=frozenset({1, 2}), excluded=frozenset(range(201, 206)))
    assert await _ok(trimmed, "CurrentDateTime", {}) == HARBOUR_NOW


async def test_current_date_time_without_monitored_rooms_is_an_error(ctx: ToolContext) -> None:
    for watching in (
        _watching(ctx, zones=frozenset({99})),
        _watching(ctx, included=frozenset({QUAY}), excluded=frozenset({QUAY})),
    ):
        assert await _error(watching, "CurrentDateTime", {}) == (
            "There are no monitored rooms to evaluate date and time for."
        )


async def test_execute_function_call_date_time_for_target_character_returns_date_time_payload(
    ctx: ToolContext,
) -> None:
    result = await _ok(ctx, "DateTimeForTarget", {"CharacterId": ILSA, "RoomId": None})
    assert result == {
        **OLD_TOWN_NOW,
        "CharacterId": ILSA,
        "CharacterName": "Ilsa Brand",
        "RoomId": TEMPLE_SQUARE,
        "RoomName": "Temple Square",
    }
    assert result["DateTime"] == f"12:30:00 p.m. TBT on {DATE}"


async def test_date_time_for_target_room_and_the_default_context(ctx: ToolContext) -> None:
    room = await _ok(ctx, "DateTimeForTarget", {"CharacterId": None, "RoomId": QUAY})
    assert room == {**HARBOUR_NOW, "RoomId": QUAY, "RoomName": "Harbour Quay"}
    old_town = _watching(ctx, zones=frozenset({2}))
    assert await _ok(old_town, "DateTimeForTarget", {"CharacterId": None, "RoomId": None}) == (
        OLD_TOWN_NOW
    )
    assert await _error(ctx, "DateTimeForTarget", {}) == MULTIPLE


async def test_execute_function_call_date_time_for_target_with_character_and_room_returns_error(
    ctx: ToolContext,
) -> None:
    message = await _error(ctx, "DateTimeForTarget", {"CharacterId": MAREN, "RoomId": QUAY})
    assert message == "Specify either CharacterId or RoomId, but not both."


async def test_execute_function_call_date_time_for_target_with_zero_character_id_and_room_returns_error(  # noqa: E501
    ctx: ToolContext,
) -> None:
    message = await _error(ctx, "DateTimeForTarget", {"CharacterId": 0, "RoomId": WATCH_HOUSE})
    assert message == "Specify either CharacterId or RoomId, but not both."
    alone = await _error(ctx, "DateTimeForTarget", {"CharacterId": 0, "RoomId": None})
    assert alone == "No character with id 0 exists."


async def test_date_time_for_target_in_a_place_without_a_calendar(
    ctx: ToolContext, clock: FakeClock
) -> None:
    harbour_only = Timekeeping(
        calendars=(SOLAR_CALENDAR, TEMPLE_CALENDAR),
        clocks=(CITY_BELLS,),
        reckonings=(ZoneReckoning(1, (1,), (1,)),),
        timeline=HARBOUR_TIMEKEEPING.timeline,
    )
    world = SimWorld(
        HARBOUR_TOWN_MAP, HARBOUR_TOWN_PEOPLE, (), timekeeping=harbour_only, clock=clock.now
    )
    elsewhere = replace(ctx, services=replace(ctx.services, world=world))
    assert await _error(elsewhere, "DateTimeForTarget", {"RoomId": TEMPLE_SQUARE}) == (
        "Room 202 has no calendar."
    )
    assert await _error(elsewhere, "DateTimeForTarget", {"CharacterId": ILSA}) == (
        "Character 1003 location has no calendar."
    )
    # Watching everything: rooms without a calendar add no context, so one context remains.
    assert await _ok(elsewhere, "CurrentDateTime", {}) == HARBOUR_NOW
    old_town = _watching(elsewhere, zones=frozenset({2}))
    assert await _error(old_town, "CurrentDateTime", {}) == (
        "None of the monitored rooms keeps a calendar."
    )
    assert await _error(ctx, "DateTimeForTarget", {"RoomId": 999}) == "No room with id 999 exists."


# ---------------------------------------------------------------- calendars (40)


async def test_execute_function_call_calendar_definition_returns_calendar_metadata(
    ctx: ToolContext,
) -> None:
    result = await _ok(ctx, "CalendarDefinition", {"Id": "harvest", "Year": None})
    assert (result["Id"], result["Name"], result["ShortName"], result["Alias"]) == (
        2,
        "Temple Harvest Reckoning",
        "Temple Reckoning",
        "harvest",
    )
    assert result["Description"].startswith("The liturgical calendar of the priests")
    assert (result["AncientEpoch"], result["ModernEpoch"]) == ("B.T.", "A.T.")
    assert result["Weekdays"][0] == "First Bell" and len(result["Weekdays"]) == 6
    assert result["DaysInNormalYear"] == 364
    assert [m["Name"] for m in result["Months"]] == ["Sowing", "Growing", "Gathering", "Resting"]
    assert result["Months"][0] == {
        "Order": 1,
        "Name": "Sowing",
        "ShortName": "Sow",
        "Days": 91,
        "SpecialDays": [{"Day": 1, "Name": "First Furrow"}],
    }
    assert result["IntercalaryMonths"] == [
        {
            "Name": "Thanksgiving",
            "ShortName": "Tha",
            "Days": 1,
            "After": "Gathering",
            "SpecialDays": [{"Day": 1, "Name": "Day of Thanks"}],
            "Rule": "Inserted in every year divisible by 5.",
        }
    ]
    assert "Year" not in result and "DaysInYear" not in result


@pytest.mark.parametrize(
    ("year", "name", "days", "months"),
    [
        (1055, "1055 A.T.", 365, ["Sowing", "Growing", "Gathering", "Thanksgiving", "Resting"]),
        (1056, "1056 A.T.", 364, ["Sowing", "Growing", "Gathering", "Resting"]),
        (-4, "5 B.T.", 364, ["Sowing", "Growing", "Gathering", "Resting"]),
        (0, "1 B.T.", 365, ["Sowing", "Growing", "Gathering", "Thanksgiving", "Resting"]),
    ],
)
async def test_calendar_definition_with_a_year_lays_out_that_year(
    ctx: ToolContext, year: int, name: str, days: int, months: list[str]
) -> None:
    result = await _ok(ctx, "CalendarDefinition", {"Id": "HARVEST", "Year": year})
    assert (result["Year"], result["DaysInYear"], result["DaysInNormalYear"]) == (name, days, 364)
    assert [(m["Order"], m["Name"]) for m in result["Months"]] == list(enumerate(months, 1))
    assert "IntercalaryMonths" not in result


async def test_calendar_definition_finds_calendars_by_id_name_and_alias(ctx: ToolContext) -> None:
    for ref in ("1", "solar", "Harbour Solar Calendar", "solar calendar"):
        assert (await _ok(ctx, "CalendarDefinition", {"Id": ref}))["Id"] == 1, ref
    leap = await _ok(ctx, "CalendarDefinition", {"Id": 1, "Year": "1052"})
    assert (leap["DaysInYear"], leap["Months"][-1]["Name"]) == (366, "Tidesend")
    assert await _error(ctx, "CalendarDefinition", {"Id": "lunar"}) == (
        "No calendar identified by 'lunar' exists."
    )
    assert await _error(ctx, "CalendarDefinition", {"Id": "solar", "Year": "soon"}) == (
        "Property 'Year' must be a whole number."
    )
    assert await _error(ctx, "CalendarDefinition", {"Id": "solar", "Year": 1051.5}) == (
        "Property 'Year' must be a whole number."
    )
    assert await _error(ctx, "CalendarDefinition", {"Id": "solar", "Year": 10**7}) == (
        "Year must be between -1000000 and 1000000."
    )
