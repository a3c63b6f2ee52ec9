"""Date and time tools: the in-game date and time, and calendar definitions.

A room may keep several calendars; each gives a (calendar, clock, time zone) context. The
storyteller's default context comes from the rooms it watches (every room when it watches
nothing): if they all share one context, `CurrentDateTime` reads it; otherwise the model must
ask `DateTimeForTarget` about a character or a room, which reads that place's first calendar.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from storyteller_daemon.agent.tools.arguments import optional_id, required_text
from storyteller_daemon.agent.tools.base import Tool
from storyteller_daemon.agent.tools.context import ToolContext, world_character, world_room
from storyteller_daemon.domain.argument_limits import WORD_CHARS
from storyteller_daemon.errors import ToolError
from world_adapter.facts import CalendarInfo, CalendarMonth, DateTimeReading, SpecialDay

MULTIPLE_CONTEXTS = (
    "Multiple calendar/clock/timezone contexts are in use. Use DateTimeForTarget with "
    "CharacterId or RoomId."
)
NO_ROOMS = "There are no monitored rooms to evaluate date and time for."
BOTH_TARGETS = "Specify either CharacterId or RoomId, but not both."


async def watched_rooms(ctx: ToolContext) -> frozenset[int] | None:
    """The rooms the turn's storyteller watches now; None when it watches nothing (all rooms)."""
    surveillance = ctx.current.surveillance
    if surveillance.is_empty:
        return None
    return surveillance.cells(await ctx.services.world.zones())


def date_time_payload(reading: DateTimeReading) -> dict[str, Any]:
    """FutureMUD's date-time result for one reading."""
    return {
        "CalendarId": reading.calendar_id,
        "CalendarName": reading.calendar_name,
        "ClockId": reading.clock_id,
        "ClockName": reading.clock_name,
        "TimeZoneId": reading.timezone_id,
        "TimeZoneName": reading.timezone_name,
        "DateLong": reading.date_long,
        "DateShort": reading.date_short,
        "TimeLong": reading.time_long,
        "TimeShort": reading.time_short,
        "TimeVague": reading.time_vague,
        "DateTime": f"{reading.time_long} on {reading.date_long}",
    }


