"""Evennia's game time as the bridge's one calendar, clock and time zone.

Pure Python. Evennia's default game time (``evennia.utils.gametime``) is a POSIX timestamp that
runs ``TIME_FACTOR`` times faster than real time from ``TIME_GAME_EPOCH``; read as a Gregorian
date in UTC it gives a date and a time. Games with their own calendar can replace these
functions.
"""

from __future__ import annotations

import calendar as gregorian
from datetime import datetime
from typing import Any

CALENDAR_ID = 1
CLOCK_ID = 1
TIMEZONE_ID = 1
CALENDAR_NAME = "Gregorian"
CALENDAR_ALIAS = "gregorian"
CLOCK_NAME = "Game time"
TIMEZONE_NAME = "UTC"

MONTHS = (
    ("January", "Jan"), ("February", "Feb"), ("March", "Mar"), ("April", "Apr"), ("May", "May"),
    ("June", "Jun"), ("July", "Jul"), ("August", "Aug"), ("September", "Sep"),
    ("October", "Oct"), ("November", "Nov"), ("December", "Dec"),
)  # fmt: skip
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_VAGUE = (
    (5, "night"), (7, "dawn"), (12, "morning"), (14, "midday"), (18, "afternoon"),
    (20, "dusk"), (23, "evening"), (24, "night"),
)  # fmt: skip


def _ordinal(day: int) -> str:
    suffix = "th" if 10 <= day % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def vague_time(hour: int) -> str:
    """A rough time of day: night, dawn, morning, midday, afternoon, dusk or evening."""
    return next(name for end, name in _VAGUE if hour < end)


def reading(moment: datetime) -> dict[str, Any]:
    """The date and time at `moment` (a game time) as a *date_time_reading*."""
    return {
        "calendar_id": CALENDAR_ID,
        "calendar_name": CALENDAR_NAME,
        "clock_id": CLOCK_ID,
        "clock_name": CLOCK_NAME,
        "timezone_id": TIMEZONE_ID,
        "timezone_name": TIMEZONE_NAME,
        "date_long": (
            f"{WEEKDAYS[moment.weekday()]}, the {_ordinal(moment.day)} of "
            f"{MONTHS[moment.month - 1][0]}, {moment.year}"
        ),
        "date_short": moment.strftime("%Y-%m-%d"),
        "time_long": moment.strftime("%H:%M:%S"),
        "time_short": moment.strftime("%H:%M"),
        "time_vague": vague_time(moment.hour),
    }


def matches(ref: str) -> bool:
    """Whether `ref` names this calendar (its id, name or alias, any case)."""
    text = ref.strip().lower()
    return text in {str(CALENDAR_ID), CALENDAR_NAME.lower(), CALENDAR_ALIAS}


def _months(year: int) -> list[dict[str, Any]]:
    return [
        {
            "order": n,
            "name": name,
            "short_name": short,
            "days": gregorian.monthrange(year, n)[1],
            "special_days": [],
        }
        for n, (name, short) in enumerate(MONTHS, start=1)
    ]


def calendar_info(year: int | None = None) -> dict[str, Any]:
    """The calendar as a *calendar_info*; with `year`, that year laid out too.

    Raises:
        ValueError: `year` is outside 1..9999.
    """
    if year is not None and not 1 <= year <= 9999:
        raise ValueError(f"The {CALENDAR_NAME} calendar covers years 1 to 9999, not {year}.")
    info: dict[str, Any] = {
        "id": CALENDAR_ID,
        "name": CALENDAR_NAME,
        "short_name": CALENDAR_NAME,
        "alias": CALENDAR_ALIAS,
        "description": "Evennia's game time read as a Gregorian date in UTC.",
        "ancient_epoch": "BC",
        "modern_epoch": "AD",
        "weekdays": list(WEEKDAYS),
        "days_in_normal_year": 365,
        "months": _months(2001),  # a normal year
        "intercalary_months": [],
        "year": None,
    }
    if year is not None:
        info["year"] = {
            "year": year,
            "name": f"{year} AD",
            "days": 366 if gregorian.isleap(year) else 365,
            "months": _months(year),
        }
    return info
