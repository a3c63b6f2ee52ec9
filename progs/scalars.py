"""Reading JSON scalars and objects the way a model writes them: numbers, ids, keyed objects."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any


class ArgumentError(ValueError):
    """A tool argument the prog cannot take. The message is meant for the model to act on.

    Attributes:
        message: What is wrong, e.g. ``Expected boolean argument.``
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


ID_KEYS = ("Id", "ID", "id")
MAX_ID = 2**63 - 1
"""The largest id a game can have: ids are positive signed 64-bit integers."""
_FLOAT_EXACT = 2**53
_INTEGER_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def integer_value(value: Any) -> int | None:
    """The integer a JSON number or integer text holds, else None (also for integer text too
    long for Python to read: over 4,300 digits)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and _INTEGER_TEXT.fullmatch(value.strip()):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None


def number_value(value: Any) -> int | float | None:
    """The finite number a JSON number or numeric text holds, else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if _INTEGER_TEXT.fullmatch(text):
            try:
                return int(text)
            except ValueError:  # past Python's digit limit: read as a float (infinite) below
                pass
        if not _NUMBER_TEXT.fullmatch(text):
            return None
        value = float(text)
    if isinstance(value, float) and math.isfinite(value):
        # Past 2**53 a float no longer holds every integer, so it is not turned into one.
        return int(value) if value.is_integer() and abs(value) < _FLOAT_EXACT else value
    return None


def first_present(obj: Mapping[str, Any], keys: Sequence[str]) -> tuple[str, Any] | None:
    """The first of `keys` present in `obj` with a non-null value, and that value."""
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return key, value
    return None


def is_id(number: int) -> bool:
    """Whether a game can have a thing with this id (a positive signed 64-bit integer)."""
    return 0 < number <= MAX_ID


def checked_id(number: int, what: str) -> int:
    if not is_id(number):
        raise ArgumentError(f"{what} ids are positive integers; {number} is not one.")
    return number


def object_id(obj: Mapping[str, Any], keys: Sequence[str], what: str) -> int | None:
    found = first_present(obj, keys)
    if found is None:
        return None
    number = integer_value(found[1])
    if number is None:
        raise ArgumentError(f"Property '{found[0]}' must contain an integer id.")
    return checked_id(number, what)


def object_text(obj: Mapping[str, Any], keys: Sequence[str]) -> str | None:
    found = first_present(obj, keys)
    if found is None:
        return None
    if not isinstance(found[1], str):
        raise ArgumentError(f"Property '{found[0]}' must contain text.")
    return found[1].strip() or None
