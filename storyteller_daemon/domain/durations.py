"""Lengths of time as admins type them (``90s``, ``1h30m``, ``00:03:00``) and as they are shown."""

from __future__ import annotations

import re
from datetime import timedelta

from storyteller_daemon.errors import ValidationError

_UNIT_SECONDS = {"ms": 0.001, "s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}
_UNIT_TERM = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|sec|min|s|m|h|d)")


def parse_duration(text: str) -> timedelta:
    """A length of time: ``90s``, ``3m``, ``1h30m``, ``250ms``, ``2d`` or ``[d.]hh:mm[:ss]``.

    Raises:
        ValidationError: the text is neither form (a bare number is refused: its unit would be a
            guess).
    """
    raw = text.strip().lower()
    if ":" in raw:
        return _parse_clock(text, raw)
    compact = raw.replace(" ", "")
    terms = _UNIT_TERM.findall(compact)
    if not compact or "".join(n + u for n, u in terms) != compact:
        raise ValidationError(f"'{text}' is not a duration; use e.g. 90s, 3m, 1h30m or 00:03:00.")
    return timedelta(seconds=sum(float(n) * _UNIT_SECONDS[u] for n, u in terms))


def _parse_clock(text: str, raw: str) -> timedelta:
    days = 0
    head, sep, rest = raw.partition(".")
    if sep and ":" not in head and ":" in rest:
        if not head.isdigit():
            raise ValidationError(f"'{text}' is not a duration; use e.g. 1.02:00:00 for a day.")
        days, raw = int(head), rest
    parts = raw.split(":")
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        raise ValidationError(f"'{text}' is not a duration; use hh:mm or hh:mm:ss.") from None
    if len(numbers) not in (2, 3) or any(n < 0 for n in numbers):
        raise ValidationError(f"'{text}' is not a duration; use hh:mm or hh:mm:ss.")
    hours, minutes, seconds = (*numbers, 0.0)[:3]
    return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


def format_duration(value: timedelta) -> str:
    """``10m``, ``1m30s``, ``1h``, ``250ms``: the shortest exact spelling."""
    millis = round(value / timedelta(milliseconds=1))
    if millis % 1000:
        return f"{millis}ms"
    seconds = millis // 1000
    parts = []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size:
            parts.append(f"{seconds // size}{unit}")
            seconds %= size
    return "".join(parts) or "0s"
