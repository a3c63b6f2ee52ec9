"""Prog results as JSON-ready tool output, following FutureMUD's ``ConvertToToolOutputValue``.

=====================================  ==================================================
value                                  JSON
=====================================  ==================================================
None, str, bool, int, finite float     as is
Decimal                                int when integral, else float
NaN or infinite float or Decimal       its text ("nan", "inf")
datetime                               ISO-8601 round-trip text (`format_datetime`)
date, time                             ISO-8601 text
timedelta                              ``[-][d.]hh:mm:ss[.fffffff]`` (`format_timespan`)
Enum member                            its value, converted
bytes                                  UTF-8 text
mapping                                object with string keys, values converted
object with ``id`` and ``name``        ``{"Id", "Name", "Type"}`` (a game entity)
other dataclass instance               object of its fields
other iterable                         array (a set's elements in sorted order)
anything else                          ``str(value)``
=====================================  ==================================================
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Iterable, Mapping, Set
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from enum import Enum
from typing import Any

from progs.types import ValueType

__all__ = ["custom_tool_result", "format_datetime", "format_timespan", "to_tool_value"]

_MICROSECOND = timedelta(microseconds=1)


def format_datetime(moment: datetime) -> str:
    """ISO-8601 text that parses back to the same instant, like .NET's ``"O"`` format.

    UTC is written ``Z``, another offset ``+hh:mm``, and a naive datetime gets no suffix.
    Fractional seconds appear only when there are any.

    Args:
        moment: The datetime to write.

    Returns:
        For example ``2026-02-11T12:34:56Z`` or ``2026-02-11T12:34:56.250000+10:00``.
    """
    text = moment.isoformat(timespec="microseconds" if moment.microsecond else "seconds")
    if moment.utcoffset() == timedelta(0):
        # isoformat writes UTC as "+00:00"; "Z" is the conventional round-trip spelling.
        return text[: -len("+00:00")] + "Z"
    return text


def format_timespan(span: timedelta) -> str:
    """The span in .NET's constant ``"c"`` TimeSpan format, ``[-][d.]hh:mm:ss[.fffffff]``.

    Args:
        span: The duration to write; it may be negative.

    Returns:
        For example ``00:30:00``, ``1.02:03:04`` or ``-00:00:01.5000000``.
    """
    total = span // _MICROSECOND
    sign = "-" if total < 0 else ""
    seconds, micros = divmod(abs(total), 1_000_000)
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    days, hour = divmod(hours, 24)
    text = f"{sign}{f'{days}.' if days else ''}{hour:02d}:{minute:02d}:{second:02d}"
    # .NET writes seven fractional digits (100 ns ticks); a microsecond is ten ticks.
    return f"{text}.{micros * 10:07d}" if micros else text


def to_tool_value(value: Any) -> Any:
    """Make any prog result JSON-ready for a tool output.

    Args:
        value: What a prog returned, as the world reported it.

    Returns:
        A value made only of dicts with str keys, lists, str, int, float, bool and None.

    Raises:
        ValueError: If `value` contains itself, which JSON cannot express.
    """
    return _convert(value, frozenset())


def custom_tool_result(function: str, return_type: ValueType, value: Any) -> dict[str, Any]:
    """The ``result`` of a successful custom-tool call, in FutureMUD's shape.

    Args:
        function: The tool name as the model called it.
        return_type: The prog's declared return type.
        value: What the prog returned.

    Returns:
        ``{"Function": ..., "ReturnType": "Text", "Result": <JSON-ready value>}``.
    """
    return {
        "Function": function,
        "ReturnType": return_type.describe(),
        "Result": to_tool_value(value),
    }


def _convert(value: Any, active: frozenset[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Enum):
        return _convert(value.value, active)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Decimal):
        return _decimal(value)
    if isinstance(value, datetime):
        return format_datetime(value)
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, timedelta):
        return format_timespan(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    return _convert_container(value, active)


def _convert_container(value: Any, active: frozenset[int]) -> Any:
    if id(value) in active:
        raise ValueError("A prog result that contains itself cannot be written as JSON.")
    inner = active | {id(value)}
    if isinstance(value, Mapping):
        return {_key(key, inner): _convert(item, inner) for key, item in value.items()}
    if _is_entity(value):
        kind = getattr(value, "type", None)
        return {
            "Id": _convert(value.id, inner),
            "Name": _convert(value.name, inner),
            "Type": kind if isinstance(kind, str) else type(value).__name__,
        }
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: _convert(getattr(value, field.name), inner)
            for field in dataclasses.fields(value)
        }
    if isinstance(value, Iterable):
        items = [_convert(item, inner) for item in value]
        return _sorted(items) if isinstance(value, Set) else items
    return str(value)


def _is_entity(value: Any) -> bool:
    return not isinstance(value, type) and hasattr(value, "id") and hasattr(value, "name")


def _decimal(value: Decimal) -> int | float | str:
    if not value.is_finite():
        return str(float(value))
    if value == value.to_integral_value():
        return int(value)
    return float(value)


def _key(key: Any, active: frozenset[int]) -> str:
    if isinstance(key, str):
        return str(key)
    converted = _convert(key, active)
    return converted if isinstance(converted, str) else json.dumps(converted)


def _sorted(items: list[Any]) -> list[Any]:
    # Sets have no order of their own; sorting keeps the output stable between runs.
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=lambda item: json.dumps(item, sort_keys=True))
