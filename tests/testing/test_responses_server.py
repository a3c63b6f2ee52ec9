"""The scripted Responses server: body shapes, scripting, faults, request checks, shutdown."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
import pytest

# The server's bodies are checked against the SDK's own response model, so the fake cannot drift
# from what the real client parses.
from openai.types.responses import (
    Response,
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseReasoningItem,
)

from storyteller_daemon.agent.models.interface import Usage
from storyteller_daemon.testing.responses_answers import Fault, Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer

KEY = "sk-test-not-real"
STRICT_TOOL: dict[str, Any] = {
    "type": "function",
    "name": "CreateSituation",
    "description": "Open a thread.",
    "strict": True,
    "parameters": {
        "type": "object",
        "properties": {"Title": {"type": "string"}, "RoomId": {"type": ["integer", "null"]}},
        "required": ["Title", "RoomId"],
        "additionalProperties": False,
    },
}

LOOSE_OK: dict[str, Any] = {
    "type": "object",
    "properties": {"a": {"type": "string"}},
    "required": ["a"],
    "additionalProperties": False,
}


@pytest.fixture
async def server() -> AsyncIterator[ScriptedResponsesServer]:
    async with ScriptedResponsesServer() as running:
        yield running


@pytest.fixture
async def http() -> AsyncIterator[aiohttp.ClientSession]:
    async with aiohttp.ClientSession(headers={"Authorization": f"Bearer {KEY}"}) as session:
        yield session


async def post(
    http: aiohttp.ClientSession, server: ScriptedResponsesServer, body: Any
) -> tuple[int, dict[str, Any], Mapping[str, str]]:
    async with http.post(f"{server.base_url}/responses", json=body) as answer:
        return answer.status, await answer.json(), answer.headers.copy()


def request(**fields: Any) -> dict[str, Any]:
    return {"model": "gpt-test", "input": [{"role": "user", "content": "hi"}], **fields}


# ---------------------------------------------------------------------- response bodies


async def test_reply_bodies_parse_as_sdk_responses(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(
        Reply.calls(
            ("CreateSituation", {"Title": "Theft", "RoomId": 12}),
            ("Noop", {}),
            usage=Usage(100, 40, 20, 8),
            reasoning=True,
        )
    )
    body = request(
        tools=[STRICT_TOOL],
        tool_choice="required",
        parallel_tool_calls=True,
        store=False,
        include=["reasoning.encrypted_content"],
        reasoning={"effort": "low"},
        instructions="Narrate.",
        metadata={"turn": "1"},
        truncation="auto",
        text={"format": {"type": "json_schema", "name": "v", "strict": True, "schema": LOOSE_OK}},
    )

    status, payload, _ = await post(http, server, body)

    assert status == 200
    response = Response.model_validate(payload)
    assert response.id.startswith("resp_")
    assert response.object == "response"
    assert response.status == "completed"
    assert response.model == "gpt-test"
    assert response.instructions == "Narrate."
    assert response.metadata == {"turn": "1"}
    assert response.truncation == "auto"
    assert response.tool_choice == "required"
    assert response.reasoning is not None and response.reasoning.effort == "low"
    assert response.text is not None and response.text.format is not None
    assert response.text.format.type == "json_schema"
    reasoning, situation, noop = response.output
    assert isinstance(reasoning, ResponseReasoningItem)
    assert reasoning.id.startswith("rs_")
    assert reasoning.encrypted_content
    assert base64.b64decode(reasoning.encrypted_content).decode().endswith(reasoning.id)
    assert isinstance(situation, ResponseFunctionToolCall)
    assert situation.id is not None and situation.id.startswith("fc_")
    assert situation.call_id.startswith("call_")
    assert (situation.name, situation.arguments) == (
        "CreateSituation",
        '{"Title": "Theft", "RoomId": 12}',
    )
    assert isinstance(noop, ResponseFunctionToolCall)
    assert noop.call_id != situation.call_id
    assert response.usage is not None
    assert response.usage.input_tokens == 100
    assert response.usage.input_tokens_details.cached_tokens == 40
    assert response.usage.output_tokens == 20
    assert response.usage.output_tokens_details.reasoning_tokens == 8
    assert response.usage.total_tokens == 120


async def test_text_reply_is_an_assistant_message(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Reply.text("The tide turns."))

    _, payload, _ = await post(http, server, request())

    response = Response.model_validate(payload)
    (message,) = response.output
    assert isinstance(message, ResponseOutputMessage)
    assert message.role == "assistant"
    assert message.id.startswith("msg_")
    assert response.output_text == "The tide turns."


async def test_reasoning_is_encrypted_only_when_asked(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Reply.calls(("Noop", {}), reasoning=True))

    _, payload, _ = await post(http, server, request())

    reasoning = payload["output"][0]
    assert reasoning["type"] == "reasoning"
    assert "encrypted_content" not in reasoning


async def test_empty_incomplete_and_usage_free_replies(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Reply.empty(), Reply.text("cut").incomplete("max_output_tokens"))
    server.enqueue(Reply.calls(("Noop", {}), usage=None))

    _, empty, _ = await post(http, server, request())
    _, cut, _ = await post(http, server, request())
    _, no_usage, _ = await post(http, server, request())

    assert empty["output"] == []
    assert empty["status"] == "completed"
    assert Response.model_validate(cut).incomplete_details is not None
    assert cut["status"] == "incomplete"
    assert cut["incomplete_details"] == {"reason": "max_output_tokens"}
    assert no_usage["usage"] is None
    assert Response.model_validate(no_usage).usage is None


async def test_raw_arguments_are_sent_verbatim(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Reply.raw_arguments("CreateSituation", "{not json"))

    _, payload, _ = await post(http, server, request())

    assert payload["output"][0]["arguments"] == "{not json"


# ---------------------------------------------------------------------- scripting


async def test_requests_are_logged_and_answers_taken_in_order(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Reply.text("one"), Fault.status(500), Reply.text("three"))

    answers = [await post(http, server, request(metadata={"n": str(n)})) for n in range(3)]

    assert [status for status, _, _ in answers] == [200, 500, 200]
    assert answers[2][1]["output"][0]["content"][0]["text"] == "three"
    assert [body["metadata"]["n"] for body in server.requests] == ["0", "1", "2"]
    assert server.remaining == 0


async def test_empty_queue_without_responder_is_a_clear_500(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    status, payload, _ = await post(http, server, request())

    assert status == 500
    assert payload["error"]["code"] == "no_scripted_reply"
    assert "No scripted reply" in payload["error"]["message"]
    assert len(server.requests) == 1


async def test_responder_answers_when_the_queue_is_empty(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    seen: list[str] = []

    def responder(body: dict[str, Any]) -> Reply | Fault:
        seen.append(body["model"])
        return Reply.text(f"dynamic for {body['model']}")

    server.enqueue(Reply.text("queued"))
    server.responder = responder

    _, first, _ = await post(http, server, request())
    _, second, _ = await post(http, server, request(model="gpt-other"))

    assert first["output"][0]["content"][0]["text"] == "queued"
    assert second["output"][0]["content"][0]["text"] == "dynamic for gpt-other"
    assert seen == ["gpt-other"]


async def test_responder_faults_and_failures_are_reported(
    http: aiohttp.ClientSession,
) -> None:
    answers: list[Any] = [Fault.status(503), "not a reply"]

    def responder(body: dict[str, Any]) -> Reply | Fault:
        if not answers:
            raise LookupError("script ran dry")
        result: Reply | Fault = answers.pop(0)
        return result

    async with ScriptedResponsesServer(responder=responder) as server:
        statuses = [await post(http, server, request()) for _ in range(3)]

    assert [status for status, _, _ in statuses] == [503, 500, 500]
    assert "returned str, not Reply or Fault" in statuses[1][1]["error"]["message"]
    assert "raised LookupError: script ran dry" in statuses[2][1]["error"]["message"]


def test_enqueue_refuses_other_objects() -> None:
    server = ScriptedResponsesServer()
    with pytest.raises(TypeError, match="enqueue takes Reply or Fault objects, got dict"):
        server.enqueue({"output": []})  # type: ignore[arg-type]


# ---------------------------------------------------------------------- faults


async def test_rate_limit_fault_has_retry_headers_and_an_openai_error_body(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Fault.status(429, retry_after=0.25))

    status, payload, headers = await post(http, server, request())

    assert status == 429
    assert headers["retry-after-ms"] == "250"
    assert headers["retry-after"] == "1"
    assert payload["error"]["code"] == "rate_limit_exceeded"
    assert payload["error"]["type"] == "requests"
    assert payload["error"]["message"]


async def test_auth_fault_quotes_only_a_masked_key(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Fault.status(401))

    status, payload, _ = await post(http, server, request())

    assert status == 401
    assert payload["error"]["code"] == "invalid_api_key"
    assert "Incorrect API key provided: sk-*" in payload["error"]["message"]
    assert KEY not in payload["error"]["message"]


async def test_model_not_found_fault_names_the_model(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Fault.status(404, code="model_not_found"))

    status, payload, _ = await post(http, server, request(model="gpt-nope"))

    assert status == 404
    assert payload["error"] == {
        "message": "The model `gpt-nope` does not exist or you do not have access to it.",
        "type": "invalid_request_error",
        "param": None,
        "code": "model_not_found",
    }


async def test_faults_are_answered_before_the_request_is_checked(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Fault.status(500))

    status, _, _ = await post(http, server, {"input": "no model"})

    assert status == 500
    assert server.remaining == 0


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"status_code": 200}, "a fault needs a 4xx or 5xx status, got 200"),
        ({"status_code": 429, "retry_after": -1}, "retry_after must be >= 0 seconds"),
    ],
)
def test_bad_faults_are_refused(arguments: dict[str, Any], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        Fault.status(**arguments)


async def test_stopping_releases_a_hung_request(http: aiohttp.ClientSession) -> None:
    server = ScriptedResponsesServer()
    await server.start()
    try:
        server.enqueue(Fault.hang())
        pending = asyncio.create_task(post(http, server, request()))
        async with asyncio.timeout(5):
            await server.wait_for_requests(1)
        assert not pending.done()
    finally:
        await server.stop()

    status, payload, _ = await pending
    assert status == 503
    assert payload["error"]["message"] == "The scripted server stopped."


# ---------------------------------------------------------------------- request checks


async def test_unencrypted_reasoning_with_store_false_is_refused(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Reply.text("unused"))
    items = [{"role": "user", "content": "hi"}, {"type": "reasoning", "id": "rs_1", "summary": []}]

    status, payload, _ = await post(http, server, request(input=items, store=False))
    stored_status, _, _ = await post(http, server, request(input=items))

    assert status == 404
    assert payload["error"]["message"].startswith("Item with id 'rs_1' not found.")
    assert stored_status == 200
    assert server.remaining == 0


async def test_item_references_with_store_false_are_refused(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    items = [{"type": "item_reference", "id": "fc_9"}]

    status, payload, _ = await post(http, server, request(input=items, store=False))

    assert status == 404
    assert "Item with id 'fc_9' not found" in payload["error"]["message"]


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (
            [{"type": "function_call_output", "call_id": "call_x", "output": "{}"}],
            "No tool call found for function call output with call_id call_x.",
        ),
        (
            [{"type": "function_call", "call_id": "call_y", "name": "Noop", "arguments": "{}"}],
            "No tool output found for function call call_y.",
        ),
    ],
)
async def test_unpaired_tool_items_are_refused(
    server: ScriptedResponsesServer,
    http: aiohttp.ClientSession,
    items: list[dict[str, Any]],
    message: str,
) -> None:
    server.enqueue(Reply.text("unused"))

    status, payload, _ = await post(http, server, request(input=items, store=False))

    assert status == 400
    assert payload["error"]["message"] == message
    assert server.remaining == 1


async def test_paired_tool_items_are_accepted(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Reply.text("ok"))
    items = [
        {"role": "user", "content": "hi"},
        {"type": "function_call", "call_id": "call_z", "name": "Noop", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_z", "output": "{}"},
    ]

    status, _, _ = await post(http, server, request(input=items, store=False))

    assert status == 200


def loose(parameters: dict[str, Any], name: str = "Echo") -> dict[str, Any]:
    return {"type": "function", "name": name, "strict": True, "parameters": parameters}


@pytest.mark.parametrize(
    ("tool", "message"),
    [
        (
            loose({"type": "object", "properties": {"Text": {"type": "string"}}}),
            "Invalid schema for function 'Echo': In context=(), 'additionalProperties' is "
            "required to be supplied and to be false.",
        ),
        (
            loose(
                {
                    "type": "object",
                    "properties": {"Text": {"type": "string"}, "Room": {"type": "integer"}},
                    "required": ["Text"],
                    "additionalProperties": False,
                }
            ),
            "Invalid schema for function 'Echo': In context=(), 'required' is required to be "
            "supplied and to be an array including every key in properties. Missing 'Room'.",
        ),
        (
            loose(
                {
                    "type": "object",
                    "properties": {
                        "Where": {
                            "anyOf": [
                                {"type": "object", "properties": {"Id": {"type": "integer"}}},
                                {"type": "null"},
                            ]
                        }
                    },
                    "required": ["Where"],
                    "additionalProperties": False,
                }
            ),
            "Invalid schema for function 'Echo': In context=('properties', 'Where', 'anyOf', "
            "'0'), 'additionalProperties' is required to be supplied and to be false.",
        ),
        (
            loose({"type": "object", "properties": {}}, name="Echo Line"),
            "Invalid 'tools[0].name': string does not match pattern.",
        ),
    ],
)
async def test_tools_the_real_api_would_refuse_are_refused(
    server: ScriptedResponsesServer,
    http: aiohttp.ClientSession,
    tool: dict[str, Any],
    message: str,
) -> None:
    status, payload, _ = await post(http, server, request(tools=[tool]))

    assert status == 400
    assert payload["error"]["message"].startswith(message)


async def test_a_loose_tool_without_strict_is_accepted(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    server.enqueue(Reply.empty())
    tool = {
        **loose({"type": "object", "properties": {"Text": {"type": "string"}}}),
        "strict": False,
    }

    status, payload, _ = await post(http, server, request(tools=[tool]))

    assert status == 200
    assert Response.model_validate(payload).tools[0].name == "Echo"  # type: ignore[union-attr]


async def test_a_loose_strict_text_format_is_refused(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    text = {
        "format": {
            "type": "json_schema",
            "name": "verdict",
            "strict": True,
            "schema": {"type": "object", "properties": {"decision": {"type": "string"}}},
        }
    }

    status, payload, _ = await post(http, server, request(text=text))

    assert status == 400
    assert payload["error"]["code"] == "invalid_json_schema"
    assert payload["error"]["message"].startswith("Invalid schema for response_format 'verdict'")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"input": "hi"}, "Missing required parameter: 'model'."),
        (request(stream=True), "The scripted server does not stream"),
        (request(previous_response_id="resp_1"), "The scripted server keeps no responses"),
        ([1, 2], "The request body must be a JSON object."),
    ],
)
async def test_unsupported_requests_are_refused(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession, body: Any, message: str
) -> None:
    status, payload, _ = await post(http, server, body)

    assert status == 400
    assert payload["error"]["message"].startswith(message)


async def test_unparsable_json_is_refused(
    server: ScriptedResponsesServer, http: aiohttp.ClientSession
) -> None:
    async with http.post(f"{server.base_url}/responses", data=b"{nope") as answer:
        payload = await answer.json()

    assert answer.status == 400
    assert "could not parse the JSON body" in payload["error"]["message"]
    assert server.requests == []


# ---------------------------------------------------------------------- lifecycle


async def test_base_url_and_lifecycle_errors() -> None:
    server = ScriptedResponsesServer()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url
    async with server:
        assert server.base_url.startswith("http://127.0.0.1:")
        assert server.base_url.endswith("/v1")
        with pytest.raises(RuntimeError, match="already running"):
            await server.start()
    await server.stop()
    with pytest.raises(RuntimeError, match="not running"):
        _ = server.base_url


def test_bad_port_is_refused() -> None:
    with pytest.raises(ValueError, match="port must be 0..65535, got 70000"):
        ScriptedResponsesServer(port=70000)
