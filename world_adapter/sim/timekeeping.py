"""The sim world's timekeeping: which calendars and time zones each zone keeps, and game time.

A room keeps the calendars of its zone (its first calendar first); each calendar is read with
its clock in the zone's time zone for that clock. Saved mud datetimes (the text a
``MudDateTime`` prog argument carries) are written ``<calendar> <day>/<month>/<year>
<h>:<mm>:<ss> <zone>``, e.g. ``solar 3/4/1051 14:20:15 HTT``, or ``never``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from world_adapter.errors import WorldCommandError
from world_adapter.facts import DateTimeReading
from world_adapter.sim.calendar import YEAR_LIMIT, Calendar, CalendarDate
from world_adapter.sim.clock import GameClock, GameTimeline, TimeZone

MUD_DATETIME_FORMAT = "<calendar> <day>/<month>/<year> <h>:<mm>:<ss> <zone>"
_MUD_DATETIME = re.compile(
    r"(?P<calendar>\S+)\s+(?P<day>[0-9]+)/(?P<month>[0-9]+)/(?P<year>-?[0-9]+)\s+"
    r"(?P<hour>[0-9]{1,2}):(?P<minute>[0-9]{2}):(?P<second>[0-9]{2})\s+(?P<zone>\S+)"
)


@dataclass(frozen=True)
class ZoneReckoning:
    """How a zone keeps time.

    Attributes:
        calendar_ids: The calendars of the zone's rooms, the one they use first first.
        timezone_ids: The zone's time zone for each clock those calendars read.
    """

    zone_id: int
    calendar_ids: tuple[int, ...]
    timezone_ids: tuple[int, ...]


@dataclass(frozen=True)
class MudMoment:
    """A moment of game time by one calendar, as a saved mud datetime names it."""

    calendar: Calendar
    clock: GameClock
    date: CalendarDate
    second_of_day: int
    timezone: TimeZone

    def describe(self) -> str:
        """E.g. ``2:20:15 p.m. HTT on Netday, the 3rd of Rainmoon, 1051 A.F.``."""
        when = self.clock.long_time(self.second_of_day, self.timezone)
        return f"{when} on {self.calendar.long_date(self.date)}"


class Timekeeping:
    """Calendars, clocks, each zone's reckoning, and the mapping from real to game time.

    Raises:
        ValueError: If ids, names or aliases repeat, a calendar's clock or a zone's calendar or
            time zone does not exist, or a zone lacks (or doubles) the time zone for one of its
            calendars' clocks.
    """

    def __init__(
        self,
        calendars: Iterable[Calendar],
        clocks: Iterable[GameClock],
        reckonings: Iterable[ZoneReckoning],
        timeline: GameTimeline,
    ) -> None:
        self.calendars = tuple(calendars)
        self.clocks = tuple(clocks)
        self.timeline = timeline
        _unique("calendar id", [c.id for c in self.calendars])
        _unique("calendar name", [n.casefold() for c in self.calendars for n in set(c.names)])
        _unique("clock id", [c.id for c in self.clocks])
        _unique("clock name", [n.casefold() for c in self.clocks for n in set(c.names)])
        _unique("time zone id", [z.id for c in self.clocks for z in c.timezones])
        clocks_by_id = {c.id: c for c in self.clocks}
        for calendar in self.calendars:
            if calendar.clock_id not in clocks_by_id:
                raise ValueError(
                    f"Calendar {calendar.name} reads clock {calendar.clock_id}, which does not "
                    "exist."
                )
        self._zones: dict[int, tuple[tuple[Calendar, GameClock, TimeZone], ...]] = {}
        for reckoning in reckonings:
            if reckoning.zone_id in self._zones:
                raise ValueError(f"Zone {reckoning.zone_id} has two reckonings.")
            self._zones[reckoning.zone_id] = tuple(
                self._context(reckoning, calendar_id, clocks_by_id)
                for calendar_id in reckoning.calendar_ids
            )

    def _context(
        self, reckoning: ZoneReckoning, calendar_id: int, clocks: dict[int, GameClock]
    ) -> tuple[Calendar, GameClock, TimeZone]:
        calendar = next((c for c in self.calendars if c.id == calendar_id), None)
        if calendar is None:
            raise ValueError(
                f"Zone {reckoning.zone_id} keeps calendar {calendar_id}, which does not exist."
            )
        clock = clocks[calendar.clock_id]
        zones = [z for z in clock.timezones if z.id in reckoning.timezone_ids]
        if len(zones) != 1:
            raise ValueError(
                f"Zone {reckoning.zone_id} needs exactly one time zone of clock {clock.name} "
                f"for calendar {calendar.name}, not {len(zones)}."
            )
        return calendar, clock, zones[0]

    @property
    def zone_ids(self) -> frozenset[int]:
        """The zones that keep time."""
        return frozenset(self._zones)

    def readings(self, zone_id: int, now: datetime) -> tuple[DateTimeReading, ...]:
        """The date and time at real moment `now` by each calendar of a zone (none: ``()``)."""
        seconds = self.timeline.game_seconds(now)
        readings = []
        for calendar, clock, zone in self._zones.get(zone_id, ()):
            day, second = clock.local(seconds, zone)
            date = calendar.date_of(day)
            readings.append(
                DateTimeReading(
                    calendar_id=calendar.id,
                    calendar_name=calendar.name,
                    clock_id=clock.id,
                    clock_name=clock.name,
                    timezone_id=zone.id,
                    timezone_name=zone.name,
                    date_long=calendar.long_date(date),
                    date_short=calendar.short_date(date),
                    time_long=clock.long_time(second, zone),
                    time_short=clock.short_time(second),
                    time_vague=clock.vague_time(second),
                )
            )
        return tuple(readings)

    def find_calendar(self, ref: str) -> Calendar | None:
        """A calendar by id, or by name, short name or alias (case-insensitively)."""
        text = ref.strip()
        if text.lstrip("-").isdigit():
            return next((c for c in self.calendars if c.id == int(text)), None)
        wanted = text.casefold()
        return next((c for c in self.calendars if wanted in (n.casefold() for n in c.names)), None)

    def parse_mud_datetime(self, text: str) -> MudMoment | None:
        """A saved mud datetime (see the module docstring); None for ``never``.

        Raises:
            WorldCommandError: If the text does not follow the format or names a calendar,
                date, time or time zone that does not exist.
        """
        stripped = text.strip()
        if stripped.casefold() == "never":
            return None
        match = _MUD_DATETIME.fullmatch(stripped)
        if match is None:
            raise WorldCommandError(
                f"'{text}' is not a mud datetime: expected never or {MUD_DATETIME_FORMAT}, "
                "e.g. solar 3/4/1051 14:20:15 HTT."
            )
        calendar = self.find_calendar(match["calendar"])
        if calendar is None:
            raise WorldCommandError(f"No calendar identified by '{match['calendar']}' exists.")
        clock = next(c for c in self.clocks if c.id == calendar.clock_id)
        zone = clock.timezone(match["zone"])
        if zone is None:
            known = ", ".join(z.short_name for z in clock.timezones)
            raise WorldCommandError(
                f"Clock {clock.name} has no time zone '{match['zone']}' (it has {known})."
            )
        year = int(match["year"])
        hour, minute, second = (int(match[k]) for k in ("hour", "minute", "second"))
        if abs(year) > YEAR_LIMIT or hour > 23 or minute > 59 or second > 59:
            raise WorldCommandError(f"'{text}' is out of range for {calendar.name}.")
        try:
            day = calendar.day_number(year, int(match["month"]), int(match["day"]))
        except ValueError as exc:
            raise WorldCommandError(f"'{text}' is not a date of {calendar.name}: {exc}") from None
        return MudMoment(
            calendar, clock, calendar.date_of(day), (hour * 60 + minute) * 60 + second, zone
        )


def _unique(what: str, values: list[int] | list[str]) -> None:
    if len(set(values)) != len(values):
        raise ValueError(f"Every {what} must be unique.")
