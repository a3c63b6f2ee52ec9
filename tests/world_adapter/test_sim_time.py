"""The sim world's calendars, clock, time zones and game time, and the world's time queries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from world_adapter.errors import WorldCommandError
from world_adapter.facts import SpecialDay
from world_adapter.sim import SimWorld
from world_adapter.sim.calendar import Calendar, IntercalarySpec, MonthSpec, ordinal
from world_adapter.sim.clock import GameClock, GameTimeline, TimeZone
from world_adapter.sim.harbour_map import HARBOUR_TOWN_MAP
from world_adapter.sim.harbour_people import HARBOUR_TOWN_PEOPLE
from world_adapter.sim.harbour_time import (
    CITY_BELLS,
    HARBOUR_TIMEKEEPING,
    SOLAR_CALENDAR,
    TEMPLE_CALENDAR,
)
from world_adapter.sim.timekeeping import Timekeeping, ZoneReckoning

NOON = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
SOLAR, TEMPLE = SOLAR_CALENDAR, TEMPLE_CALENDAR


def test_days_and_dates_convert_both_ways_across_leap_years() -> None:
    for calendar in (SOLAR, TEMPLE):
        for day in range(-20_000, 20_000, 97):
            date = calendar.date_of(day)
            assert calendar.day_number(date.year, date.month.order, date.day) == day
    assert SOLAR.date_of(0).year == 1000 and SOLAR.date_of(-1).year == 999
    far = SOLAR.date_of(10**8)
    assert SOLAR.day_number(far.year, far.month.order, far.day) == 10**8


def test_years_have_their_intercalary_months_in_place() -> None:
    assert SOLAR.days_in_normal_year == 360
    assert [SOLAR.days_in_year(y) for y in (1051, 1052)] == [360, 366]
    leap = SOLAR.year_months(1052)
    assert (leap[-1].order, leap[-1].name, leap[-1].days) == (13, "Tidesend", 6)
    thanks = TEMPLE.year_months(1055)
    assert [m.name for m in thanks] == ["Sowing", "Growing", "Gathering", "Thanksgiving", "Resting"]
    assert SOLAR.days_between(1000, 1004) == 4 * 360 + 6
    assert SOLAR.days_between(1004, 1000) == -(4 * 360 + 6)
    opening = Calendar(
        9, "Opening", "Open", "open", "", "B", "A", ("Day",), (MonthSpec("Only", "Onl", 10),),
        clock_id=1, intercalary=(IntercalarySpec(MonthSpec("First", "Fir", 2), None, 2),),
    )  # fmt: skip
    assert [m.name for m in opening.year_months(2)] == ["First", "Only"]
    assert opening.info().intercalary_months[0].after is None


def test_dates_are_written_with_weekday_ordinal_month_and_era() -> None:
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th",
    ]  # fmt: skip
    day = SOLAR.day_number(1051, 4, 3)
    date = SOLAR.date_of(day)
    assert SOLAR.long_date(date) == "Netday, the 3rd of Rainmoon, 1051 A.F."
    assert SOLAR.short_date(date) == "3/4/1051"
    assert SOLAR.date_of(day + 1).weekday == "Saltday"
    assert SOLAR.date_of(day + 7).weekday == "Netday"
    assert [SOLAR.year_name(y) for y in (1, 0, -2)] == ["1 A.F.", "1 B.F.", "3 B.F."]


def test_the_clock_writes_times_and_names_the_part_of_the_day() -> None:
    harbour = CITY_BELLS.timezone("htt")
    assert harbour is not None and CITY_BELLS.timezone(2) is not None
    assert CITY_BELLS.timezone("xyz") is None
    assert GameClock.long_time(0, harbour) == "12:00:00 a.m. HTT"
    assert GameClock.long_time(13 * 3600 + 5 * 60 + 9, harbour) == "1:05:09 p.m. HTT"
    assert GameClock.short_time(13 * 3600 + 5 * 60) == "13:05"
    assert [CITY_BELLS.vague_time(h * 3600) for h in (0, 5, 12, 19, 23)] == [
        "the dead of night", "the small hours", "High Sun", "dusk", "night",
    ]  # fmt: skip


def test_readings_follow_the_real_clock_and_each_zones_time_zone() -> None:
    (harbour,) = HARBOUR_TIMEKEEPING.readings(1, NOON)
    (old_town,) = HARBOUR_TIMEKEEPING.readings(2, NOON)
    assert (harbour.date_long, harbour.time_long) == (
        "Tideday, the 1st of Reaping, 1051 A.F.",
        "12:00:00 p.m. HTT",
    )
    assert (old_town.time_short, old_town.timezone_name) == ("12:30", "Temple Bell Time")
    assert harbour.context == (1, 1, 1) and old_town.context == (1, 1, 2)
    # Late in the evening the Old Town, half an hour ahead, is already in the next day.
    late = NOON + timedelta(hours=11, minutes=45)
    (harbour,) = HARBOUR_TIMEKEEPING.readings(1, late)
    (old_town,) = HARBOUR_TIMEKEEPING.readings(2, late)
    assert (harbour.date_short, harbour.time_short) == ("1/8/1051", "23:45")
    assert (old_town.date_short, old_town.time_short) == ("2/8/1051", "00:15")
    assert HARBOUR_TIMEKEEPING.readings(99, NOON) == ()


def test_the_timeline_runs_at_its_rate_from_its_anchor() -> None:
    timeline = GameTimeline(NOON, 1_000, rate=4)
    assert timeline.game_seconds(NOON + timedelta(seconds=10.9)) == 1_043
    assert timeline.game_seconds(NOON - timedelta(seconds=1)) == 996
    with pytest.raises(ValueError, match="needs a timezone"):
        GameTimeline(datetime(2026, 1, 1), 0)
    with pytest.raises(ValueError, match="rate must be positive"):
        GameTimeline(NOON, 0, rate=0)


def test_saved_mud_datetimes_are_read_or_refused() -> None:
    assert HARBOUR_TIMEKEEPING.parse_mud_datetime(" Never ") is None
    moment = HARBOUR_TIMEKEEPING.parse_mud_datetime("harvest 45/3/1055 06:00:00 tbt")
    assert moment is not None
    assert moment.describe() == "6:00:00 a.m. TBT on Third Bell, the 45th of Gathering, 1055 A.T."
    for text, message in (
        ("yesterday", "is not a mud datetime"),
        ("solar 3/4/1051 25:00:00 HTT", "out of range"),
        ("solar 3/13/1051 10:00:00 HTT", "1051 A.F. has no month 13"),
        ("solar 3/4/2000000 10:00:00 HTT", "out of range"),
        ("9 3/4/1051 10:00:00 HTT", "No calendar identified by '9' exists"),
    ):
        with pytest.raises(WorldCommandError, match=message):
            HARBOUR_TIMEKEEPING.parse_mud_datetime(text)


def test_inconsistent_time_data_is_refused() -> None:
    month = MonthSpec("Only", "Onl", 10)
    with pytest.raises(ValueError, match="falls on day 11 of Only"):
        MonthSpec("Only", "Onl", 10, (SpecialDay(11, "Feast"),))
    with pytest.raises(ValueError, match="repeats a month name"):
        Calendar(9, "C", "C", "c", "", "B", "A", ("D",), (month, month), clock_id=1)
    with pytest.raises(ValueError, match="follows 'Never', which is not a month"):
        Calendar(9, "C", "C", "c", "", "B", "A", ("D",), (month,), clock_id=1,
                 intercalary=(IntercalarySpec(MonthSpec("X", "X", 1), "Never", 2),))  # fmt: skip
    with pytest.raises(ValueError, match="must climb from hour 0"):
        GameClock(9, "K", "k", "", (TimeZone(1, "Z", "Z", 0),), ((1, "late"),))
    with pytest.raises(ValueError, match="offset by a day or more"):
        TimeZone(1, "Z", "Z", 24 * 60)
    timeline = HARBOUR_TIMEKEEPING.timeline
    with pytest.raises(ValueError, match="Every calendar id must be unique"):
        Timekeeping((SOLAR, SOLAR), (CITY_BELLS,), (), timeline)
    with pytest.raises(ValueError, match="keeps calendar 7, which does not exist"):
        Timekeeping((SOLAR,), (CITY_BELLS,), (ZoneReckoning(1, (7,), (1,)),), timeline)
    with pytest.raises(ValueError, match="needs exactly one time zone of clock City Bells"):
        Timekeeping((SOLAR,), (CITY_BELLS,), (ZoneReckoning(1, (1,), (1, 2)),), timeline)
    with pytest.raises(ValueError, match="reads clock 1, which does not exist"):
        Timekeeping((SOLAR,), (), (), timeline)


async def test_room_times_cover_every_room_or_the_rooms_asked_for() -> None:
    world = SimWorld.harbour_town(clock=lambda: NOON)
    everywhere = await world.room_times()
    assert sorted(everywhere) == sorted(r.id for r in HARBOUR_TOWN_MAP.rooms)
    assert everywhere[101][0].timezone_name == "Harbour Tide Time"
    assert everywhere[205][0].timezone_name == "Temple Bell Time"
    some = await world.room_times({202, 999})
    assert list(some) == [202]
    world.add_zone_cell(1, 202)  # rooms keep the time of the zone they are in now
    assert (await world.room_times([202]))[202][0].timezone_name == "Harbour Tide Time"
    bare = SimWorld(HARBOUR_TOWN_MAP, HARBOUR_TOWN_PEOPLE, (), clock=lambda: NOON)
    assert (await bare.room_times([101])) == {101: ()}
    assert await bare.calendar("solar") is None


async def test_calendars_are_found_by_id_name_short_name_or_alias() -> None:
    world = SimWorld.harbour_town()
    for ref in ("2", "harvest", "HARVEST", "Temple Harvest Reckoning", "temple reckoning"):
        found = await world.calendar(ref)
        assert found is not None and found.id == 2, ref
    assert await world.calendar("Temple") is None  # no prefix matching here
    laid_out = await world.calendar("solar", 1052)
    assert laid_out is not None and laid_out.year is not None
    assert (laid_out.year.name, laid_out.year.days) == ("1052 A.F.", 366)
    with pytest.raises(WorldCommandError, match="Year must be between"):
        await world.calendar("solar", -(10**7))
