"""OpenAIResponsesModel against the scripted Responses server, through the real openai SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from storyteller_daemon.agent.models.interface import ModelRequest, ToolSpec, Usage
from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel
from storyteller_daemon.errors import ModelFatalError, ModelTransientError
from storyteller_daemon.testing.responses_answers import Fault, Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer

API_KEY = "sk-test-not-real"

SITUATION_TOOL = ToolSpec(
    name="CreateSituation",
    description="Open a new narrative thread.",
    parameters={
        "type": "object",
        "properties": {
            "Title": {"type": "string"},
            "RoomId": {"type": ["integer", "null"]},
        },
        "required": ["Title", "RoomId"],
        "additionalProperties": False,
    },
)
NOOP_TOOL = ToolSpec(
    name="Noop",
    description="Do nothing.",
    parameters={"type": "object", "properties": {}, "required": [], "additionalProperties": False},
)
VERDICT_FORMAT: dict[str, Any] = {
    "type": "json_schema",
    "name": "attention_verdict",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {
            "decision": {"type": "string", "enum": ["interested", "ignore"]},
            "reason": {"type": "string"},
        },
        "required": ["decision", "reason"],
        "additionalProperties": False,
    },
}
USER = {"role": "user", "content": "Location: The Quay [#12]\nEvent Text:\nA thief runs."}

ModelFactory = Callable[..., OpenAIResponsesModel]


@pytest.fixture
async def server() -> AsyncIterator[ScriptedResponsesServer]:
    async with ScriptedResponsesServer() as running:
        yield running


@pytest.fixture
async def make_model(server: ScriptedResponsesServer) -> AsyncIterator[ModelFactory]:
    """Builds adapters pointed at the scripted server; closes them all afterwards."""
    made: list[OpenAIResponsesModel] = []

    def factory(**overrides: Any) -> OpenAIResponsesModel:
        options: dict[str, Any] = {"api_key": API_KEY, "base_url": server.base_url}
        options.update(overrides)
        model = OpenAIResponsesModel(**options)
        made.append(model)
        return model

    yield factory
    for model in made:
        await model.close()


def event_request(**overrides: Any) -> ModelRequest:
    options: dict[str, Any] = {
        "model": "gpt-5-test",
        "input": [USER],
        "instructions": "You are the storyteller.",
        "tools": (SITUATION_TOOL, NOOP_TOOL),
        "tool_choice": "required",
        "parallel_tool_calls": True,
    }
    options.update(overrides)
    return ModelRequest(**options)


# ---------------------------------------------------------------------- request shape


async def test_request_carries_every_setting(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Reply.calls(("Noop", {})))
    request = event_request(
        reasoning_effort="low",
        max_output_tokens=900,
        truncation="auto",
        metadata={"storyteller": "7", "trigger": "room_echo"},
    )

    await make_model().respond(request)

    body = server.requests[0]
    assert body["store"] is False
    assert body["model"] == "gpt-5-test"
    assert body["instructions"] == "You are the storyteller."
    assert body["input"] == [USER]
    assert body["tools"] == [SITUATION_TOOL.to_api(), NOOP_TOOL.to_api()]
    assert all(tool["strict"] is True for tool in body["tools"])
    assert body["tool_choice"] == "required"
    assert body["parallel_tool_calls"] is True
    assert body["reasoning"] == {"effort": "low"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["max_output_tokens"] == 900
    assert body["truncation"] == "auto"
    assert body["metadata"] == {"storyteller": "7", "trigger": "room_echo"}
    assert "previous_response_id" not in body


async def test_unset_settings_are_not_sent(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Reply.text("hello"))

    await make_model().respond(ModelRequest(model="gpt-5-test", input=[USER]))

    body = server.requests[0]
    assert body["store"] is False
    for key in (
        "reasoning",
        "include",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "instructions",
        "max_output_tokens",
        "text",
        "truncation",
        "metadata",
        "service_tier",
    ):
        assert key not in body, key


async def test_a_service_tier_is_sent_and_the_serving_tier_read(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Reply.text("a digest"))

    response = await make_model().respond(
        ModelRequest(model="gpt-5-test", input=[USER], service_tier="flex")
    )

    assert server.requests[0]["service_tier"] == "flex"
    assert response.service_tier == "flex"


async def test_text_format_is_sent_as_text_format(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Reply.text('{"decision": "ignore", "reason": "quiet"}'))

    response = await make_model().respond(
        ModelRequest(model="gpt-mini", input=[USER], text_format=VERDICT_FORMAT)
    )

    assert server.requests[0]["text"] == {"format": VERDICT_FORMAT}
    assert response.output_text == '{"decision": "ignore", "reason": "quiet"}'
    assert response.function_calls == ()


# ---------------------------------------------------------------------- the tool loop


async def test_round_two_on_a_reasoning_model_resends_encrypted_reasoning(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(
        Reply.calls(("CreateSituation", {"Title": "Theft", "RoomId": 12}), reasoning=True),
        Reply.calls(("Noop", {})),
    )
    model = make_model()
    request = event_request(reasoning_effort="medium")

    first = await model.respond(request)
    (call,) = first.function_calls
    round_two = [
        *request.input,
        *first.continuation,
        {"type": "function_call_output", "call_id": call.call_id, "output": '{"ok": true}'},
    ]
    second = await model.respond(event_request(reasoning_effort="medium", input=round_two))

    sent = server.requests[1]["input"]
    assert [item.get("type", "message") for item in sent] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    reasoning, function_call, output = sent[1], sent[2], sent[3]
    assert reasoning["id"].startswith("rs_")
    assert reasoning["encrypted_content"]
    assert function_call["call_id"] == call.call_id == output["call_id"]
    assert function_call["name"] == "CreateSituation"
    assert server.requests[1]["instructions"] == "You are the storyteller."
    assert [c.name for c in second.function_calls] == ["Noop"]


async def test_the_sdk_transform_the_items_and_tools_skip_would_change_nothing_in_them(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    """Input items and tools go to the SDK as ``extra_body``, past its type-driven transform:
    that is only right while the transform leaves them as they are (no alias, no format)."""
    from openai._utils import transform
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    server.enqueue(
        Reply.calls(("CreateSituation", {"Title": "Theft", "RoomId": 12}), reasoning=True),
        Reply.calls(("Noop", {})),
    )
    model = make_model()
    first = await model.respond(event_request(reasoning_effort="medium"))
    (call,) = first.function_calls
    developer = {"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]}
    said = {"role": "assistant", "content": [{"type": "output_text", "text": "Noted."}]}
    round_two = [
        developer,
        USER,
        said,
        *first.continuation,
        {"type": "function_call_output", "call_id": call.call_id, "output": '{"ok": true}'},
    ]
    await model.respond(event_request(reasoning_effort="medium", input=round_two))

    sent = {key: server.requests[1][key] for key in ("input", "tools")}
    assert sent["input"] == round_two
    assert transform(sent, ResponseCreateParamsNonStreaming) == sent


async def test_reasoning_without_encrypted_content_is_left_out_of_the_continuation(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    # Without a reasoning effort nothing asks for encrypted content, so the server's
    # reasoning item has none; resending it would fail on a store=false request.
    server.enqueue(
        Reply.calls(("Noop", {}), reasoning=True),
        Reply.calls(("Noop", {})),
    )
    model = make_model()

    first = await model.respond(event_request())
    assert [item["type"] for item in first.continuation] == ["function_call"]
    (call,) = first.function_calls
    round_two = [
        USER,
        *first.continuation,
        {"type": "function_call_output", "call_id": call.call_id, "output": "{}"},
    ]
    second = await model.respond(event_request(input=round_two))

    assert second.status == "completed"
    assert [item.get("type", "message") for item in server.requests[1]["input"]] == [
        "message",
        "function_call",
        "function_call_output",
    ]


async def test_resending_unencrypted_reasoning_is_refused_as_the_real_api_does(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    # The failure FutureMUD's loop runs into: a reasoning item referenced by id alone.
    server.enqueue(Reply.calls(("Noop", {})))
    stale = {"type": "reasoning", "id": "rs_abc", "summary": []}

    with pytest.raises(ModelFatalError, match=r"HTTP 404.*Item with id 'rs_abc' not found"):
        await make_model().respond(event_request(input=[USER, stale]))
    assert server.remaining == 1


async def test_continuation_items_are_plain_json_dicts(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Reply.calls(("Noop", {}), reasoning=True))

    response = await make_model().respond(event_request(reasoning_effort="low"))

    reasoning, call = response.continuation
    assert reasoning == {
        "type": "reasoning",
        "id": reasoning["id"],
        "summary": [],
        "encrypted_content": reasoning["encrypted_content"],
    }
    assert call == {
        "type": "function_call",
        "id": call["id"],
        "call_id": response.function_calls[0].call_id,
        "name": "Noop",
        "arguments": "{}",
        "status": "completed",
    }


# ---------------------------------------------------------------------- response parsing


async def test_usage_is_parsed(server: ScriptedResponsesServer, make_model: ModelFactory) -> None:
    server.enqueue(Reply.calls(("Noop", {}), usage=Usage(1200, 1024, 80, 64)))

    response = await make_model().respond(event_request())

    assert response.usage == Usage(
        input_tokens=1200, cached_tokens=1024, output_tokens=80, reasoning_tokens=64
    )
    assert response.model == "gpt-5-test"
    assert response.id.startswith("resp_")


async def test_missing_usage_counts_as_zero(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Reply.calls(("Noop", {}), usage=None))

    response = await make_model().respond(event_request())

    assert response.usage == Usage()


async def test_several_calls_keep_their_order_and_raw_arguments(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(
        Reply.calls(
            ("CreateSituation", {"Title": "Smugglers", "RoomId": None}),
            ("Noop", {}),
        )
    )

    response = await make_model().respond(event_request())

    first, second = response.function_calls
    assert (first.name, first.arguments) == (
        "CreateSituation",
        '{"Title": "Smugglers", "RoomId": null}',
    )
    assert (second.name, second.arguments) == ("Noop", "{}")
    assert first.call_id != second.call_id


async def test_malformed_arguments_come_through_raw(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Reply.raw_arguments("CreateSituation", '{"Title": "Th'))

    response = await make_model().respond(event_request())

    (call,) = response.function_calls
    assert call.arguments == '{"Title": "Th'


async def test_empty_output_gives_no_calls_and_no_text(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Reply.empty())

    response = await make_model().respond(event_request())

    assert response.function_calls == ()
    assert response.output_text == ""
    assert response.continuation == ()
    assert response.status == "completed"


async def test_incomplete_status_and_reason_are_reported(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Reply.text("The thief").incomplete("max_output_tokens"))

    response = await make_model().respond(event_request())

    assert response.status == "incomplete"
    assert response.incomplete_reason == "max_output_tokens"
    assert response.output_text == "The thief"


# ---------------------------------------------------------------------- errors


async def test_rate_limit_is_retried_by_the_sdk_then_transient(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(*[Fault.status(429, retry_after=0.01)] * 3)

    with pytest.raises(ModelTransientError, match=r"HTTP 429 \(rate_limit_exceeded\)"):
        await make_model(max_retries=2).respond(event_request())
    assert len(server.requests) == 3


async def test_a_retried_server_error_can_still_succeed(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Fault.status(500, retry_after=0.01), Reply.calls(("Noop", {})))

    response = await make_model(max_retries=1).respond(event_request())

    assert [c.name for c in response.function_calls] == ["Noop"]
    assert len(server.requests) == 2


@pytest.mark.parametrize("status", [500, 502, 503, 409, 408])
async def test_server_errors_are_transient(
    server: ScriptedResponsesServer, make_model: ModelFactory, status: int
) -> None:
    server.enqueue(Fault.status(status, message="upstream trouble"))

    with pytest.raises(ModelTransientError, match=rf"HTTP {status}.*upstream trouble"):
        await make_model(max_retries=0).respond(event_request())


async def test_rejected_key_is_fatal_and_the_key_is_not_repeated(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Fault.status(401))

    with pytest.raises(ModelFatalError) as caught:
        await make_model().respond(event_request())

    message = str(caught.value)
    assert "HTTP 401 (invalid_api_key)" in message
    assert API_KEY not in message
    # The server quotes the masked key (first 3 and last 4 characters), as OpenAI does.
    assert API_KEY[-4:] not in message
    assert len(server.requests) == 1


async def test_unknown_model_is_fatal(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Fault.status(404, code="model_not_found"))

    with pytest.raises(
        ModelFatalError,
        match=r"HTTP 404 \(model_not_found\): The model `gpt-5-test` does not exist",
    ):
        await make_model().respond(event_request())


@pytest.mark.parametrize("status", [400, 403, 422])
async def test_rejected_requests_are_fatal(
    server: ScriptedResponsesServer, make_model: ModelFactory, status: int
) -> None:
    server.enqueue(Fault.status(status, code="bad_thing", message=f"no ({API_KEY})"))

    with pytest.raises(ModelFatalError, match=rf"HTTP {status} \(bad_thing\): no") as caught:
        await make_model().respond(event_request())
    assert API_KEY not in str(caught.value)
    assert len(server.requests) == 1


async def test_a_schema_the_api_rejects_is_fatal_and_names_the_tool(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    loose = ToolSpec(
        name="Echo",
        description="Echo a line.",
        parameters={"type": "object", "properties": {"Text": {"type": "string"}}},
    )

    with pytest.raises(ModelFatalError, match=r"HTTP 400.*Invalid schema for function 'Echo'"):
        await make_model().respond(event_request(tools=(loose,)))


async def test_hung_request_times_out_as_transient(
    server: ScriptedResponsesServer, make_model: ModelFactory
) -> None:
    server.enqueue(Fault.hang())

    with pytest.raises(ModelTransientError, match=r"no answer within 0.2 s"):
        await make_model(timeout_seconds=0.2, max_retries=0).respond(event_request())
    assert len(server.requests) == 1


async def test_unreachable_endpoint_is_transient() -> None:
    async with ScriptedResponsesServer() as stopped:
        url = stopped.base_url
    async with OpenAIResponsesModel(api_key=API_KEY, base_url=url, max_retries=0) as model:
        with pytest.raises(ModelTransientError, match="could not connect"):
            await model.respond(event_request())


# ---------------------------------------------------------------------- construction


@pytest.mark.parametrize(
    ("base_url", "name"),
    [
        ("http://127.0.0.1:9/v1", "openai:http://127.0.0.1:9/v1"),
        ("https://bob:hunter2@llm.example/v1", "openai:https://llm.example/v1"),
        (None, "openai:api.openai.com"),
    ],
)
async def test_name_shows_the_endpoint_without_credentials(base_url: str | None, name: str) -> None:
    async with OpenAIResponsesModel(api_key=API_KEY, base_url=base_url) as model:
        assert model.name == name


@pytest.mark.parametrize(
    ("options", "problem"),
    [
        ({"api_key": "  "}, "api_key must not be empty"),
        ({"api_key": "k", "timeout_seconds": 0}, "timeout_seconds must be positive"),
        ({"api_key": "k", "max_retries": -1}, "max_retries must be a non-negative integer"),
        ({"api_key": "k", "base_url": "127.0.0.1:8000/v1"}, "base_url must be an http"),
    ],
)
def test_bad_arguments_are_refused(options: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        OpenAIResponsesModel(**options)
