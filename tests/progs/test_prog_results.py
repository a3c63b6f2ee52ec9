"""Prog results made JSON-ready for tool output."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from enum import Enum, StrEnum
from typing import Any

import pytest

from progs.results import custom_tool_result, format_datetime, format_timespan, to_tool_value
from progs.types import ProgType, ValueType


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2026, 2, 11, 12, 34, 56, tzinfo=UTC), "2026-02-11T12:34:56Z"),
        (datetime(2026, 2, 11, 12, 34, 56, 250000, tzinfo=UTC), "2026-02-11T12:34:56.250000Z"),
        (
            datetime(2026, 2, 11, 22, 34, 56, tzinfo=timezone(timedelta(hours=10))),
            "2026-02-11T22:34:56+10:00",
        ),
        (datetime(2026, 2, 11, 12, 34, 56), "2026-02-11T12:34:56"),
    ],
)
def test_format_datetime_round_trips(moment: datetime, expected: str) -> None:
    assert format_datetime(moment) == expected
    assert datetime.fromisoformat(expected) == moment


@pytest.mark.parametrize(
    ("span", "expected"),
    [
        (timedelta(0), "00:00:00"),
        (timedelta(minutes=30), "00:30:00"),
        (timedelta(days=1, hours=2, minutes=3, seconds=4), "1.02:03:04"),
        (timedelta(seconds=1, microseconds=500000), "00:00:01.5000000"),
        (timedelta(microseconds=1), "00:00:00.0000010"),
        (timedelta(seconds=-1), "-00:00:01"),
        (-timedelta(days=2, hours=1), "-2.01:00:00"),
    ],
)
def test_format_timespan_uses_the_constant_format(span: timedelta, expected: str) -> None:
    assert format_timespan(span) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        ("text", "text"),
        (True, True),
        (12, 12),
        (2.5, 2.5),
        (float("nan"), "nan"),
        (float("-inf"), "-inf"),
        (Decimal("3.00"), 3),
        (Decimal("2.5"), 2.5),
        (Decimal("NaN"), "nan"),
        (datetime(2026, 2, 11, 12, 0, tzinfo=UTC), "2026-02-11T12:00:00Z"),
        (date(2026, 2, 11), "2026-02-11"),
        (time(12, 30), "12:30:00"),
        (timedelta(minutes=90), "01:30:00"),
        (b"caf\xc3\xa9", "café"),
        ([1, "a", None], [1, "a", None]),
        ((1, 2), [1, 2]),
        ({3, 1, 2}, [1, 2, 3]),
        (frozenset({"b", 1}), ["b", 1]),
        ({1: "one", None: "none", 2.5: "half"}, {"1": "one", "null": "none", "2.5": "half"}),
        ({True: "yes"}, {"true": "yes"}),
        ({"when": timedelta(seconds=5)}, {"when": "00:00:05"}),
        (
            {"Id": 4, "Name": "Anna", "Type": "Character"},
            {"Id": 4, "Name": "Anna", "Type": "Character"},
        ),
    ],
)
def test_to_tool_value(value: Any, expected: Any) -> None:
    assert to_tool_value(value) == expected


class Mood(Enum):
    CALM = "calm"
    WARY = 2


class Weather(StrEnum):
    RAIN = "rain"


@dataclass
class Character:
    id: int
    name: str
    type: str = "Character"


@dataclass
class Room:
    id: int
    name: str


class Exit:
    def __init__(self) -> None:
        self.id = 22
        self.name = "north"


@dataclass
class Weight:
    kilograms: Decimal
    measured: datetime


class Opaque:
    def __str__(self) -> str:
        return "opaque thing"


def test_enums_become_their_values() -> None:
    assert to_tool_value([Mood.CALM, Mood.WARY, Weather.RAIN]) == ["calm", 2, "rain"]
    assert type(to_tool_value(Weather.RAIN)) is str


def test_game_entities_become_id_name_type() -> None:
    assert to_tool_value(Character(4, "Anna")) == {"Id": 4, "Name": "Anna", "Type": "Character"}
    assert to_tool_value(Room(9, "Market Square")) == {
        "Id": 9,
        "Name": "Market Square",
        "Type": "Room",
    }
    assert to_tool_value(Exit()) == {"Id": 22, "Name": "north", "Type": "Exit"}


def test_other_dataclasses_become_objects() -> None:
    weight = Weight(Decimal("70.5"), datetime(2026, 1, 1, tzinfo=UTC))

    assert to_tool_value(weight) == {"kilograms": 70.5, "measured": "2026-01-01T00:00:00Z"}


def test_anything_else_becomes_its_text() -> None:
    assert to_tool_value(Opaque()) == "opaque thing"
    assert to_tool_value(Room) == str(Room)


def test_iterators_become_arrays() -> None:
    def numbers() -> Iterator[int]:
        yield from (3, 1)

    assert to_tool_value(numbers()) == [3, 1]


def test_nested_results_are_json_serialisable() -> None:
    value = {
        "people": [Character(1, "Anna"), Character(2, "Ben")],
        "since": datetime(2026, 2, 11, tzinfo=UTC),
        "tags": {"harbour"},
        (1, 2): Decimal("1.5"),
    }

    converted = to_tool_value(value)

    assert json.loads(json.dumps(converted, allow_nan=False)) == converted
    assert converted["[1, 2]"] == 1.5


def test_a_value_that_contains_itself_is_rejected() -> None:
    loop: list[Any] = [1]
    loop.append(loop)

    with pytest.raises(ValueError, match="contains itself"):
        to_tool_value(loop)


def test_shared_values_that_are_not_cycles_convert() -> None:
    shared = [1, 2]

    assert to_tool_value({"a": shared, "b": shared}) == {"a": [1, 2], "b": [1, 2]}


def test_custom_tool_result_shape() -> None:
    result = custom_tool_result("WarnGuard", ValueType(ProgType.CHARACTER, collection=True), [])

    assert result == {"Function": "WarnGuard", "ReturnType": "Collection<Character>", "Result": []}
