"""Calendars of the sim world: months, intercalary months, weekdays, eras and date arithmetic.

Days are counted on one absolute scale shared by every calendar (day 0 is an arbitrary day), so
that two calendars fed by the same clock always agree on which day it is. A calendar says which
absolute day its `Calendar.epoch_year` begins on and counts years from there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from world_adapter.facts import (
    CalendarInfo,
    CalendarMonth,
    CalendarYear,
    IntercalaryMonth,
    SpecialDay,
)

YEAR_LIMIT = 1_000_000
"""The largest year (and the smallest, negated) a calendar lays out or reads dates in."""


@dataclass(frozen=True)
class MonthSpec:
    """A month as the calendar defines it.

    Raises:
        ValueError: If the month has no days or a special day falls outside it.
    """

    name: str
    short_name: str
    days: int
    special_days: tuple[SpecialDay, ...] = ()

    def __post_init__(self) -> None:
        if self.days < 1:
            raise ValueError(f"Month {self.name} must have at least one day.")
        for special in self.special_days:
            if not 1 <= special.day <= self.days:
                raise ValueError(
                    f"Special day {special.name} falls on day {special.day} of {self.name}, "
                    f"which has {self.days} days."
                )

    def placed(self, order: int) -> CalendarMonth:
        """This month as the `order`-th month of a year."""
        return CalendarMonth(order, self.name, self.short_name, self.days, self.special_days)


@dataclass(frozen=True)
class IntercalarySpec:
    """A month inserted in the years whose number is divisible by `every`.

    Attributes:
        after: The regular month it follows; None to open the year.
    """

    month: MonthSpec
    after: str | None
    every: int

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"Intercalary month {self.month.name} needs a positive period.")

    def applies(self, year: int) -> bool:
        """Whether `year` has this month."""
        return year % self.every == 0

    def rule(self) -> str:
        """Which years have the month, in words."""
        return f"Inserted in every year divisible by {self.every}."


@dataclass(frozen=True)
class CalendarDate:
    """A day of a calendar: its year, the month's position in that year, and the day."""

    year: int
    month: CalendarMonth
    day: int
    weekday: str


