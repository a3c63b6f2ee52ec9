"""Reading a tool call's arguments, by FutureMUD's rules for strict schemas.

Every property is present and an optional one arrives as ``null``: null means absent; ids may
be numbers, numeric strings or objects with an ``Id`` key. A value that breaks the rules is a
`ToolError` whose one line names the property.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from progs.scalars import ID_KEYS, MAX_ID, integer_value
from storyteller_daemon.domain.argument_limits import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_DEPTH,
    MalformedJson,
    json_object,
)
from storyteller_daemon.errors import ToolError


class MalformedArguments(Exception):
    """A call's argument text is not a JSON object within the bounds; the message says why."""


def parse_arguments(
    raw: str, *, max_chars: int = DEFAULT_MAX_CHARS, max_depth: int = DEFAULT_MAX_DEPTH
) -> dict[str, Any]:
    """Parse a call's argument text, its size and nesting checked before it is parsed.

    Blank text is malformed: a call without arguments sends ``{}``.

    Raises:
        MalformedArguments: the text is too long or too deep, not JSON, or not a JSON object.
    """
    try:
        return json_object(raw, max_chars=max_chars, max_depth=max_depth)
    except MalformedJson as exc:
        raise MalformedArguments(str(exc)) from None


def _as_id(value: Any) -> int | None:
    """An integer id from a number, a numeric string or ``{"Id": ...}``; None if not an id."""
    if isinstance(value, dict):
        for key in ID_KEYS:
            if key in value:
                return _as_id(value[key])
        return None
    return integer_value(value)


def optional_id(arguments: Mapping[str, Any], key: str) -> int | None:
    """An optional id argument (null or absent gives None), within signed 64 bits.

    Zero and negative ids pass, as in FutureMUD, whose tools then report them as not found;
    `world_character` and `world_room` answer those without asking the world.

    Raises:
        ToolError: the value is present but not an id, or past what any store can hold.
    """
    value = arguments.get(key)
    if value is None:
        return None
    parsed = _as_id(value)
    if parsed is None:
        raise ToolError(f"Property '{key}' must contain an integer id.")
    if not -MAX_ID - 1 <= parsed <= MAX_ID:
        raise ToolError(f"Property '{key}' must be a positive id; {_shown(parsed)} is not one.")
    return parsed


def required_id(arguments: Mapping[str, Any], key: str) -> int:
    """A required id argument.

    Raises:
        ToolError: absent or null (``Missing required property 'X'.``) or not an id.
    """
    parsed = optional_id(arguments, key)
    if parsed is None:
        raise ToolError(f"Missing required property '{key}'.")
    return parsed


def optional_int(arguments: Mapping[str, Any], key: str) -> int | None:
    """An optional integer argument (null or absent gives None), within signed 64 bits.

    Raises:
        ToolError: the value is present but not an integer, or too large to store.
    """
    value = arguments.get(key)
    if value is None:
        return None
    parsed = integer_value(value)
    if parsed is None:
        raise ToolError(f"Property '{key}' must be an integer.")
    if not -MAX_ID - 1 <= parsed <= MAX_ID:
        raise ToolError(f"Property '{key}' is out of range; {_shown(parsed)} is too large.")
    return parsed


def _shown(number: int) -> str:
    """A number for an error message: long ones cut short."""
    text = str(number)
    return text if len(text) <= 24 else f"{text[:20]}... ({len(text)} digits)"


def optional_text(arguments: Mapping[str, Any], key: str) -> str | None:
    """An optional text argument; non-string JSON values are used as their JSON text."""
    value = arguments.get(key)
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def required_text(arguments: Mapping[str, Any], key: str) -> str:
    """A required text argument (null counts as missing, unlike FutureMUD which read "").

    Raises:
        ToolError: absent or null.
    """
    text = optional_text(arguments, key)
    if text is None:
        raise ToolError(f"Missing required property '{key}'.")
    return text
