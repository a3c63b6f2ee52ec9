"""Strict-mode normalisation of tool parameter schemas.

The Responses API's strict function tools accept only closed object schemas in which every
property is listed in ``required``. A tool author writes the natural schema (some properties
optional); `strict_schema` rewrites it the way FutureMUD's ``NormalizeFunctionToolSchema`` does:

* a missing schema becomes a closed empty object;
* every object schema lists all its properties in ``required`` and gets
  ``additionalProperties: false`` (even where the author allowed extra properties);
* a property that was optional becomes nullable, so the model sends ``null`` for "absent";
* the rewrite is applied recursively (nested objects, array items, ``anyOf`` branches, ``$defs``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

JsonSchema = dict[str, Any]

_BRANCH_KEYS = ("anyOf", "oneOf", "allOf")
_DEFINITION_KEYS = ("$defs", "definitions")


def empty_object_schema() -> JsonSchema:
    """The closed schema of a tool that takes no arguments."""
    return {"type": "object", "properties": {}, "required": [], "additionalProperties": False}


def strict_schema(schema: Mapping[str, Any] | None) -> JsonSchema:
    """A strict-mode copy of `schema` (the argument is left untouched).

    Args:
        schema: an authored JSON schema for a tool's parameters, or None for "no parameters".

    Returns:
        The normalised schema.

    Raises:
        ValueError: the schema's root is not an object schema, which strict tools require.
    """
    if not schema:
        return empty_object_schema()
    result = _normalise(copy.deepcopy(dict(schema)))
    if not _is_object_schema(result):
        raise ValueError("a tool's parameter schema must describe a JSON object")
    return result


def _is_object_schema(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    return "properties" in schema or "object" in kinds


def _normalise(schema: JsonSchema) -> JsonSchema:
    if _is_object_schema(schema):
        properties: dict[str, Any] = schema.get("properties") or {}
        originally_required = set(schema.get("required") or ())
        for name, prop in list(properties.items()):
            child = _normalise(prop) if isinstance(prop, dict) else prop
            if name not in originally_required and isinstance(child, dict):
                child = _nullable(child)
            properties[name] = child
        schema["properties"] = properties
        schema["required"] = list(properties)
        schema["additionalProperties"] = False
    items = schema.get("items")
    if isinstance(items, dict):
        schema["items"] = _normalise(items)
    for key in _BRANCH_KEYS:
        branches = schema.get(key)
        if isinstance(branches, list):
            schema[key] = [_normalise(b) if isinstance(b, dict) else b for b in branches]
    for key in _DEFINITION_KEYS:
        definitions = schema.get(key)
        if isinstance(definitions, dict):
            schema[key] = {
                n: _normalise(d) if isinstance(d, dict) else d for n, d in definitions.items()
            }
    return schema


def _nullable(schema: JsonSchema) -> JsonSchema:
    """`schema` widened to also accept ``null``."""
    kind = schema.get("type")
    if isinstance(kind, str):
        if kind != "null":
            schema["type"] = [kind, "null"]
    elif isinstance(kind, list):
        if "null" not in kind:
            schema["type"] = [*kind, "null"]
    elif "anyOf" in schema and isinstance(schema["anyOf"], list):
        if not any(isinstance(b, dict) and b.get("type") == "null" for b in schema["anyOf"]):
            schema["anyOf"] = [*schema["anyOf"], {"type": "null"}]
        return schema
    else:
        # No type to widen (a $ref or a bare enum): offer null as an alternative.
        return {"anyOf": [schema, {"type": "null"}]}
    enum = schema.get("enum")
    if isinstance(enum, list) and None not in enum:
        schema["enum"] = [*enum, None]
    return schema
