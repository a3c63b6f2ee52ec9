"""The checks by which the scripted Responses server rejects what the real API would reject.

`check_request` gives the error the real API would answer a request body with, or None: a
missing model, streaming or ``previous_response_id`` (the server keeps no state), a tool name
outside the allowed pattern, a strict tool or ``text.format`` schema that breaks the rules of
strict structured outputs, reasoning items or item references that cannot be resolved while
``store`` is false, and function calls and their outputs that do not pair up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


@dataclass(frozen=True)
class Rejection:
    """An error answer: its HTTP status, ``error.message``, ``error.param`` and ``error.code``."""

    status: int
    message: str
    param: str | None
    code: str | None


def check_without_reasoning(body: Mapping[str, Any]) -> Rejection | None:
    """The error a server whose models do not reason gives for reasoning fields, or None.

    OpenAI answers a non-reasoning model's ``reasoning.effort`` and encrypted-reasoning
    ``include`` like this; local servers serving such models refuse them too.
    """
    if body.get("reasoning") is not None:
        message = "Unsupported parameter: 'reasoning.effort' is not supported with this model."
        return Rejection(400, message, "reasoning.effort", "unsupported_parameter")
    if "reasoning.encrypted_content" in (body.get("include") or []):
        message = "Encrypted content is not supported with this model."
        return Rejection(400, message, "include", "unsupported_parameter")
    if body.get("prompt_cache_key") is not None:
        message = "Unsupported parameter: 'prompt_cache_key'."
        return Rejection(400, message, "prompt_cache_key", "unsupported_parameter")
    return None


def check_request(body: Mapping[str, Any]) -> Rejection | None:
    """The error the real API would give for ``body``, or None if it would accept it."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return Rejection(
            400, "Missing required parameter: 'model'.", "model", "missing_required_parameter"
        )
    if body.get("stream"):
        return Rejection(
            400, "The scripted server does not stream; send stream=false.", "stream", None
        )
    if body.get("previous_response_id") is not None:
        message = (
            "The scripted server keeps no responses; "
            "send the whole input instead of previous_response_id."
        )
        return Rejection(400, message, "previous_response_id", None)
    for index, tool in enumerate(body.get("tools") or []):
        rejection = _check_tool(index, tool)
        if rejection is not None:
            return rejection
    text_format = (body.get("text") or {}).get("format") or {}
    if text_format.get("type") == "json_schema" and text_format.get("strict"):
        problem = _strict_schema_problem(text_format.get("schema"), ())
        if problem is not None:
            message = f"Invalid schema for response_format '{text_format.get('name')}': {problem}"
            return Rejection(400, message, "text.format.schema", "invalid_json_schema")
    items = body.get("input")
    if isinstance(items, list):
        return _check_items(items, store=body.get("store", True) is not False)
    return None


def _check_tool(index: int, tool: Any) -> Rejection | None:
    if not isinstance(tool, dict) or tool.get("type") != "function":
        return None
    name = tool.get("name")
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        message = (
            f"Invalid 'tools[{index}].name': string does not match pattern. "
            "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        )
        return Rejection(400, message, f"tools[{index}].name", "invalid_value")
    if tool.get("strict"):
        problem = _strict_schema_problem(tool.get("parameters"), ())
        if problem is not None:
            message = f"Invalid schema for function '{name}': {problem}"
            return Rejection(
                400, message, f"tools[{index}].parameters", "invalid_function_parameters"
            )
    return None


def _strict_schema_problem(schema: Any, context: tuple[str, ...]) -> str | None:
    """The first rule of strict structured outputs that ``schema`` breaks, if any."""
    if not isinstance(schema, dict):
        return None
    types = schema.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    properties = schema.get("properties")
    if is_object or isinstance(properties, dict):
        if schema.get("additionalProperties") is not False:
            return (
                f"In context={context!r}, 'additionalProperties' is required to be supplied "
                "and to be false."
            )
        properties = properties if isinstance(properties, dict) else {}
        required = schema.get("required")
        required = required if isinstance(required, list) else []
        for key in properties:
            if key not in required:
                return (
                    f"In context={context!r}, 'required' is required to be supplied and to be "
                    f"an array including every key in properties. Missing '{key}'."
                )
        for key, sub in properties.items():
            problem = _strict_schema_problem(sub, (*context, "properties", key))
            if problem is not None:
                return problem
    children: list[tuple[tuple[str, ...], Any]] = [((*context, "items"), schema.get("items"))]
    for index, sub in enumerate(schema.get("anyOf") or []):
        children.append(((*context, "anyOf", str(index)), sub))
    for defs_key in ("$defs", "definitions"):
        for name, sub in (schema.get(defs_key) or {}).items():
            children.append(((*context, defs_key, name), sub))
    for sub_context, sub in children:
        problem = _strict_schema_problem(sub, sub_context)
        if problem is not None:
            return problem
    return None


def _check_items(items: list[Any], *, store: bool) -> Rejection | None:
    call_ids: set[str] = set()
    output_ids: set[str] = set()
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        unresolvable = kind == "item_reference" or (
            kind == "reasoning" and not item.get("encrypted_content")
        )
        if unresolvable and not store:
            message = (
                f"Item with id '{item.get('id')}' not found. Items are not persisted when "
                "`store` is set to false. Try again with `store` set to true, or remove this "
                "item from your input."
            )
            return Rejection(404, message, "input", None)
        if kind == "function_call":
            call_ids.add(str(item.get("call_id")))
        elif kind == "function_call_output":
            call_id = str(item.get("call_id"))
            if call_id not in call_ids:
                message = f"No tool call found for function call output with call_id {call_id}."
                return Rejection(400, message, "input", None)
            output_ids.add(call_id)
    unanswered = sorted(call_ids - output_ids)
    if unanswered:
        message = f"No tool output found for function call {unanswered[0]}."
        return Rejection(400, message, "input", None)
    return None