@dataclass(frozen=True)
class Calendar:
    """A calendar fed by one clock.

    Attributes:
        alias: A short unique word for the calendar (prog arguments, saved mud datetimes).
        ancient_epoch: The era suffix of years up to 0 (year 0 is written ``1`` of it).
        modern_epoch: The era suffix of years from 1 on.
        epoch_year: The year that begins on absolute day `epoch_day`.
        clock_id: The clock whose time of day goes with the calendar's dates.

    Raises:
        ValueError: If there are no months or weekdays, month names repeat, or an intercalary
            month follows a month the calendar does not have.
    """

    id: int
    name: str
    short_name: str
    alias: str
    description: str
    ancient_epoch: str
    modern_epoch: str
    weekdays: tuple[str, ...]
    months: tuple[MonthSpec, ...]
    clock_id: int
    intercalary: tuple[IntercalarySpec, ...] = ()
    epoch_year: int = 1
    epoch_day: int = 0

    def __post_init__(self) -> None:
        if not self.months or not self.weekdays:
            raise ValueError(f"Calendar {self.name} needs months and weekdays.")
        regular = [m.name.casefold() for m in self.months]
        names = regular + [i.month.name.casefold() for i in self.intercalary]
        if len(set(names)) != len(names):
            raise ValueError(f"Calendar {self.name} repeats a month name.")
        for extra in self.intercalary:
            if extra.after is not None and extra.after.casefold() not in regular:
                raise ValueError(
                    f"Intercalary month {extra.month.name} follows '{extra.after}', which is "
                    f"not a month of {self.name}."
                )

    @property
    def names(self) -> tuple[str, ...]:
        """The names a prog argument may give the calendar by."""
        return (self.name, self.short_name, self.alias)

    @property
    def days_in_normal_year(self) -> int:
        """The length of a year without intercalary months."""
        return sum(m.days for m in self.months)

    def year_months(self, year: int) -> tuple[CalendarMonth, ...]:
        """The months of `year` in order, intercalary ones in place."""
        specs = [i.month for i in self.intercalary if i.after is None and i.applies(year)]
        for month in self.months:
            specs.append(month)
            specs.extend(
                i.month
                for i in self.intercalary
                if i.after is not None and i.after.casefold() == month.name.casefold()
                if i.applies(year)
            )
        return tuple(spec.placed(order) for order, spec in enumerate(specs, start=1))

    def days_in_year(self, year: int) -> int:
        """The length of `year`."""
        return self.days_in_normal_year + sum(
            i.month.days for i in self.intercalary if i.applies(year)
        )

    def year_name(self, year: int) -> str:
        """The year as the calendar writes it: ``1051 A.F.``, or ``3 B.F.`` for year -2."""
        if year >= 1:
            return f"{year} {self.modern_epoch}"
        return f"{1 - year} {self.ancient_epoch}"

    def days_between(self, start: int, stop: int) -> int:
        """The days from the first day of year `start` to the first day of year `stop`.

        Negative when `stop` comes before `start`. Computed per intercalary rule, not per year,
        so distant years cost nothing.
        """
        if stop < start:
            return -self.days_between(stop, start)
        total = (stop - start) * self.days_in_normal_year
        for extra in self.intercalary:
            # The multiples of `every` among the years start .. stop - 1.
            leaps = (stop - 1) // extra.every - (start - 1) // extra.every
            total += leaps * extra.month.days
        return total

    def date_of(self, day_number: int) -> CalendarDate:
        """The date of an absolute day."""
        # Every run of `cycle` consecutive years holds each intercalary month equally often, so
        # whole cycles can be skipped at once; at most `cycle` single years remain.
        cycle = math.lcm(*(i.every for i in self.intercalary)) if self.intercalary else 1
        cycles, offset = divmod(day_number - self.epoch_day, self.days_between(0, cycle))
        year = self.epoch_year + cycles * cycle
        while offset >= (length := self.days_in_year(year)):
            offset -= length
            year += 1
        for month in self.year_months(year):
            if offset < month.days:
                weekday = self.weekdays[day_number % len(self.weekdays)]
                return CalendarDate(year, month, offset + 1, weekday)
            offset -= month.days
        raise AssertionError("a day offset within the year always falls in one of its months")

    def day_number(self, year: int, month_order: int, day: int) -> int:
        """The absolute day of a date.

        Raises:
            ValueError: If the year has no such month or the month no such day.
        """
        months = self.year_months(year)
        if not 1 <= month_order <= len(months):
            raise ValueError(f"{self.year_name(year)} has no month {month_order}.")
        month = months[month_order - 1]
        if not 1 <= day <= month.days:
            raise ValueError(f"{month.name} has no day {day}.")
        within = sum(m.days for m in months[: month_order - 1]) + day - 1
        return self.epoch_day + self.days_between(self.epoch_year, year) + within

    def long_date(self, date: CalendarDate) -> str:
        """E.g. ``Netday, the 3rd of Rainmoon, 1051 A.F.``."""
        return (
            f"{date.weekday}, the {ordinal(date.day)} of {date.month.name}, "
            f"{self.year_name(date.year)}"
        )

    @staticmethod
    def short_date(date: CalendarDate) -> str:
        """E.g. ``3/4/1051`` (day, month's position in the year, year)."""
        return f"{date.day}/{date.month.order}/{date.year}"

    def info(self, year: int | None = None) -> CalendarInfo:
        """The calendar's definition, with the layout of `year` if one is given.

        Raises:
            ValueError: If `year` is beyond `YEAR_LIMIT` either way.
        """
        layout = None
        if year is not None:
            if abs(year) > YEAR_LIMIT:
                raise ValueError(f"Year must be between {-YEAR_LIMIT} and {YEAR_LIMIT}.")
            layout = CalendarYear(
                year, self.year_name(year), self.days_in_year(year), self.year_months(year)
            )
        return CalendarInfo(
            id=self.id,
            name=self.name,
            short_name=self.short_name,
            alias=self.alias,
            description=self.description,
            ancient_epoch=self.ancient_epoch,
            modern_epoch=self.modern_epoch,
            weekdays=self.weekdays,
            days_in_normal_year=self.days_in_normal_year,
            months=tuple(m.placed(order) for order, m in enumerate(self.months, start=1)),
            intercalary_months=tuple(
                IntercalaryMonth(
                    i.month.name,
                    i.month.short_name,
                    i.month.days,
                    i.after,
                    i.rule(),
                    i.month.special_days,
                )
                for i in self.intercalary
            ),
            year=layout,
        )


_SUFFIXES = {1: "st", 2: "nd", 3: "rd"}


def ordinal(number: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``21st``..."""
    if 10 <= number % 100 <= 20:
        return f"{number}th"
    return f"{number}{_SUFFIXES.get(number % 10, 'th')}"
