"""Strict-schema normalisation (FutureMUD tests 5-7) and the schemas of every built-in tool."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from storyteller_daemon.agent.schema import strict_schema
from storyteller_daemon.agent.tools.registry import BUILTIN_TOOLS, builtin_tools
from storyteller_daemon.domain.tool_names import FULL_ONLY_TOOLS, FULL_PROFILE_TOOLS, ToolProfile


def strict_problems(schema: Any, path: str = "$") -> list[str]:
    """Every place where `schema` breaks the strict structured-output rules."""
    if not isinstance(schema, dict):
        return []
    problems: list[str] = []
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "object" in kinds or "properties" in schema:
        if schema.get("additionalProperties") is not False:
            problems.append(f"{path}: additionalProperties is not false")
        props = schema.get("properties") or {}
        if list(props) != schema.get("required"):
            problems.append(f"{path}: required is not every property in order")
        for name, sub in props.items():
            problems += strict_problems(sub, f"{path}.{name}")
    problems += strict_problems(schema.get("items"), f"{path}[]")
    for i, sub in enumerate(schema.get("anyOf") or []):
        problems += strict_problems(sub, f"{path}|{i}")
    return problems


def test_null_schema_becomes_closed_empty_object() -> None:
    empty: dict[str, Any] | None
    for empty in (None, {}):
        assert strict_schema(empty) == {
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        }


def test_object_schemas_are_closed_at_every_level() -> None:
    authored = {
        "type": "object",
        "properties": {
            "Target": {
                "type": "object",
                "properties": {"Id": {"type": "integer"}},
                "required": ["Id"],
                "additionalProperties": True,
            },
            "Tags": {
                "type": "array",
                "items": {"type": "object", "properties": {"Name": {"type": "string"}}},
            },
        },
        "required": ["Target", "Tags"],
        "additionalProperties": True,
    }
    result = strict_schema(authored)
    assert result["additionalProperties"] is False
    assert result["properties"]["Target"]["additionalProperties"] is False
    item = result["properties"]["Tags"]["items"]
    assert item["additionalProperties"] is False
    assert item["required"] == ["Name"]
    assert item["properties"]["Name"]["type"] == ["string", "null"]
    assert strict_problems(result) == []


def test_optional_property_becomes_required_and_nullable() -> None:
    authored = {
        "type": "object",
        "properties": {"Query": {"type": "string"}, "Limit": {"type": "integer"}},
        "required": ["Limit"],
    }
    result = strict_schema(authored)
    assert result["required"] == ["Query", "Limit"]
    assert result["properties"]["Query"]["type"] == ["string", "null"]
    assert result["properties"]["Limit"]["type"] == "integer"


def test_optional_enum_accepts_null_and_untyped_optional_gets_a_null_branch() -> None:
    authored = {
        "type": "object",
        "properties": {
            "Mode": {"type": "string", "enum": ["a", "b"]},
            "Either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "Ref": {"$ref": "#/$defs/Thing"},
        },
        "$defs": {"Thing": {"type": "object", "properties": {"X": {"type": "number"}}}},
    }
    result = strict_schema(authored)
    assert result["properties"]["Mode"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert result["properties"]["Either"]["anyOf"][-1] == {"type": "null"}
    assert result["properties"]["Ref"] == {"anyOf": [{"$ref": "#/$defs/Thing"}, {"type": "null"}]}
    assert result["$defs"]["Thing"]["additionalProperties"] is False


def test_normalisation_leaves_the_authored_schema_alone_and_is_idempotent() -> None:
    authored = {"type": "object", "properties": {"Query": {"type": "string"}}}
    before = copy.deepcopy(authored)
    once = strict_schema(authored)
    assert authored == before
    assert strict_schema(once) == once


def test_a_non_object_root_is_refused() -> None:
    with pytest.raises(ValueError, match="JSON object"):
        strict_schema({"type": "string"})


def test_every_built_in_schema_is_strict() -> None:
    for tool in BUILTIN_TOOLS.values():
        assert strict_problems(tool.parameters) == [], tool.name
        assert tool.spec().to_api()["strict"] is True
        assert tool.description.strip()


def test_built_ins_keep_futuremud_names_and_declaration_order() -> None:
    offered = [t.name for t in builtin_tools(ToolProfile.FULL)]
    assert offered == [n for n in FULL_PROFILE_TOOLS if n in BUILTIN_TOOLS]
    assert offered == [
        "CreateSituation",
        "UpdateSituation",
        "ResolveSituation",
        "ShowSituation",
        "Noop",
        "OnlinePlayers",
        "PlayerInformation",
        "ListMemoriesForPlayer",
        "ShowMemory",
        "CreateMemory",
        "UpdateMemory",
        "ForgetMemory",
        "Landmarks",
        "ShowLandmark",
        "SearchReferenceDocuments",
        "ShowReferenceDocument",
        "PathBetweenRooms",
        "PathFromCharacterToRoom",
        "PathBetweenCharacters",
        "RecentCharacterPlans",
        "CharacterPlans",
        "CurrentDateTime",
        "DateTimeForTarget",
        "CalendarDefinition",
    ]
    event_focused = [t.name for t in builtin_tools(ToolProfile.EVENT_FOCUSED)]
    assert event_focused == [n for n in offered if n not in FULL_ONLY_TOOLS]


def test_built_in_parameter_names_match_futuremud() -> None:
    def params(name: str) -> list[str]:
        return list(BUILTIN_TOOLS[name].parameters["properties"])

    assert params("CreateSituation") == ["Title", "Description", "CharacterId", "RoomId"]
    assert params("UpdateSituation")[:5] == ["Id", "Title", "Description", "CharacterId", "RoomId"]
    # FutureMUD's parameters first; Importance (optional, nullable) is ours.
    assert params("CreateMemory") == ["Id", "Title", "Details", "Importance"]
    assert params("UpdateMemory") == ["Id", "Title", "Details", "Importance"]
    importance = BUILTIN_TOOLS["CreateMemory"].parameters["properties"]["Importance"]
    assert importance["type"] == ["integer", "null"]
    assert params("SearchReferenceDocuments") == ["Query"]
    assert params("Noop") == [] and params("OnlinePlayers") == []
    query = BUILTIN_TOOLS["SearchReferenceDocuments"].parameters["properties"]["Query"]
    assert query["type"] == ["string", "null"]
