"""Turn records: the API body of a request, and JSON round trips."""

from __future__ import annotations

import json

from storyteller_daemon.agent.models.interface import ModelRequest, ToolSpec, Usage, api_body
from storyteller_daemon.agent.records import (
    CallRecord,
    RequestRecord,
    TurnOutcome,
    TurnRecord,
)

TOOL = ToolSpec(
    "Noop",
    "Nothing.",
    {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
)


def test_api_body_carries_every_set_field_and_nothing_else() -> None:
    full = ModelRequest(
        model="gpt-5",
        input=[{"role": "user", "content": "hi"}],
        instructions="Be brief.",
        tools=(TOOL,),
        tool_choice="required",
        parallel_tool_calls=True,
        reasoning_effort="low",
        max_output_tokens=99,
        text_format={"type": "json_schema", "name": "v", "strict": True, "schema": {}},
        truncation="auto",
        metadata={"turn": "k"},
    )
    assert api_body(full) == {
        "model": "gpt-5",
        "input": [{"role": "user", "content": "hi"}],
        "store": False,
        "instructions": "Be brief.",
        "tools": [TOOL.to_api()],
        "tool_choice": "required",
        "parallel_tool_calls": True,
        "reasoning": {"effort": "low"},
        "include": ["reasoning.encrypted_content"],
        "max_output_tokens": 99,
        "text": {"format": {"type": "json_schema", "name": "v", "strict": True, "schema": {}}},
        "truncation": "auto",
        "metadata": {"turn": "k"},
    }
    bare = api_body(ModelRequest(model="m", input=[]))
    assert bare == {"model": "m", "input": [], "store": False}


def test_a_turn_record_survives_json() -> None:
    record = TurnRecord(
        "k",
        3,
        "Room Echo",
        TurnOutcome.TIME_BUDGET,
        rounds=1,
        requests=[
            RequestRecord(1, {"model": "m"}, None, Usage(1, 0, 2, 0), 0.5, "TimeoutError: x")
        ],
        calls=[CallRecord(1, "c1", "Noop", "{", {"ok": False, "error": "bad"}, malformed=True)],
        usage=Usage(1, 0, 2, 0),
        duration_seconds=31.0,
    )
    data = json.loads(json.dumps(record.to_dict()))
    assert data["outcome"] == "time_budget"
    assert data["requests"][0]["error"] == "TimeoutError: x"
    assert data["calls"][0] == {
        "round": 1,
        "call_id": "c1",
        "name": "Noop",
        "arguments": "{",
        "envelope": {"ok": False, "error": "bad"},
        "skipped": False,
        "refused": False,
        "malformed": True,
        "rule": None,
        "shadowed": False,
        "parked": False,
        "replayed": False,
    }
    assert data["usage"] == {
        "input_tokens": 1,
        "cached_tokens": 0,
        "output_tokens": 2,
        "reasoning_tokens": 0,
    }
