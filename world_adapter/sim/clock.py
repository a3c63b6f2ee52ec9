"""The sim world's game clocks: a 24-hour day, time zones, and how times of day are written.

A `GameClock` is part of the game's calendar (what the world's clocks show), not a source of
time: the daemon's time comes from `storyteller_daemon.clock.Clock`.

Game time runs on one absolute scale of seconds (`GameTimeline`) that every clock reads, each
shifted by the offset of the time zone it is read in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

SECONDS_PER_DAY = 24 * 60 * 60


@dataclass(frozen=True)
class TimeZone:
    """A time zone of one clock: its offset from the clock's reference time, in minutes.

    Attributes:
        short_name: The abbreviation written after times, e.g. ``HTT``.
    """

    id: int
    name: str
    short_name: str
    offset_minutes: int

    def __post_init__(self) -> None:
        if abs(self.offset_minutes) >= 24 * 60:
            raise ValueError(f"Time zone {self.name} is offset by a day or more.")


@dataclass(frozen=True)
class GameClock:
    """A game clock with its time zones and its names for the parts of the day.

    Attributes:
        alias: A short unique word for the clock (prog arguments).
        timezones: The zones the clock can be read in.
        day_parts: ``(first hour, name)`` pairs in increasing hour order, the first at hour 0:
            how a time of day is put roughly ("High Sun", "dusk").

    Raises:
        ValueError: If there are no time zones, zone ids or names repeat, or the day parts do
            not start at hour 0 and climb through the day.
    """

    id: int
    name: str
    alias: str
    description: str
    timezones: tuple[TimeZone, ...]
    day_parts: tuple[tuple[int, str], ...]

    def __post_init__(self) -> None:
        if not self.timezones:
            raise ValueError(f"Clock {self.name} needs at least one time zone.")
        for values in ([z.id for z in self.timezones], [z.short_name for z in self.timezones]):
            if len(set(values)) != len(values):
                raise ValueError(f"Clock {self.name} repeats a time zone id or short name.")
        hours = [hour for hour, _ in self.day_parts]
        if not hours or hours[0] != 0 or hours != sorted(set(hours)) or hours[-1] > 23:
            raise ValueError(f"The day parts of clock {self.name} must climb from hour 0 to 23.")

    @property
    def names(self) -> tuple[str, ...]:
        """The names a prog argument may give the clock by."""
        return (self.name, self.alias)

    def timezone(self, ref: int | str) -> TimeZone | None:
        """One of the clock's time zones by id or by short name (case-insensitively)."""
        if isinstance(ref, str):
            wanted = ref.strip().casefold()
            return next((z for z in self.timezones if z.short_name.casefold() == wanted), None)
        return next((z for z in self.timezones if z.id == ref), None)

    @staticmethod
    def local(game_seconds: int, zone: TimeZone) -> tuple[int, int]:
        """The (absolute day, second of that day) at `game_seconds` in `zone`."""
        return divmod(game_seconds + zone.offset_minutes * 60, SECONDS_PER_DAY)

    @staticmethod
    def long_time(second_of_day: int, zone: TimeZone) -> str:
        """E.g. ``2:05:09 p.m. HTT``; midnight is ``12:00:00 a.m.``."""
        hour, minute, second = _hms(second_of_day)
        half = "a.m." if hour < 12 else "p.m."
        return f"{(hour - 1) % 12 + 1}:{minute:02d}:{second:02d} {half} {zone.short_name}"

    @staticmethod
    def short_time(second_of_day: int) -> str:
        """E.g. ``14:05``."""
        hour, minute, _ = _hms(second_of_day)
        return f"{hour:02d}:{minute:02d}"

    def vague_time(self, second_of_day: int) -> str:
        """The part of the day, e.g. ``High Sun``."""
        hour = second_of_day // 3600
        return next(name for first, name in reversed(self.day_parts) if first <= hour)


def _hms(second_of_day: int) -> tuple[int, int, int]:
    minutes, second = divmod(second_of_day, 60)
    hour, minute = divmod(minutes, 60)
    return hour, minute, second


@dataclass(frozen=True)
class GameTimeline:
    """How the world's real clock maps to game time.

    Attributes:
        real_anchor: A real moment (timezone-aware).
        game_anchor: The game's absolute second at `real_anchor`.
        rate: Game seconds per real second.

    Raises:
        ValueError: If the anchor is naive or the rate is not positive.
    """

    real_anchor: datetime
    game_anchor: int
    rate: int = 1

    def __post_init__(self) -> None:
        if self.real_anchor.tzinfo is None:
            raise ValueError("The game timeline's real anchor needs a timezone.")
        if self.rate < 1:
            raise ValueError(f"The game time rate must be positive, not {self.rate}.")

    def game_seconds(self, now: datetime) -> int:
        """The game's absolute second at the real moment `now` (rounded down)."""
        return self.game_anchor + math.floor((now - self.real_anchor).total_seconds() * self.rate)
