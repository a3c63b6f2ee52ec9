"""Bounds on what a model's tool call may carry, checked before anything reads it.

Two kinds of bound:

* the argument text as a whole: at most `DEFAULT_MAX_CHARS` characters and
  `DEFAULT_MAX_DEPTH` levels of nested arrays and objects (``[limits]`` in the configuration
  may change both). `json_object` checks them with one linear scan *before* the text reaches
  `json.loads`, whose recursive parser would otherwise raise `RecursionError` on a deeply
  nested document (about 1,000 levels) instead of a decodable error;
* the length of each text a built-in tool keeps or looks up: the constants below, one per kind
  of text. A tool names them for its properties (`agent.tools.base.Tool.define`), which both
  states the limit in the schema the model reads and refuses a longer value when it is called.
"""

from __future__ import annotations

import json
import math
from typing import Any, NoReturn

from storyteller_daemon.config import LimitsConfig

DEFAULT_MAX_CHARS: int = LimitsConfig.model_fields["max_argument_chars"].default
"""Characters of one call's argument text, by default."""
DEFAULT_MAX_DEPTH: int = LimitsConfig.model_fields["max_argument_depth"].default
"""Nesting of arrays and objects in one call's arguments, by default (``{}`` is depth 1)."""

TITLE_CHARS = 200
"""A situation's or a memory's title: a line shown in later prompts."""
TEXT_CHARS = 4_000
"""A situation's description or a memory's details."""
WORD_CHARS = 200
"""A name, a search query, a choice among words: what a tool looks up rather than keeps."""
GOAL_CHARS = 300
"""A story plan's goal."""
INTENT_CHARS = 300
"""What a plan step means to achieve."""
PLAN_REASON_CHARS = 500
"""Why a plan was replanned or abandoned."""
STEP_ARGUMENTS_CHARS = 2_000
"""The arguments a plan step has in mind, as JSON text."""
CLAIM_REASON_CHARS = 200
"""Why a storyteller claims a scene."""


class MalformedJson(ValueError):
    """A call's argument text is not a JSON object within the bounds; the message says why."""


def json_object(
    raw: str, *, max_chars: int = DEFAULT_MAX_CHARS, max_depth: int = DEFAULT_MAX_DEPTH
) -> dict[str, Any]:
    """Parse a call's argument text into an object, within the bounds.

    Blank text is malformed (a call without arguments sends ``{}``), and so are ``NaN``,
    ``Infinity`` and numbers too large to hold.

    Raises:
        MalformedJson: the text is too long, too deeply nested, not JSON or not an object.
    """
    if len(raw) > max_chars:
        raise MalformedJson(f"the arguments are {len(raw)} characters long; at most {max_chars}")
    if not raw.strip():
        raise MalformedJson("the arguments are empty; send a JSON object ({} for none)")
    depth = nesting_depth(raw)
    if depth > max_depth:
        raise MalformedJson(f"the arguments nest {depth} levels deep; at most {max_depth}")
    try:
        value = json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise MalformedJson(str(exc)) from None
    except ValueError as exc:  # an integer past Python's digit limit, or a constant refused
        if str(exc).startswith("Exceeds the limit"):
            raise MalformedJson("a number has too many digits to read") from None
        raise MalformedJson(str(exc)) from None
    if not isinstance(value, dict):
        raise MalformedJson(f"expected a JSON object, got {type(value).__name__}")
    return value


def nesting_depth(raw: str) -> int:
    """The deepest nesting of arrays and objects in JSON text, brackets inside strings aside.

    One pass, no recursion; the text need not be valid JSON (an unclosed string ends the scan).
    """
    depth = deepest = 0
    in_string = escaped = False
    for char in raw:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a number")
    return value
