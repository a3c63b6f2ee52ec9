"""The harbour town's calendars and clock.

Both zones reckon by the Harbour Solar Calendar and the City Bells, but in different time zones:
the Harbour Ward keeps Harbour Tide Time, the Old Town keeps Temple Bell Time, half an hour
ahead. The temple's own Temple Harvest Reckoning is defined but no room keeps it.

Game time runs at the real rate: midnight UTC on 1 January 2026 is midnight (Harbour Tide Time)
at the start of the 1st of Rainmoon, 1051 A.F.
"""

from __future__ import annotations

from datetime import UTC, datetime

from world_adapter.facts import SpecialDay
from world_adapter.sim.calendar import Calendar, IntercalarySpec, MonthSpec
from world_adapter.sim.clock import SECONDS_PER_DAY, GameClock, GameTimeline, TimeZone
from world_adapter.sim.map import HARBOUR_WARD_ID, OLD_TOWN_ID
from world_adapter.sim.timekeeping import Timekeeping, ZoneReckoning

SOLAR_CALENDAR_ID = 1
TEMPLE_CALENDAR_ID = 2
CITY_BELLS_ID = 1
HARBOUR_TIDE_TIME_ID = 1
TEMPLE_BELL_TIME_ID = 2


def _month(name: str, days: int = 30, *special: tuple[int, str]) -> MonthSpec:
    return MonthSpec(name, name[:3], days, tuple(SpecialDay(d, n) for d, n in special))


SOLAR_CALENDAR = Calendar(
    id=SOLAR_CALENDAR_ID,
    name="Harbour Solar Calendar",
    short_name="Solar Calendar",
    alias="solar",
    description=(
        "The sun-reckoned calendar of the harbour towns: twelve months of thirty days, and the "
        "six days of Tidesend after Yearsend in every fourth year. Years are counted from the "
        "founding of the town."
    ),
    ancient_epoch="B.F.",
    modern_epoch="A.F.",
    weekdays=("Tideday", "Netday", "Saltday", "Sailday", "Marketday", "Templeday", "Restday"),
    months=(
        _month("Deepwinter"),
        _month("Thawing"),
        _month("Seedtime", 30, (1, "Sowing Day")),
        _month("Rainmoon", 30, (15, "Festival of Nets")),
        _month("Blossom"),
        _month("Highsun", 30, (15, "Midsummer")),
        _month("Haysel"),
        _month("Reaping"),
        _month("Leafturn", 30, (30, "Harvest Home")),
        _month("Mistfall"),
        _month("Frostfall"),
        _month("Yearsend", 30, (30, "Year's Eve")),
    ),
    intercalary=(
        IntercalarySpec(
            _month("Tidesend", 6, (1, "Night of the Drowned Lanterns")), "Yearsend", every=4
        ),
    ),
    clock_id=CITY_BELLS_ID,
    epoch_year=1000,
    epoch_day=0,
)

TEMPLE_CALENDAR = Calendar(
    id=TEMPLE_CALENDAR_ID,
    name="Temple Harvest Reckoning",
    short_name="Temple Reckoning",
    alias="harvest",
    description=(
        "The liturgical calendar of the priests of the Tides: four seasons of ninety-one days "
        "that time the temple's offerings, with a Day of Thanks after Gathering in every fifth "
        "year. Years are counted from the raising of the temple."
    ),
    ancient_epoch="B.T.",
    modern_epoch="A.T.",
    weekdays=("First Bell", "Second Bell", "Third Bell", "Fourth Bell", "Fifth Bell", "Sixth Bell"),
    months=(
        _month("Sowing", 91, (1, "First Furrow")),
        _month("Growing", 91),
        _month("Gathering", 91, (45, "Blessing of the Sheaves")),
        _month("Resting", 91, (91, "Long Night")),
    ),
    intercalary=(IntercalarySpec(_month("Thanksgiving", 1, (1, "Day of Thanks")), "Gathering", 5),),
    clock_id=CITY_BELLS_ID,
    epoch_year=400,
    epoch_day=-17,
)

CITY_BELLS = GameClock(
    id=CITY_BELLS_ID,
    name="City Bells",
    alias="city",
    description="The hours rung from the temple tower and answered by the harbour's tide-bell.",
    timezones=(
        TimeZone(HARBOUR_TIDE_TIME_ID, "Harbour Tide Time", "HTT", 0),
        TimeZone(TEMPLE_BELL_TIME_ID, "Temple Bell Time", "TBT", 30),
    ),
    day_parts=(
        (0, "the dead of night"),
        (4, "the small hours"),
        (6, "dawn"),
        (8, "morning"),
        (11, "High Sun"),
        (14, "afternoon"),
        (18, "dusk"),
        (20, "evening"),
        (22, "night"),
    ),
)

HARBOUR_TIMEKEEPING = Timekeeping(
    calendars=(SOLAR_CALENDAR, TEMPLE_CALENDAR),
    clocks=(CITY_BELLS,),
    reckonings=(
        ZoneReckoning(HARBOUR_WARD_ID, (SOLAR_CALENDAR_ID,), (HARBOUR_TIDE_TIME_ID,)),
        ZoneReckoning(OLD_TOWN_ID, (SOLAR_CALENDAR_ID,), (TEMPLE_BELL_TIME_ID,)),
    ),
    timeline=GameTimeline(
        real_anchor=datetime(2026, 1, 1, tzinfo=UTC),
        game_anchor=SOLAR_CALENDAR.day_number(1051, 4, 1) * SECONDS_PER_DAY,
    ),
)
