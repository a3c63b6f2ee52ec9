"""What a bridge request method needs besides the session: its params and its failures.

A method takes a request's ``params`` object and returns a JSON-ready value (`Method`). The
``*_param`` functions read one parameter each and raise `BadParams` (answered ``bad_params``)
when it is missing or mistyped; a method raises `CommandFailed` (answered ``command_failed``)
when the world refuses the request. Pure Python: the session and the world queries use it
alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeGuard


class BadParams(ValueError):
    """The params of a request do not fit its method."""


class CommandFailed(Exception):
    """The world refused a request; the message is shown to the storyteller's model."""


Method = Callable[[dict[str, Any]], Any]


def int_param(params: dict[str, Any], name: str) -> int:
    """An integer parameter (booleans are not integers here).

    Raises:
        BadParams: missing or not an integer.
    """
    value = params.get(name)
    if not _is_int(value):
        raise BadParams(f"'{name}' must be an integer")
    return value


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def optional_int_param(params: dict[str, Any], name: str) -> int | None:
    """An integer parameter that may be null or left out.

    Raises:
        BadParams: present and neither null nor an integer.
    """
    value = params.get(name)
    if value is not None and not _is_int(value):
        raise BadParams(f"'{name}' must be an integer or null")
    return value


def str_param(params: dict[str, Any], name: str) -> str:
    """A string parameter.

    Raises:
        BadParams: missing or not a string.
    """
    value = params.get(name)
    if not isinstance(value, str):
        raise BadParams(f"'{name}' must be a string")
    return value


def seconds_param(params: dict[str, Any], name: str) -> float:
    """A duration in seconds (a non-negative number).

    Raises:
        BadParams: missing, not a number or negative.
    """
    value = params.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise BadParams(f"'{name}' must be a number of seconds")
    return float(value)


def int_list_param(params: dict[str, Any], name: str) -> list[int] | None:
    """An array of integers that may be null or left out.

    Raises:
        BadParams: present and neither null nor an array of integers.
    """
    value = params.get(name)
    if value is None:
        return None
    if not isinstance(value, list) or not all(_is_int(v) for v in value):
        raise BadParams(f"'{name}' must be an array of integers or null")
    return value


MAX_KEY_CHARS = 256


def prog_call_params(params: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    """The ``execute_prog`` request's prog (an id as text, or a name), arguments and
    idempotency key.

    Raises:
        BadParams: a blank or missing prog, arguments that are not an object, or a key that is
            not 1-256 characters.
    """
    prog, arguments, key = (
        params.get("prog"),
        params.get("arguments"),
        params.get("idempotency_key"),
    )
    if _is_int(prog):
        prog = str(prog)
    if not isinstance(prog, str) or not prog.strip():
        raise BadParams("'prog' must be a prog id or name")
    if not isinstance(arguments, dict):
        raise BadParams("'arguments' must be an object")
    if not isinstance(key, str) or not 1 <= len(key) <= MAX_KEY_CHARS:
        raise BadParams("'idempotency_key' must be 1-256 characters")
    return prog, arguments, key


DOOR_RULES = frozenset(
    {"respect_closed", "include_unlocked", "include_fireable", "ignore", "include_unlockable"}
)


def path_rule_param(params: dict[str, Any], name: str) -> dict[str, Any]:
    """A *path_rule*: ``doors``, optional ``character_id`` and ``character_must_cross``.

    Raises:
        BadParams: not an object, an unknown door rule, mistyped fields, or a rule that needs a
            character without one.
    """
    rule = params.get(name)
    if not isinstance(rule, dict) or rule.get("doors") not in DOOR_RULES:
        raise BadParams(f"'{name}' must be an object with 'doors', one of {sorted(DOOR_RULES)}")
    character_id = optional_int_param(rule, "character_id")
    must_cross = rule.get("character_must_cross", False)
    if not isinstance(must_cross, bool):
        raise BadParams("'character_must_cross' must be true or false")
    if character_id is None and (must_cross or rule["doors"] == "include_unlockable"):
        raise BadParams("this path rule needs a 'character_id'")
    return {
        "doors": rule["doors"],
        "character_id": character_id,
        "character_must_cross": must_cross,
    }
