"""The schema advertises only what the converter accepts, for every prog type."""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest

from progs.convert import convert_argument, convert_arguments
from progs.schema import json_schema_for, tool_parameters_schema
from progs.types import (
    CLAN_SCOPED_TYPES,
    ID_TYPES,
    NAMED_TYPES,
    UNSUPPORTED_PARAMETER_TYPES,
    VALUE_TYPES,
    ProgParameter,
    ProgType,
    UnsupportedParameterType,
    ValueType,
    supports_tool_parameter,
)

STRICT_KEYWORDS = {
    "type",
    "description",
    "enum",
    "items",
    "properties",
    "required",
    "additionalProperties",
    "anyOf",
}
EXAMPLE = re.compile(r"such as (\S+?)[.,]?(?=\s|$)")
FREE_TEXT = "Harbour Watch"
SUPPORTED = [t for t in ProgType if t not in UNSUPPORTED_PARAMETER_TYPES]


def samples(schema: dict[str, Any]) -> list[Any]:
    """Values a model could send that satisfy `schema`, covering every branch and enum value.

    A string's content comes from the "such as X" example of its description when there is
    one, as the model is told; otherwise any text satisfies it.
    """
    if "anyOf" in schema:
        return [value for branch in schema["anyOf"] for value in samples(branch)]
    if isinstance(schema["type"], list):
        return [value for kind in schema["type"] for value in samples({**schema, "type": kind})]
    if "enum" in schema:
        return list(schema["enum"])
    match schema["type"]:
        case "null":
            return [None]
        case "boolean":
            return [True, False]
        case "integer":
            return [7]
        case "number":
            return [7, 2.5, -0.125]
        case "string":
            example = EXAMPLE.search(schema.get("description", ""))
            return [example.group(1) if example else FREE_TEXT]
        case "array":
            return [[], samples(schema["items"])]
        case "object":
            options = {name: samples(prop) for name, prop in schema["properties"].items()}
            width = max(len(values) for values in options.values())
            return [
                {name: values[i % len(values)] for name, values in options.items()}
                for i in range(width)
            ]
    raise AssertionError(f"unexpected schema {schema}")


def schema_nodes(schema: Any) -> list[dict[str, Any]]:
    if not isinstance(schema, dict):
        return []
    children = [*schema.get("anyOf", []), *schema.get("properties", {}).values()]
    if "items" in schema:
        children.append(schema["items"])
    return [schema, *itertools.chain.from_iterable(schema_nodes(c) for c in children)]


def test_every_type_has_exactly_one_conversion_rule() -> None:
    fixed = {
        ProgType.EFFECT,
        ProgType.OUTFIT,
        ProgType.OUTFIT_ITEM,
    }
    groups = [VALUE_TYPES, ID_TYPES, NAMED_TYPES, fixed, UNSUPPORTED_PARAMETER_TYPES]

    for element in ProgType:
        assert sum(element in group for group in groups) == 1, element
    assert CLAN_SCOPED_TYPES <= NAMED_TYPES


@pytest.mark.parametrize("element", list(ProgType))
def test_unsupported_types_fail_in_schema_and_converter_alike(element: ProgType) -> None:
    for value_type in (ValueType(element), ValueType(element, collection=True)):
        supported = supports_tool_parameter(value_type)
        assert supported == (element not in UNSUPPORTED_PARAMETER_TYPES)
        if supported:
            json_schema_for(value_type, "")
            continue
        with pytest.raises(UnsupportedParameterType):
            json_schema_for(value_type, "")
        with pytest.raises(UnsupportedParameterType):
            convert_argument(value_type, 1)


@pytest.mark.parametrize("collection", [False, True])
@pytest.mark.parametrize("element", SUPPORTED)
def test_every_advertised_value_converts(element: ProgType, collection: bool) -> None:
    value_type = ValueType(element, collection)
    values = samples(json_schema_for(value_type, "What it is."))

    assert values
    for value in values:
        convert_argument(value_type, value)


@pytest.mark.parametrize("element", SUPPORTED)
def test_schemas_use_only_strict_mode_keywords(element: ProgType) -> None:
    for node in schema_nodes(json_schema_for(ValueType(element, collection=True), "d")):
        assert set(node) <= STRICT_KEYWORDS, node
        if "properties" in node:
            assert node["required"] == list(node["properties"])
            assert node["additionalProperties"] is False


def test_a_whole_tool_call_built_from_its_schema_converts() -> None:
    parameters = [ProgParameter(element.value.lower(), ValueType(element)) for element in SUPPORTED]
    schema = tool_parameters_schema([(parameter, "") for parameter in parameters])
    call = {name: samples(prop)[0] for name, prop in schema["properties"].items()}

    converted = convert_arguments(parameters, call)

    assert list(converted) == schema["required"]
