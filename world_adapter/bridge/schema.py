"""A JSON Schema of every frame of the bridge protocol, generated from the frame definitions.

`frame_schema` asks pydantic for the schema of each frame type in `messages.FRAME_TYPES` (and of
each event kind) with one shared ``$defs``, and adds what the dataclasses leave to the codec:
the ``type`` field every frame has and, for events, the ``kind`` that chooses the class. A frame
is valid when it matches exactly one entry of the top-level ``oneOf``. Field constraints the
frame definitions declare (world ids 1 to 2^63-1, invocation text length...) are in it; checks
the codec makes in code (an id's 1-64 characters, a timezone on every time) are not.
``storyteller bridge schema`` prints it, for implementers in other languages.
"""

from __future__ import annotations

from typing import Any

import pydantic

from world_adapter.bridge.messages import FRAME_TYPES, PROTOCOL_VERSION, EventFrame
from world_adapter.codec import EVENT_CLASSES

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def frame_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of any frame of the protocol."""
    frames = {name: cls for name, cls in FRAME_TYPES.items() if cls is not EventFrame}
    inputs: list[tuple[str, Any, pydantic.TypeAdapter[Any]]] = [
        (name, "validation", pydantic.TypeAdapter(cls)) for name, cls in frames.items()
    ]
    inputs += [
        (f"event:{kind.value}", "validation", pydantic.TypeAdapter(cls))
        for kind, cls in EVENT_CLASSES.items()
    ]
    parts, shared = pydantic.TypeAdapter.json_schemas(inputs)
    variants = []
    for (key, _), schema in parts.items():
        frame_type, _, kind = key.partition(":")
        properties: dict[str, Any] = {"type": {"const": frame_type}}
        required = ["type"]
        if kind:
            properties["kind"] = {"const": kind}
            required.append("kind")
        variants.append(
            {
                "title": f"{frame_type} ({kind})" if kind else frame_type,
                "allOf": [schema],
                "properties": properties,
                "required": required,
            }
        )
    return {
        "$schema": SCHEMA_DIALECT,
        "title": f"storyteller bridge protocol, version {PROTOCOL_VERSION}: any frame",
        "description": "One WebSocket text message: a JSON object whose `type` names the frame "
        "(docs/bridge-protocol.md). Receivers ignore fields they do not know.",
        "type": "object",
        "oneOf": variants,
        "$defs": shared.get("$defs", {}),
    }
