"""`storyteller bridge schema`: the JSON Schema of every frame, generated from the frame
definitions, accepts every example of docs/bridge-protocol.md and refuses what the codec
refuses for the fields it declares."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from storyteller_daemon.cli import app
from world_adapter.bridge.messages import FRAME_TYPES
from world_adapter.bridge.schema import frame_schema
from world_adapter.codec import EVENT_CLASSES

DOC = Path(__file__).resolve().parents[2] / "docs" / "bridge-protocol.md"
EXAMPLES = re.findall(r"```json\n(.*?)```", DOC.read_text(encoding="utf-8"), re.DOTALL)
ECHO = json.loads(next(e for e in EXAMPLES if '"kind": "room_echo"' in e))
INVOKE = json.loads(next(e for e in EXAMPLES if '"type": "invoke"' in e))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = frame_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_schema_has_one_entry_per_frame_type_and_event_kind() -> None:
    titles = [variant["title"] for variant in frame_schema()["oneOf"]]
    expected = [t for t in FRAME_TYPES if t != "event"]
    expected += [f"event ({kind.value})" for kind in EVENT_CLASSES]
    assert sorted(titles) == sorted(expected)


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"example-{i}" for i in range(len(EXAMPLES))])
def test_every_example_of_the_document_is_valid(
    validator: jsonschema.Draft202012Validator, example: str
) -> None:
    validator.validate(json.loads(example))


@pytest.mark.parametrize(
    "frame",
    [
        {**ECHO, "cell_id": -1},
        {**ECHO, "cell_id": 0},
        {**ECHO, "source_character_id": 2**63},
        {**ECHO, "cell_id": 1.5},
        {**ECHO, "cell_id": "101"},
        {**ECHO, "kind": "dance"},
        {k: v for k, v in ECHO.items() if k != "text"},
        {**ECHO, "type": "shout"},
        {**INVOKE, "text": "x" * 4001},
        {**INVOKE, "storyteller": 0},
        {k: v for k, v in INVOKE.items() if k != "id"},
        {"type": "ping"},
    ],
)
def test_frames_the_codec_refuses_do_not_validate(
    validator: jsonschema.Draft202012Validator, frame: dict[str, Any]
) -> None:
    assert not validator.is_valid(frame)


def test_the_command_prints_the_generated_schema() -> None:
    result = CliRunner().invoke(app, ["bridge", "schema"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(json.dumps(frame_schema()))
