"""A `Model` behind `ScriptedResponsesServer`: the in-process script, over HTTP.

`ModelResponder` makes a model (usually a `ScriptedModel`, with its steps) the server's
responder, so a test through the real ``openai`` SDK is scripted in the same words as one without
HTTP. Each request body is read back into the `ModelRequest` it stands for (`request_from_body`,
the inverse of the body the SDK adapter sends); the model's response is sent as a `Reply`, and a
model error as the HTTP error that would have caused it::

    model = ScriptedModel(then=by_kind(attention=attend_all(), turn=calls(("Noop", {}))))
    async with ScriptedResponsesServer(responder=ModelResponder(model)) as server:
        ...  # point OpenAIResponsesModel at server.base_url; model.requests holds what it sent
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from storyteller_daemon.agent.models.interface import Model, ModelRequest, ModelResponse, ToolSpec
from storyteller_daemon.errors import ModelFatalError, ModelTransientError
from storyteller_daemon.testing.responses_answers import Fault, Item, Reply

TRANSIENT_STATUS = 503
"""The HTTP status a `ModelTransientError` is answered with."""
FATAL_STATUS = 400
"""The HTTP status a `ModelFatalError` without a status of its own is answered with."""


def request_from_body(body: dict[str, Any]) -> ModelRequest:
    """The `ModelRequest` a Responses-API request body stands for (transport settings such as
    timeouts and retries are not in a body, so they are left unset)."""
    tools = tuple(
        ToolSpec(
            t["name"], t.get("description", ""), t.get("parameters", {}), t.get("strict", True)
        )
        for t in body.get("tools") or []
        if t.get("type") == "function"
    )
    return ModelRequest(
        model=body["model"],
        input=list(body.get("input") or []),
        instructions=body.get("instructions"),
        tools=tools,
        tool_choice=body.get("tool_choice"),
        parallel_tool_calls=body.get("parallel_tool_calls"),
        reasoning_effort=(body.get("reasoning") or {}).get("effort"),
        max_output_tokens=body.get("max_output_tokens"),
        text_format=(body.get("text") or {}).get("format"),
        truncation=body.get("truncation"),
        metadata=dict(body.get("metadata") or {}),
        prompt_cache_key=body.get("prompt_cache_key"),
    )


def reply_from_response(response: ModelResponse) -> Reply:
    """The `Reply` that the SDK adapter reads back as `response`: a reasoning item if its
    continuation holds one, its text as an assistant message, then its function calls (with
    their call ids), its usage and its status."""
    items: tuple[Item, ...] = Reply.text(response.output_text).items if response.output_text else ()
    items += tuple(
        {
            "type": "function_call",
            "status": "completed",
            "call_id": call.call_id,
            "name": call.name,
            "arguments": call.arguments,
        }
        for call in response.function_calls
    )
    return Reply(
        items=items,
        reasoning=any(item.get("type") == "reasoning" for item in response.continuation),
        usage=response.usage,
        status=response.status,
        incomplete_reason=response.incomplete_reason,
    )


@dataclass
class ModelResponder:
    """A responder for `ScriptedResponsesServer` that asks `model` (see the module).

    A `ModelTransientError` is answered with HTTP 503, a `ModelFatalError` with its status (400
    when it has none); any other exception is the server's "responder failed" 500.
    """

    model: Model

    async def __call__(self, body: dict[str, Any]) -> Reply | Fault:
        try:
            response = await self.model.respond(request_from_body(body))
        except ModelTransientError as exc:
            return Fault.status(TRANSIENT_STATUS, message=str(exc))
        except ModelFatalError as exc:
            return Fault.status(exc.status or FATAL_STATUS, message=str(exc))
        return reply_from_response(response)
