"""How the offline stand-in fills a tool's JSON schema: every property gets a value (strict
schemas require all keys), a known one where its type allows, a neutral placeholder otherwise."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from storyteller_daemon.agent.models.interface import ToolSpec

_ROOM_PARAMETER = re.compile(r"room|location|cell", re.IGNORECASE)
_TEXT_PARAMETER = re.compile(r"text|echo|message|emote|line", re.IGNORECASE)


def json_types(schema: Any) -> set[str]:
    """Every JSON type a property schema allows (``type`` lists and ``anyOf`` included)."""
    if not isinstance(schema, Mapping):
        return set()
    declared = schema.get("type")
    types = {declared} if isinstance(declared, str) else set(declared or ())
    for option in schema.get("anyOf") or ():
        types |= json_types(option)
    return {str(t) for t in types}


def room_and_text_parameters(tool: ToolSpec) -> tuple[str, str] | None:
    """Names of an integer room parameter and a string parameter of ``tool``, if it has both."""
    properties = tool.parameters.get("properties") or {}
    room = next(
        (
            name
            for name, schema in properties.items()
            if _ROOM_PARAMETER.search(name) and "integer" in json_types(schema)
        ),
        None,
    )
    strings = [name for name, schema in properties.items() if "string" in json_types(schema)]
    if room is None or not strings:
        return None
    text = next((name for name in strings if _TEXT_PARAMETER.search(name)), strings[0])
    return room, text


def fill_arguments(schema: Mapping[str, Any], known: Mapping[str, Any]) -> dict[str, Any]:
    """A value for every property of an object schema: ``known`` ones (by case-insensitive
    name) where their type allows, a neutral placeholder otherwise."""
    lowered = {name.lower(): value for name, value in known.items()}
    arguments: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        types = json_types(prop)
        key = str(name).lower()
        if key in lowered and (lowered[key] is not None or "null" in types):
            arguments[name] = lowered[key]
        else:
            arguments[name] = placeholder(prop, types)
    return arguments


def placeholder(schema: Any, types: set[str]) -> Any:
    if "null" in types:
        return None
    if isinstance(schema, Mapping) and schema.get("enum"):
        return schema["enum"][0]
    if "string" in types:
        return ""
    if "integer" in types or "number" in types:
        return 0
    if "boolean" in types:
        return False
    if "array" in types:
        return []
    if "object" in types and isinstance(schema, Mapping):
        return fill_arguments(schema, {})
    return None


def wants_objects(schema: Any) -> bool:
    """Whether a list's items are objects (ignore verdicts with reasons)."""
    items = schema.get("items") if isinstance(schema, Mapping) else None
    return isinstance(items, Mapping) and items.get("type") == "object"
