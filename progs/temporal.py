"""DateTime, TimeSpan and MudDateTime arguments: the text and number forms a model may send."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from progs.results import format_datetime, format_timespan
from progs.scalars import ArgumentError, first_present, number_value, object_text

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def convert_datetime(value: Any) -> str:
    if isinstance(value, Mapping):
        found = first_present(value, ("UnixSeconds", "EpochSeconds", "Timestamp"))
        if found is not None and (seconds := number_value(found[1])) is not None:
            return _unix_datetime(seconds)
        text = object_text(value, ("Value", "DateTime", "Timestamp", "Iso8601"))
        if text is None:
            raise ArgumentError("DateTime arguments must include UnixSeconds or an ISO-8601 Value.")
        return _datetime_text(text)
    if isinstance(value, str):
        return _datetime_text(value)
    seconds = number_value(value) if isinstance(value, int | float) else None
    if seconds is None:
        raise ArgumentError("Expected datetime text argument.")
    return _unix_datetime(seconds)


def _unix_datetime(seconds: float) -> str:
    try:
        return format_datetime(_EPOCH + timedelta(seconds=seconds))
    except OverflowError:
        raise ArgumentError(f"Unix time {seconds} is out of range.") from None


def _datetime_text(text: str) -> str:
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ArgumentError(
            f"Expected datetime text argument: '{text}' is not an ISO-8601 datetime."
        ) from None
    # A datetime without an offset is taken as UTC: the game receives one unambiguous instant.
    moment = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return format_datetime(moment)


def convert_timespan(value: Any) -> str:
    if isinstance(value, Mapping):
        found = first_present(value, ("TotalSeconds", "Seconds"))
        if found is not None:
            seconds = number_value(found[1])
            if seconds is None:
                raise ArgumentError(f"Property '{found[0]}' must contain a number of seconds.")
            return _seconds_timespan(seconds)
        text = object_text(value, ("Value", "TimeSpan", "Duration"))
        if text is None:
            raise ArgumentError("TimeSpan arguments must include TotalSeconds or a Value.")
        return _timespan_text(text)
    if isinstance(value, str):
        return _timespan_text(value)
    seconds = number_value(value) if isinstance(value, int | float) else None
    if seconds is None:
        raise ArgumentError("Expected timespan text argument.")
    return _seconds_timespan(seconds)


def _seconds_timespan(seconds: float) -> str:
    try:
        return format_timespan(timedelta(seconds=seconds))
    except OverflowError:
        raise ArgumentError(f"A TimeSpan of {seconds} seconds is out of range.") from None


_CLOCK_SPAN = re.compile(
    r"(?P<sign>-)?(?:(?P<days>[0-9]+)\.|(?P<cdays>[0-9]+):(?=[0-9]+:[0-9]+:[0-9]+$))?"
    r"(?P<h>[0-9]{1,2}):(?P<m>[0-9]{1,2})(?::(?P<s>[0-9]{1,2})(?:\.(?P<f>[0-9]{1,7}))?)?"
)
_NUM = r"[0-9]+(?:\.[0-9]+)?"
_ISO_SPAN = re.compile(
    rf"(?P<sign>-)?P(?:(?P<W>{_NUM})W)?(?:(?P<D>{_NUM})D)?"
    rf"(?:T(?=[0-9])(?:(?P<H>{_NUM})H)?(?:(?P<M>{_NUM})M)?(?:(?P<S>{_NUM})S)?)?",
    re.IGNORECASE,
)
_ISO_UNIT_SECONDS = {"W": 604_800, "D": 86_400, "H": 3_600, "M": 60, "S": 1}


def _timespan_text(text: str) -> str:
    stripped = text.strip()
    # Numeric text means seconds, as a JSON number does (.NET would read it as days).
    seconds = number_value(stripped)
    if seconds is not None:
        return _seconds_timespan(seconds)
    if clock := _CLOCK_SPAN.fullmatch(stripped):
        span = _clock_span(clock)
        if span is not None:
            return format_timespan(span)
    elif iso := _ISO_SPAN.fullmatch(stripped):
        parts = {unit: iso.group(unit) for unit in _ISO_UNIT_SECONDS if iso.group(unit)}
        if parts:
            total = sum(float(part) * _ISO_UNIT_SECONDS[unit] for unit, part in parts.items())
            return _seconds_timespan(-total if iso.group("sign") else total)
    raise ArgumentError(
        f"Expected timespan text argument: '{text}' is not a TimeSpan such as 00:30:00."
    )


def _clock_span(match: re.Match[str]) -> timedelta | None:
    hours, minutes, seconds = (int(match.group(key) or 0) for key in ("h", "m", "s"))
    if hours > 23 or minutes > 59 or seconds > 59:
        return None
    days = int(match.group("days") or match.group("cdays") or 0)
    micros = int((match.group("f") or "").ljust(7, "0")) // 10
    try:
        span = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:
        return None
    span += timedelta(microseconds=micros)
    return -span if match.group("sign") else span


def convert_mud_datetime(value: Any) -> str:
    text = value.strip() if isinstance(value, str) else None
    if isinstance(value, Mapping):
        text = object_text(value, ("Value", "MudDateTime", "DateTime"))
    if not text:
        raise ArgumentError("Expected mud datetime text argument.")
    return "never" if text.lower() == "never" else text