async def current_date_time(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """CurrentDateTime."""
    rooms = await watched_rooms(ctx)
    if rooms is not None and not rooms:
        raise ToolError(NO_ROOMS)
    times = await ctx.services.world.room_times(rooms)
    contexts: dict[tuple[int, int, int], DateTimeReading] = {}
    for readings in times.values():
        for reading in readings:
            contexts.setdefault(reading.context, reading)
    if not contexts:
        raise ToolError(NO_ROOMS if not times else "None of the monitored rooms keeps a calendar.")
    if len(contexts) > 1:
        raise ToolError(MULTIPLE_CONTEXTS)
    return date_time_payload(next(iter(contexts.values())))


async def _first_reading(ctx: ToolContext, room_id: int) -> DateTimeReading | None:
    readings = (await ctx.services.world.room_times([room_id])).get(room_id, ())
    return readings[0] if readings else None


async def date_time_for_target(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """DateTimeForTarget: a character's or a room's first calendar; 0 counts as given."""
    character_id = optional_id(arguments, "CharacterId")
    room_id = optional_id(arguments, "RoomId")
    if character_id is not None and room_id is not None:
        raise ToolError(BOTH_TARGETS)
    if character_id is not None:
        character = await world_character(ctx, character_id)
        if character is None:
            raise ToolError(f"No character with id {character_id} exists.")
        if character.location_id is None:
            raise ToolError(f"Character {character_id} has no location.")
        reading = await _first_reading(ctx, character.location_id)
        if reading is None:
            raise ToolError(f"Character {character_id} location has no calendar.")
        return {
            **date_time_payload(reading),
            "CharacterId": character.id,
            "CharacterName": character.name,
            "RoomId": character.location_id,
            "RoomName": character.location_name,
        }
    if room_id is not None:
        room = await world_room(ctx, room_id)
        if room is None:
            raise ToolError(f"No room with id {room_id} exists.")
        reading = await _first_reading(ctx, room_id)
        if reading is None:
            raise ToolError(f"Room {room_id} has no calendar.")
        return {**date_time_payload(reading), "RoomId": room.id, "RoomName": room.name}
    return await current_date_time(arguments, ctx)


def _optional_year(arguments: Mapping[str, Any]) -> int | None:
    value = arguments.get("Year")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ToolError("Property 'Year' must be a whole number.")
    try:
        year = float(value)
    except (ValueError, OverflowError):  # not a number, or past what a float holds
        raise ToolError("Property 'Year' must be a whole number.") from None
    if not year.is_integer():
        raise ToolError("Property 'Year' must be a whole number.")
    return int(year)


def _special(days: tuple[SpecialDay, ...]) -> list[dict[str, Any]]:
    return [{"Day": d.day, "Name": d.name} for d in days]


def _months(months: tuple[CalendarMonth, ...]) -> list[dict[str, Any]]:
    return [
        {
            "Order": m.order,
            "Name": m.name,
            "ShortName": m.short_name,
            "Days": m.days,
            "SpecialDays": _special(m.special_days),
        }
        for m in months
    ]


def calendar_payload(calendar: CalendarInfo) -> dict[str, Any]:
    """FutureMUD's CalendarDefinition result, with or without a year."""
    payload: dict[str, Any] = {
        "Id": calendar.id,
        "Name": calendar.name,
        "ShortName": calendar.short_name,
        "Alias": calendar.alias,
        "Description": calendar.description,
        "AncientEpoch": calendar.ancient_epoch,
        "ModernEpoch": calendar.modern_epoch,
        "Weekdays": list(calendar.weekdays),
        "DaysInNormalYear": calendar.days_in_normal_year,
    }
    if calendar.year is not None:
        payload["Year"] = calendar.year.name
        payload["DaysInYear"] = calendar.year.days
        payload["Months"] = _months(calendar.year.months)
        return payload
    payload["Months"] = _months(calendar.months)
    payload["IntercalaryMonths"] = [
        {
            "Name": m.name,
            "ShortName": m.short_name,
            "Days": m.days,
            "After": m.after,
            "SpecialDays": _special(m.special_days),
            "Rule": m.rule,
        }
        for m in calendar.intercalary_months
    ]
    return payload


async def calendar_definition(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    """CalendarDefinition."""
    ref = required_text(arguments, "Id")
    year = _optional_year(arguments)
    calendar = await ctx.services.world.calendar(ref, year)
    if calendar is None:
        raise ToolError(f"No calendar identified by '{ref}' exists.")
    return calendar_payload(calendar)


_TARGET = "Use CharacterId or RoomId, not both; leave both null for the default context."

TOOLS: tuple[Tool, ...] = (
    Tool.define(
        "CurrentDateTime",
        "Returns the in-game date, time and time zone of the rooms you watch, when they all "
        "share one calendar, clock and time zone; otherwise use DateTimeForTarget.",
        current_date_time,
    ),
    Tool.define(
        "DateTimeForTarget",
        "Returns the in-game date and time where a character is, or in a room (with neither, "
        "the same as CurrentDateTime).",
        date_time_for_target,
        {
            "CharacterId": {"type": "integer", "description": f"A character. {_TARGET}"},
            "RoomId": {"type": "integer", "description": f"A room. {_TARGET}"},
        },
    ),
    Tool.define(
        "CalendarDefinition",
        "Describes a calendar: its months and their special days, intercalary months and the "
        "rule for them, weekdays and eras; with Year, that year's months in order.",
        calendar_definition,
        {
            "Id": {"type": "string", "description": "The calendar's id, alias or name."},
            "Year": {
                "type": "integer",
                "description": "Lay out this year's months, intercalary ones included.",
            },
        },
        required=("Id",),
        limits={"Id": WORD_CHARS},
    ),
)
