"""Whole turns through the real openai SDK over HTTP to the scripted Responses server.

These check what actually goes on the wire: instructions, strict tool schemas, the tool-choice
sequence, parallel calls, reasoning effort per scope, ``store: false``, and that a reasoning
model's second round carries the encrypted reasoning item, the call and its output.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from storyteller_daemon.agent.attention import AttentionGate, AttentionOptions, BatchEntry
from storyteller_daemon.agent.fencing import Fence
from storyteller_daemon.agent.loop import MALFORMED_FEEDBACK, ToolLoop
from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel
from storyteller_daemon.agent.prompts import PromptBuilder
from storyteller_daemon.agent.records import TurnOutcome
from storyteller_daemon.agent.tools.context import ToolContext
from storyteller_daemon.agent.trigger import Trigger, TriggerKind
from storyteller_daemon.config import LimitsConfig
from storyteller_daemon.domain.storytellers import (
    CustomTool,
    Heartbeat,
    ReasoningEffort,
    Storyteller,
)
from storyteller_daemon.storage.store import Store
from storyteller_daemon.testing.clock import FakeClock
from storyteller_daemon.testing.responses_answers import Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from world_adapter.sim import SimWorld

MAREN = 1001
ECHO_TOOL = CustomTool(
    "EchoToRoom",
    "Shows a line to a room.",
    "EchoToRoom",
    True,
    (("Room", "Where."), ("Text", "What.")),
)


@pytest.fixture
async def server() -> AsyncIterator[ScriptedResponsesServer]:
    async with ScriptedResponsesServer() as running:
        yield running


@pytest.fixture
async def model(server: ScriptedResponsesServer) -> AsyncIterator[OpenAIResponsesModel]:
    adapter = OpenAIResponsesModel(
        api_key="sk-test-0123456789", base_url=server.base_url, max_retries=0
    )
    yield adapter
    await adapter.close()


@pytest.fixture
def teller(storyteller: Storyteller) -> Storyteller:
    return replace(
        storyteller,
        model="gpt-5-event",
        time_model="gpt-5-time",
        attention_model="gpt-5-attention",
        reasoning_effort=ReasoningEffort.HIGH,
        time_reasoning_effort=ReasoningEffort.MINIMAL,
        attention_reasoning_effort=ReasoningEffort.LOW,
        system_prompt="You narrate the harbour.",
        time_system_prompt="You review the harbour.",
        custom_tools=(ECHO_TOOL,),
    )


def user_item(body: dict[str, Any]) -> dict[str, Any]:
    return dict(body["input"][0])


async def test_an_echo_turn_on_the_wire(
    server: ScriptedResponsesServer,
    model: OpenAIResponsesModel,
    teller: Storyteller,
    ctx: ToolContext,
    world: SimWorld,
    sqlite_store: Store,
) -> None:
    trigger = Trigger.from_event(world.emote(MAREN, "drops a sealed letter."))
    prompt = await PromptBuilder(world, sqlite_store.situations, LimitsConfig()).build(
        teller, trigger
    )
    server.enqueue(
        Reply.calls(
            (
                "CreateSituation",
                {"Title": "Letter", "Description": "Sealed", "CharacterId": MAREN, "RoomId": None},
            ),
            ("EchoToRoom", {"Room": 101, "Text": "The wax seal bears a kraken."}),
            reasoning=True,
        ),
        Reply.calls(("Noop", {}), reasoning=True),
    )
    loop = ToolLoop(model, LimitsConfig(), FakeClock())
    record = await loop.run(teller, trigger, prompt.text, ctx, turn_key="echo-1")
    assert record.outcome is TurnOutcome.COMPLETED, record.to_dict()
    first, second = server.requests
    assert first["model"] == "gpt-5-event"
    assert first["reasoning"] == {"effort": "high"}
    assert first["include"] == ["reasoning.encrypted_content"]
    assert first["store"] is False
    assert first["tool_choice"] == "required" and second["tool_choice"] == "auto"
    assert first["parallel_tool_calls"] is True
    assert first["max_output_tokens"] == 1200
    assert first["instructions"].startswith("You narrate the harbour.\n\nTool boundary:")
    assert "prefer Noop" in first["instructions"]
    assert first["input"] == [{"role": "user", "content": prompt.text}]
    names = [t["name"] for t in first["tools"]]
    assert names[-1] == "EchoToRoom" and names[4] == "Noop"
    assert all(t["type"] == "function" and t["strict"] is True for t in first["tools"])
    create = next(t for t in first["tools"] if t["name"] == "CreateSituation")
    assert create["parameters"]["required"] == list(create["parameters"]["properties"])
    assert create["parameters"]["properties"]["RoomId"]["type"] == ["integer", "null"]
    # The same tools and instructions every round, so the prompt prefix stays cacheable.
    assert (second["tools"], second["instructions"]) == (first["tools"], first["instructions"])
    assert [i.get("type", "message") for i in second["input"]] == [
        "message", "reasoning", "function_call", "function_call", "function_call_output",
        "function_call_output",
    ]  # fmt: skip
    reasoning = second["input"][1]
    assert reasoning["encrypted_content"]
    outputs = [i for i in second["input"] if i.get("type") == "function_call_output"]
    calls = [i for i in second["input"] if i.get("type") == "function_call"]
    assert [o["call_id"] for o in outputs] == [c["call_id"] for c in calls]
    results = [json.loads(o["output"]) for o in outputs]
    assert all(r["ok"] for r in results), results
    assert results[1]["result"] == {
        "Function": "EchoToRoom",
        "ReturnType": "Boolean",
        "Result": True,
    }
    assert world.output_of(MAREN)[-1] == "The wax seal bears a kraken."
    assert record.requests[0].request["input"] == first["input"]


async def test_a_heartbeat_turn_uses_the_time_scope(
    server: ScriptedResponsesServer,
    model: OpenAIResponsesModel,
    teller: Storyteller,
    ctx: ToolContext,
) -> None:
    trigger = Trigger(
        TriggerKind.HEARTBEAT, datetime(2026, 1, 1, tzinfo=UTC), heartbeat=Heartbeat.HOUR
    )
    server.enqueue(Reply.calls(("OnlinePlayers", {})), Reply.text("Nothing else."))
    record = await ToolLoop(model, LimitsConfig(), FakeClock()).run(
        teller, trigger, "Hourly review.", ctx, turn_key="hb-1"
    )
    assert record.outcome is TurnOutcome.COMPLETED
    first, second = server.requests
    assert first["model"] == "gpt-5-time"
    assert first["reasoning"] == {"effort": "minimal"}
    assert first["instructions"].startswith("You review the harbour.")
    assert "prefer Noop" not in first["instructions"]
    assert "EchoToRoom" not in [t["name"] for t in first["tools"]]
    players = json.loads(second["input"][-1]["output"])["result"]["Players"]
    assert {p["Id"] for p in players} == {1001, 1002, 1003}
    assert record.requests[1].response is not None
    assert record.requests[1].response["output_text"] == "Nothing else."


async def test_malformed_arguments_over_http(
    server: ScriptedResponsesServer,
    model: OpenAIResponsesModel,
    teller: Storyteller,
    ctx: ToolContext,
) -> None:
    trigger = Trigger(TriggerKind.DIRECT, datetime(2026, 1, 1, tzinfo=UTC), text="Check in.")
    server.enqueue(
        Reply.raw_arguments("CreateSituation", '{"Title": "Oops"'), Reply.calls(("Noop", {}))
    )
    record = await ToolLoop(model, LimitsConfig(), FakeClock()).run(
        teller, trigger, "Check in.", ctx, turn_key="direct-1"
    )
    assert record.outcome is TurnOutcome.NOOP
    second = server.requests[1]["input"]
    assert second[-1] == {"role": "user", "content": MALFORMED_FEEDBACK}
    assert json.loads(second[-2]["output"])["error"].startswith("Malformed tool-call JSON: ")
    assert server.requests[0]["reasoning"] == {"effort": "high"}


async def test_the_attention_request_on_the_wire(
    server: ScriptedResponsesServer, model: OpenAIResponsesModel, teller: Storyteller
) -> None:
    server.enqueue(
        Reply.text('{"attend": [{"id": "1", "why": "a letter changes hands"}], "ignore": []}')
    )
    entries = [BatchEntry("1", '#101 echo: "Maren drops a letter."')]
    gate = AttentionGate(model, LimitsConfig(), options=AttentionOptions(timeout_seconds=9.0))
    fence = Fence.new()
    judgement = await gate.judge(teller, "Open situations: none.", entries, fence)
    verdict = judgement.verdicts["1"]
    assert verdict.interested and verdict.reason == "a letter changes hands"
    [body] = server.requests
    assert body["model"] == "gpt-5-attention"
    assert body["reasoning"] == {"effort": "low"}
    assert body["store"] is False
    assert body["truncation"] == "auto"
    assert body["max_output_tokens"] == LimitsConfig().attention_max_output_tokens + 16
    assert body["text"]["format"]["type"] == "json_schema"
    assert body["text"]["format"]["strict"] is True
    assert body["prompt_cache_key"] == f"storyteller-{teller.id}-attention"
    assert "tools" not in body
    assert user_item(body) == {
        "role": "user",
        "content": (
            "Open situations: none.\n\n"
            f"<<world-text {fence.token} from game events>>\n"
            '[1] #101 echo: "Maren drops a letter."\n'
            f"<<end world-text {fence.token}>>"
        ),
    }
