"""Durations as FutureMUD's XML writes them: milliseconds, or a .NET TimeSpan.

`parse_duration` reads either form (``180000``, ``00:03:00``, ``1.02:03:04``) and rejects
anything else with an `InterchangeError` naming the element; `render_milliseconds` writes a
duration back as milliseconds, with a fraction only when the duration has one.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

from storyteller_daemon.errors import InterchangeError
from storyteller_daemon.interchange.futuremud_xml.elements import show

_MILLISECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")
# .NET TimeSpan text: ``[d.]hh:mm[:ss[.fffffff]]`` (the "c" form) or ``d:hh:mm:ss[.fffffff]``
# (the "g" form). Both yield the groups (days, hours, minutes, seconds, fraction).
_TIMESPAN_FORMS = (
    re.compile(r"(?:([0-9]+)\.)?([0-9]{1,2}):([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]{1,7}))?)?"),
    re.compile(r"([0-9]+):([0-9]{1,2}):([0-9]{1,2}):([0-9]{1,2})(?:\.([0-9]{1,7}))?"),
)


def parse_duration(text: str, where: str) -> timedelta:
    """Milliseconds (``180000``) or a .NET TimeSpan (``00:03:00``), as FutureMUD writes either."""
    value = text.strip()
    try:
        duration = _milliseconds(value)
        if duration is None:
            duration = _timespan(value)
    except OverflowError:
        raise InterchangeError(f"{where} value {show(text)} is too long a duration.") from None
    if duration is None:
        raise InterchangeError(
            f"{where} value {show(text)} is neither a number of milliseconds nor a TimeSpan such "
            "as 00:03:00 or 1.02:03:04."
        )
    return duration


def _milliseconds(value: str) -> timedelta | None:
    if _MILLISECONDS.fullmatch(value) is None:
        return None
    microseconds = (Decimal(value) * 1000).to_integral_value()
    return timedelta(microseconds=int(microseconds))


def _timespan(value: str) -> timedelta | None:
    for form in _TIMESPAN_FORMS:
        match = form.fullmatch(value)
        if match is None:
            continue
        days, hours, minutes, seconds, fraction = match.groups()
        hour, minute, second = int(hours), int(minutes), int(seconds or 0)
        if hour > 23 or minute > 59 or second > 59:
            return None
        # The fraction counts 100 ns ticks, at most seven digits.
        ticks = int((fraction or "").ljust(7, "0"))
        return timedelta(
            days=int(days or 0),
            hours=hour,
            minutes=minute,
            seconds=second,
            microseconds=ticks // 10,
        )
    return None


def render_milliseconds(window: timedelta) -> str:
    """`window` in milliseconds, as FutureMUD writes a duration."""
    whole, micro = divmod(window // timedelta(microseconds=1), 1000)
    return str(whole) if not micro else f"{whole}.{micro:03d}".rstrip("0")
