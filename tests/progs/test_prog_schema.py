"""JSON schemas of custom-tool parameters, per prog type."""

from __future__ import annotations

from typing import Any

import pytest

from progs.schema import UnsupportedParameterType, json_schema_for, tool_parameters_schema
from progs.types import NAMED_TYPES, ProgParameter, ProgType, ValueType

GENDER_ENUM = ["male", "female", "neuter", "non-binary", "indeterminate"]
ID_OR_NAME = [{"type": "integer"}, {"type": "string"}]


def schema(type_text: str, description: str = "Who.") -> dict[str, Any]:
    return json_schema_for(ValueType.parse(type_text), description)


@pytest.mark.parametrize(
    ("type_text", "expected"),
    [
        ("Boolean", {"type": "boolean", "description": "Who."}),
        ("Number", {"type": "number", "description": "Who."}),
        ("Text", {"type": "string", "description": "Who."}),
        (
            "Gender",
            {
                "type": "string",
                "enum": GENDER_ENUM,
                "description": "Who. Valid values are male, female, neuter, non-binary or "
                "indeterminate.",
            },
        ),
        (
            "DateTime",
            {
                "type": "string",
                "description": "Who. Use an ISO-8601 datetime string such as 2026-02-11T12:34:56Z.",
            },
        ),
        (
            "TimeSpan",
            {
                "type": "string",
                "description": "Who. Use a TimeSpan string ([d.]hh:mm:ss) such as 00:30:00.",
            },
        ),
        (
            "MudDateTime",
            {
                "type": "string",
                "description": "Who. Use a parseable mud datetime string such as never or a "
                "saved datetime value.",
            },
        ),
        (
            "Character",
            {"type": "integer", "description": "Who. The Character id, a positive integer."},
        ),
        (
            "Location",
            {"type": "integer", "description": "Who. The Location id, a positive integer."},
        ),
        ("Item", {"type": "integer", "description": "Who. The Item id, a positive integer."}),
        ("Exit", {"type": "integer", "description": "Who. The Exit id, a positive integer."}),
        (
            "Race",
            {
                "anyOf": ID_OR_NAME,
                "description": "Who. The Race id (a positive integer) or its name (not blank).",
            },
        ),
    ],
)
def test_scalar_schemas(type_text: str, expected: dict[str, Any]) -> None:
    assert schema(type_text) == expected


@pytest.mark.parametrize("element", sorted(NAMED_TYPES))
def test_named_types_offer_id_or_name(element: ProgType) -> None:
    result = json_schema_for(ValueType(element), "")

    assert result["anyOf"][:2] == ID_OR_NAME
    assert f"The {element.value} id (a positive integer) or its" in result["description"]


@pytest.mark.parametrize("type_text", ["ClanRank", "ClanAppointment", "ClanPaygrade"])
def test_clan_scoped_types_also_offer_a_clan_object(type_text: str) -> None:
    clan_object = schema(type_text)["anyOf"][2]

    assert clan_object["type"] == "object"
    assert clan_object["properties"]["Clan"]["anyOf"] == ID_OR_NAME
    assert clan_object["properties"]["Name"]["type"] == "string"
    assert clan_object["required"] == ["Clan", "Name"]
    assert clan_object["additionalProperties"] is False


def test_paygrade_mentions_abbreviations() -> None:
    assert "name or abbreviation" in schema("ClanPaygrade")["description"]


def test_effect_schema() -> None:
    result = schema("Effect")

    assert result["type"] == "object"
    assert result["description"] == "Who."
    assert result["required"] == ["EffectId", "OwnerType", "OwnerId"]
    assert result["additionalProperties"] is False
    props = result["properties"]
    assert props["EffectId"]["type"] == "integer"
    assert props["OwnerType"]["anyOf"] == [
        {"type": "string", "enum": ["character", "item", "cell", "zone", "shard"]},
        {"type": "null"},
    ]
    assert props["OwnerId"]["type"] == ["integer", "null"]


def test_outfit_schema() -> None:
    result = schema("Outfit")

    assert result["required"] == ["OwnerCharacterId", "OutfitName"]
    assert result["additionalProperties"] is False
    assert result["properties"]["OwnerCharacterId"]["type"] == "integer"
    assert result["properties"]["OutfitName"]["type"] == "string"


def test_outfit_item_schema() -> None:
    result = schema("OutfitItem")

    assert result["required"] == ["OwnerCharacterId", "OutfitName", "ItemId"]
    assert result["additionalProperties"] is False
    assert result["properties"]["OutfitName"]["type"] == ["string", "null"]
    assert result["properties"]["ItemId"]["type"] == "integer"


def test_collection_is_an_array_of_the_element_schema() -> None:
    assert schema("Collection<Character>") == {
        "type": "array",
        "description": "Who.",
        "items": {
            "type": "integer",
            "description": "Item value. The Character id, a positive integer.",
        },
    }


def test_blank_description_is_left_out() -> None:
    assert schema("Text", "  ") == {"type": "string"}
    assert schema("Gender", "")["description"].startswith("Valid values")


@pytest.mark.parametrize("type_text", ["Void", "Dictionary", "Anything", "Collection<Dictionary>"])
def test_unsupported_types_raise(type_text: str) -> None:
    with pytest.raises(UnsupportedParameterType) as caught:
        schema(type_text)
    assert caught.value.value_type == ValueType.parse(type_text)
    assert str(caught.value) == (
        f"Prog parameter type {ValueType.parse(type_text).describe()} cannot be supplied by a "
        "tool call."
    )


def test_schemas_are_fresh_copies() -> None:
    first = schema("Effect")
    first["properties"]["EffectId"]["type"] = "string"

    assert schema("Effect")["properties"]["EffectId"]["type"] == "integer"


def test_tool_parameters_schema() -> None:
    parameters = [
        (ProgParameter("target", ValueType(ProgType.CHARACTER)), "Who to warn."),
        (ProgParameter("message", ValueType(ProgType.TEXT)), ""),
    ]

    assert tool_parameters_schema(parameters) == {
        "type": "object",
        "properties": {
            "target": {
                "type": "integer",
                "description": "Who to warn. The Character id, a positive integer.",
            },
            "message": {"type": "string"},
        },
        "required": ["target", "message"],
        "additionalProperties": False,
    }


def test_tool_parameters_schema_without_parameters() -> None:
    assert tool_parameters_schema([]) == {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": False,
    }


def test_tool_with_an_unsupported_parameter_is_invalid() -> None:
    parameters = [
        (ProgParameter("target", ValueType(ProgType.CHARACTER)), ""),
        (ProgParameter("extra", ValueType(ProgType.ANYTHING)), ""),
    ]

    with pytest.raises(UnsupportedParameterType):
        tool_parameters_schema(parameters)


def test_duplicate_parameter_names_are_rejected() -> None:
    parameters = [
        (ProgParameter("x", ValueType(ProgType.TEXT)), ""),
        (ProgParameter("x", ValueType(ProgType.NUMBER)), ""),
    ]

    with pytest.raises(ValueError, match="Duplicate prog parameter name 'x'."):
        tool_parameters_schema(parameters)
