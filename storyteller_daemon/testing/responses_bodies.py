"""The bodies the scripted Responses server answers with: responses shaped like the real
API's, and its error answers (with the real API's messages)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from typing import Any

from aiohttp import web

from storyteller_daemon.testing.responses_answers import Item, Reply

ENCRYPTED_REASONING = "reasoning.encrypted_content"


def response_body(
    reply: Reply, body: Mapping[str, Any], next_id: Callable[[str], str], created_at: int
) -> dict[str, Any]:
    """The Responses-API body answering request `body` with `reply`; `next_id(prefix)` names
    each new object, `created_at` is the Unix time the response says it was made."""
    response_id = next_id("resp")
    include = body.get("include") or []
    output: list[Item] = []
    if reply.reasoning:
        reasoning: Item = {"type": "reasoning", "id": next_id("rs"), "summary": []}
        if ENCRYPTED_REASONING in include:
            token = f"scripted-reasoning:{reasoning['id']}".encode()
            reasoning["encrypted_content"] = base64.b64encode(token).decode()
        output.append(reasoning)
    for template in reply.items:
        item = dict(template)
        prefix = {"message": "msg", "function_call": "fc", "reasoning": "rs"}.get(
            str(item.get("type")), "item"
        )
        item.setdefault("id", next_id(prefix))
        if item.get("type") == "function_call":
            item.setdefault("call_id", next_id("call"))
        output.append(item)
    usage = reply.usage
    usage_body = (
        None
        if usage is None
        else {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {
                "cached_tokens": usage.cached_tokens,
                "cache_write_tokens": 0,
            },
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
            "total_tokens": usage.input_tokens + usage.output_tokens,
        }
    )
    reasoning_settings = body.get("reasoning") or {}
    return {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": reply.status,
        "background": False,
        "error": None,
        "incomplete_details": (
            {"reason": reply.incomplete_reason} if reply.incomplete_reason else None
        ),
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "max_tool_calls": None,
        "model": body.get("model"),
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": {"effort": reasoning_settings.get("effort"), "summary": None},
        "service_tier": body.get("service_tier") or "default",  # served as asked
        "store": body.get("store", True),
        "temperature": 1.0,
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools", []),
        "top_p": 1.0,
        "truncation": body.get("truncation", "disabled"),
        "usage": usage_body,
        "user": None,
        "metadata": body.get("metadata") or {},
    }


def error_response(
    status: int,
    message: str,
    param: str | None,
    code: str | None,
    error_type: str = "invalid_request_error",
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    """An OpenAI-style error answer."""
    payload = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return web.json_response(payload, status=status, headers=headers)


def default_message(
    status: int, code: str | None, body: Mapping[str, Any], request: web.Request
) -> str:
    """What the real API says for ``status`` (401 quotes a masked key, as OpenAI's does)."""
    if status == 401:
        key = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        masked = f"{key[:3]}{'*' * max(len(key) - 7, 0)}{key[-4:]}" if len(key) > 7 else "***"
        return (
            f"Incorrect API key provided: {masked}. You can find your API key at "
            "https://platform.openai.com/account/api-keys."
        )
    if status == 404 and code == "model_not_found":
        return f"The model `{body.get('model')}` does not exist or you do not have access to it."
    if status == 429:
        return "Rate limit reached for requests. Please try again later."
    if status >= 500:
        return "The server had an error while processing your request. Sorry about that!"
    return f"Scripted HTTP {status} error."
