"""JSON schemas for custom-tool parameters, per prog type (FutureMUD's ``BuildJsonSchema…``).

Schemas are ready for strict function calling: every object lists all its properties as
required, optional ones are nullable, and ``additionalProperties`` is false. They use only
``type``, ``description``, ``enum``, ``items``, ``properties``, ``required``,
``additionalProperties`` and ``anyOf``.

Everything a schema admits is accepted by `progs.convert.convert_argument`. Where FutureMUD
advertised ``integer`` for types its converter resolves by name too, the schema here offers the
id or the name; types no argument can supply raise `UnsupportedParameterType` instead of
advertising an id that always fails. The converter also takes lenient forms the schema does not
mention (numeric strings, object spellings), for models that send them anyway. Constraints
the schema cannot state in that keyword set (ids are positive, names are not blank) are stated
in the descriptions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from progs.types import (
    CLAN_SCOPED_TYPES,
    GENDERS,
    ID_TYPES,
    NAMED_TYPES,
    ProgParameter,
    ProgType,
    UnsupportedParameterType,
    ValueType,
    require_tool_parameter,
)

__all__ = ["UnsupportedParameterType", "json_schema_for", "tool_parameters_schema"]

_ELEMENT_DESCRIPTION = "Item value."
_EFFECT_OWNER_TYPES = ("character", "item", "cell", "zone", "shard")

_HINTS = {
    ProgType.GENDER: "Valid values are male, female, neuter, non-binary or indeterminate.",
    ProgType.DATETIME: "Use an ISO-8601 datetime string such as 2026-02-11T12:34:56Z.",
    ProgType.TIMESPAN: "Use a TimeSpan string ([d.]hh:mm:ss) such as 00:30:00.",
    ProgType.MUDDATETIME: (
        "Use a parseable mud datetime string such as never or a saved datetime value."
    ),
}


def json_schema_for(value_type: ValueType, description: str) -> dict[str, Any]:
    """The JSON schema of one custom-tool parameter.

    Args:
        value_type: The prog parameter's type.
        description: What the parameter means, for the model; may be empty.

    Returns:
        A fresh schema dict, safe for the caller to modify.

    Raises:
        UnsupportedParameterType: If no tool-call argument can supply `value_type`.
    """
    require_tool_parameter(value_type)
    if value_type.collection:
        return _described(
            {"type": "array", "items": _element_schema(value_type.element, _ELEMENT_DESCRIPTION)},
            description,
        )
    return _element_schema(value_type.element, description)


def tool_parameters_schema(parameters: Sequence[tuple[ProgParameter, str]]) -> dict[str, Any]:
    """The object schema of a custom tool's arguments: every parameter, all required.

    Args:
        parameters: The prog's parameters in order, each with its description.

    Returns:
        ``{"type": "object", "properties": ..., "required": [...],
        "additionalProperties": false}``.

    Raises:
        UnsupportedParameterType: If a parameter's type cannot be supplied by a tool call; a
            tool with such a parameter is invalid and must not be offered.
        ValueError: If two parameters have the same name.
    """
    properties: dict[str, Any] = {}
    for parameter, description in parameters:
        if parameter.name in properties:
            raise ValueError(f"Duplicate prog parameter name '{parameter.name}'.")
        properties[parameter.name] = json_schema_for(parameter.type, description)
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _element_schema(element: ProgType, description: str) -> dict[str, Any]:
    kind = element.value
    match element:
        case ProgType.BOOLEAN:
            return _described({"type": "boolean"}, description)
        case ProgType.NUMBER:
            return _described({"type": "number"}, description)
        case ProgType.TEXT:
            return _described({"type": "string"}, description)
        case ProgType.GENDER:
            schema: dict[str, Any] = {"type": "string", "enum": list(GENDERS)}
            return _described(schema, description, _HINTS[element])
        case ProgType.DATETIME | ProgType.TIMESPAN | ProgType.MUDDATETIME:
            return _described({"type": "string"}, description, _HINTS[element])
        case ProgType.EFFECT:
            return _described(_effect_schema(), description)
        case ProgType.OUTFIT:
            return _described(_outfit_schema(item=False), description)
        case ProgType.OUTFIT_ITEM:
            return _described(_outfit_schema(item=True), description)
    if element in ID_TYPES:
        return _described({"type": "integer"}, description, f"The {kind} id, a positive integer.")
    if element in NAMED_TYPES:
        return _named_schema(element, description)
    # Unreachable for supported types; kept so a new ProgType fails loudly until mapped.
    raise UnsupportedParameterType(ValueType(element))


def _named_schema(element: ProgType, description: str) -> dict[str, Any]:
    kind = element.value
    name = "name or abbreviation" if element is ProgType.CLAN_PAYGRADE else "name"
    branches: list[dict[str, Any]] = [{"type": "integer"}, {"type": "string"}]
    hint = f"The {kind} id (a positive integer) or its {name} (not blank)."
    if element in CLAN_SCOPED_TYPES:
        # Rank, appointment and paygrade names repeat across clans; the object picks one clan.
        branches.append(
            _closed_object(
                {
                    "Clan": {
                        "anyOf": [{"type": "integer"}, {"type": "string"}],
                        "description": "The clan's id or name.",
                    },
                    "Name": {"type": "string", "description": f"The {kind} {name}."},
                }
            )
        )
        hint += f" To look the {name} up in one clan only, give an object with Clan and Name."
    return _described({"anyOf": branches}, description, hint)


def _effect_schema() -> dict[str, Any]:
    return _closed_object(
        {
            "EffectId": {"type": "integer", "description": "The id of the effect instance."},
            "OwnerType": {
                "anyOf": [
                    {"type": "string", "enum": list(_EFFECT_OWNER_TYPES)},
                    {"type": "null"},
                ],
                "description": "The kind of owner, or null to search every kind.",
            },
            "OwnerId": {
                "type": ["integer", "null"],
                "description": "The owner's id, or null to search every owner.",
            },
        }
    )


def _outfit_schema(*, item: bool) -> dict[str, Any]:
    owner = {"type": "integer", "description": "The id of the character who owns the outfit."}
    if not item:
        return _closed_object(
            {
                "OwnerCharacterId": owner,
                "OutfitName": {"type": "string", "description": "The outfit name."},
            }
        )
    return _closed_object(
        {
            "OwnerCharacterId": owner,
            "OutfitName": {
                "type": ["string", "null"],
                "description": "The outfit name, needed only if the item is in several outfits.",
            },
            "ItemId": {"type": "integer", "description": "The id of the outfit item (item id)."},
        }
    )


def _closed_object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _described(schema: dict[str, Any], *parts: str) -> dict[str, Any]:
    """`schema` with the non-blank `parts` joined as its description (none if all are blank)."""
    text = " ".join(part.strip() for part in parts if part.strip())
    return {**schema, "description": text} if text else schema
