"""A scripted model behind the scripted Responses server, through the real openai SDK: requests
read back as sent, answers, usage, reasoning and errors as the SDK adapter sees them; async
responders, shutdown and the in-flight count."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest

from storyteller_daemon.agent.models.interface import ModelRequest, ToolSpec, Usage, api_body
from storyteller_daemon.agent.models.openai_responses import OpenAIResponsesModel
from storyteller_daemon.errors import ModelFatalError, ModelTransientError
from storyteller_daemon.testing.model import ScriptedModel, calls, text
from storyteller_daemon.testing.model_responder import ModelResponder, request_from_body
from storyteller_daemon.testing.responses_answers import Reply
from storyteller_daemon.testing.responses_server import ScriptedResponsesServer
from storyteller_daemon.testing.steps import hang

NOOP = ToolSpec(
    "Noop",
    "Do nothing.",
    {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
)
TURN = ModelRequest(
    model="gpt-5",
    input=[{"role": "user", "content": "The bells ring."}],
    instructions="Narrate.",
    tools=(NOOP,),
    tool_choice="required",
    parallel_tool_calls=True,
    reasoning_effort="low",
    max_output_tokens=2000,
    truncation="auto",
    metadata={"storyteller": "1"},
    prompt_cache_key="st1",
)


@dataclass
class Rig:
    model: ScriptedModel
    server: ScriptedResponsesServer
    sdk: OpenAIResponsesModel


@pytest.fixture
async def rig() -> AsyncIterator[Rig]:
    model = ScriptedModel()
    async with ScriptedResponsesServer(responder=ModelResponder(model)) as server:
        sdk = OpenAIResponsesModel(api_key="sk-local", base_url=server.base_url, max_retries=0)
        try:
            yield Rig(model, server, sdk)
        finally:
            await sdk.close()


async def post(server: ScriptedResponsesServer, body: dict[str, Any]) -> tuple[int, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.post(f"{server.base_url}/responses", json=body) as answer,
    ):
        return answer.status, await answer.json()


def test_a_body_reads_back_as_the_request_it_stands_for() -> None:
    assert request_from_body(api_body(TURN)) == TURN
    bare = ModelRequest(model="gpt-5-nano", input=[])
    assert request_from_body(api_body(bare)) == bare


async def test_the_model_is_asked_what_the_sdk_sent_and_its_answer_comes_back(rig: Rig) -> None:
    scripted = calls(("Noop", {}), text="thinking", usage=Usage(100, 40, 20, 8), reasoning=True)
    rig.model.add(scripted)
    response = await rig.sdk.respond(TURN)
    assert rig.model.requests == [TURN]
    assert [(c.call_id, c.name, c.arguments) for c in response.function_calls] == [
        (c.call_id, c.name, c.arguments) for c in scripted.function_calls
    ]
    assert response.output_text == "thinking"
    assert response.usage == Usage(100, 40, 20, 8)
    reasoning = response.continuation[0]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]


async def test_an_incomplete_answer_stays_incomplete(rig: Rig) -> None:
    rig.model.add(text("cut", incomplete="max_output_tokens"))
    response = await rig.sdk.respond(ModelRequest(model="gpt-5", input=TURN.input))
    assert (response.status, response.incomplete_reason) == ("incomplete", "max_output_tokens")
    assert response.output_text == "cut" and response.function_calls == ()


async def test_model_errors_come_back_as_the_errors_that_cause_them(rig: Rig) -> None:
    rig.model.add(
        ModelTransientError("overloaded"),
        ModelFatalError("bad key", status=401),
        ModelFatalError("refused"),
    )
    with pytest.raises(ModelTransientError, match="HTTP 503"):
        await rig.sdk.respond(TURN)
    with pytest.raises(ModelFatalError) as refused:
        await rig.sdk.respond(TURN)
    assert refused.value.status == 401
    with pytest.raises(ModelFatalError) as rejected:
        await rig.sdk.respond(TURN)
    assert rejected.value.status == 400
    status, payload = await post(rig.server, api_body(TURN))  # the script has run out
    assert status == 500
    assert payload["error"]["message"] == (
        "The scripted responder raised AssertionError: unscripted request #4"
    )


async def test_an_async_responder_is_awaited() -> None:
    async def later(body: dict[str, Any]) -> Reply:
        await asyncio.sleep(0)
        return Reply.text(f"hello {body['model']}")

    async with ScriptedResponsesServer(responder=later) as server:
        status, payload = await post(server, api_body(TURN))
    assert status == 200
    assert payload["output"][0]["content"][0]["text"] == "hello gpt-5"


async def test_stopping_releases_a_request_the_model_never_answers() -> None:
    model = ScriptedModel(then=hang())
    server = ScriptedResponsesServer(responder=ModelResponder(model))
    await server.start()
    try:
        pending = asyncio.create_task(post(server, api_body(TURN)))
        async with asyncio.timeout(5):
            await model.wait_for_requests(1)
        assert not pending.done()
    finally:
        await server.stop()
    status, payload = await pending
    assert status == 503
    assert payload["error"]["message"] == "The scripted server stopped."


async def test_requests_in_flight_are_counted(rig: Rig) -> None:
    rig.model.add(*(text("ok") for _ in range(3)))
    rig.model.hold()
    answers = [asyncio.create_task(post(rig.server, api_body(TURN))) for _ in range(3)]
    async with asyncio.timeout(5):
        await rig.model.wait_for_requests(3)
    assert rig.server.in_flight == rig.server.most_in_flight == 3
    rig.model.release()
    assert [status for status, _ in await asyncio.gather(*answers)] == [200] * 3
    assert (rig.server.in_flight, rig.server.most_in_flight) == (0, 3)
