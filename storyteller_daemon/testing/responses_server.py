"""A scripted server that speaks the OpenAI Responses API, for tests and demos.

It answers ``POST /v1/responses`` on 127.0.0.1 with bodies shaped like the real API, so the real
``openai`` SDK (retries, timeouts, error classes, response parsing) is exercised end to end::

    async with ScriptedResponsesServer() as server:
        server.enqueue(
            Reply.calls(("CreateSituation", {"Title": "Theft"}), reasoning=True),
            Fault.status(429, retry_after=0.01),
            Reply.calls(("Noop", {})),
        )
        model = OpenAIResponsesModel(api_key="test", base_url=server.base_url)

Each request takes the next scripted answer; when the queue is empty ``responder`` (if set) is
asked, otherwise the server answers 500 "no scripted reply". Every request body is logged in
``requests``.

Like the real API, the server rejects requests a stateless client gets wrong, so those mistakes
fail in tests rather than in production:

* a reasoning item (or an ``item_reference``) without encrypted content while ``store`` is false
  gives 404 "Item with id 'rs_…' not found";
* a ``function_call_output`` without its ``function_call``, or a ``function_call`` without its
  output, gives 400;
* a strict tool or ``text.format`` schema whose objects lack ``additionalProperties: false`` or
  leave a property out of ``required`` gives 400, as does a tool name outside
  ``^[a-zA-Z0-9_-]{1,64}$``;
* ``previous_response_id`` and ``stream`` are refused with 400 (the server keeps no state and
  does not stream).

Reasoning items carry ``encrypted_content`` only when the request asked for it with
``include=["reasoning.encrypted_content"]``, as the real API does.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import json
import math
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import TracebackType
from typing import Any, Literal, cast

from aiohttp import web

from storyteller_daemon.agent.model import Usage

Item = dict[str, Any]
Responder = Callable[[dict[str, Any]], "Reply | Fault"]

_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_ENCRYPTED_REASONING = "reasoning.encrypted_content"
_ZERO_USAGE = Usage()


@dataclass(frozen=True)
class Reply:
    """One successful answer.

    Attributes:
        items: output items; ``id`` (and ``call_id`` of function calls) are filled in when absent.
        reasoning: put a reasoning item first (with encrypted content if the request asked).
        usage: token counts to report; None sends ``usage: null`` (the field is optional).
        status: the response status, e.g. ``completed`` or ``incomplete``.
        incomplete_reason: ``incomplete_details.reason`` when the status is ``incomplete``.
        delay_seconds: how long the server takes to answer (a model's latency).
    """

    items: tuple[Item, ...] = ()
    reasoning: bool = False
    usage: Usage | None = _ZERO_USAGE
    status: str = "completed"
    incomplete_reason: str | None = None
    delay_seconds: float = 0.0

    @classmethod
    def calls(
        cls,
        *calls: tuple[str, Mapping[str, Any]],
        usage: Usage | None = _ZERO_USAGE,
        reasoning: bool = False,
    ) -> Reply:
        """Function calls, given as ``(tool name, arguments)`` pairs."""
        items = tuple(
            _function_call(name, json.dumps(dict(arguments))) for name, arguments in calls
        )
        return cls(items=items, reasoning=reasoning, usage=usage)

    @classmethod
    def text(
        cls, text: str, *, usage: Usage | None = _ZERO_USAGE, reasoning: bool = False
    ) -> Reply:
        """An assistant message holding ``text``."""
        item: Item = {
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        }
        return cls(items=(item,), reasoning=reasoning, usage=usage)

    @classmethod
    def raw_arguments(
        cls,
        name: str,
        arguments: str,
        *,
        usage: Usage | None = _ZERO_USAGE,
        reasoning: bool = False,
    ) -> Reply:
        """A function call whose ``arguments`` text is sent exactly as given (e.g. broken JSON)."""
        return cls(items=(_function_call(name, arguments),), reasoning=reasoning, usage=usage)

    @classmethod
    def empty(cls, *, usage: Usage | None = _ZERO_USAGE) -> Reply:
        """A completed response with no output items."""
        return cls(usage=usage)

    def incomplete(self, reason: str = "max_output_tokens") -> Reply:
        """This reply, marked incomplete for ``reason``."""
        return replace(self, status="incomplete", incomplete_reason=reason)


def _function_call(name: str, arguments: str) -> Item:
    return {"type": "function_call", "status": "completed", "name": name, "arguments": arguments}


@dataclass(frozen=True)
class Fault:
    """An answer that is not a response: an HTTP error, or no answer at all.

    Attributes:
        kind: ``status`` (an error response) or ``hang`` (no answer until the server stops).
        status_code: the HTTP status of a ``status`` fault.
        code: the ``error.code`` in the body.
        message: the ``error.message``; a realistic default depends on the status.
        retry_after: seconds announced in ``retry-after-ms`` and ``retry-after``.
    """

    kind: Literal["status", "hang"]
    status_code: int = 500
    code: str | None = None
    message: str | None = None
    retry_after: float | None = None

    @classmethod
    def status(
        cls,
        status_code: int,
        *,
        code: str | None = None,
        message: str | None = None,
        retry_after: float | None = None,
    ) -> Fault:
        """An HTTP error with an OpenAI-style ``{"error": {...}}`` body.

        Raises:
            ValueError: the status is not a 4xx/5xx code, or ``retry_after`` is negative.
        """
        if not 400 <= status_code <= 599:
            raise ValueError(f"a fault needs a 4xx or 5xx status, got {status_code}")
        if retry_after is not None and not retry_after >= 0:
            raise ValueError(f"retry_after must be >= 0 seconds, got {retry_after!r}")
        return cls("status", status_code, code, message, retry_after)

    @classmethod
    def hang(cls) -> Fault:
        """Accept the request and never answer (until the server stops); for timeout tests."""
        return cls("hang")


@dataclass(frozen=True)
class _Rejection:
    status: int
    message: str
    param: str | None
    code: str | None


class ScriptedResponsesServer:
    """A Responses-API server on 127.0.0.1 answering from a script.

    Args:
        port: the port to bind; 0 picks a free one.
        responder: asked for an answer when the queue is empty (see `responder`).

    Attributes:
        requests: every request body that parsed as a JSON object, in order, including those
            answered with a fault or rejected.
        responder: ``(request body) -> Reply | Fault``, consulted when the queue is empty.
        models: model ids listed by ``GET /v1/models``; None answers 404, like a compatible
            server without that endpoint.
        api_key: when set, ``GET /v1/models`` answers 401 to any other bearer token.
    """

    def __init__(self, *, port: int = 0, responder: Responder | None = None) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0..65535, got {port}")
        self._port = port
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.models: list[str] | None = None
        self.api_key: str | None = None
        self._script: collections.deque[Reply | Fault] = collections.deque()
        self._serial = 0
        self._runner: web.AppRunner | None = None
        self._stopping = asyncio.Event()
        self._received = asyncio.Condition()

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Bind and start serving.

        Raises:
            RuntimeError: the server is already running.
        """
        if self._runner is not None:
            raise RuntimeError("the scripted Responses server is already running")
        app = web.Application()
        app.router.add_post("/v1/responses", self._handle)
        app.router.add_get("/v1/models", self._list_models)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        try:
            await web.TCPSite(runner, "127.0.0.1", self._port).start()
        except BaseException:
            await runner.cleanup()
            raise
        host_port = runner.addresses[0]
        self._port = int(host_port[1])
        self._stopping = asyncio.Event()
        self._runner = runner

    async def stop(self) -> None:
        """Release hung requests and stop serving; safe to call twice."""
        runner, self._runner = self._runner, None
        if runner is None:
            return
        self._stopping.set()
        await runner.cleanup()

    async def __aenter__(self) -> ScriptedResponsesServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def base_url(self) -> str:
        """The API root to give a client, ``http://127.0.0.1:PORT/v1``.

        Raises:
            RuntimeError: the server is not running.
        """
        if self._runner is None:
            raise RuntimeError("the scripted Responses server is not running; call start() first")
        return f"http://127.0.0.1:{self._port}/v1"

    # ------------------------------------------------------------------ scripting

    def enqueue(self, *answers: Reply | Fault) -> None:
        """Append answers, taken one per request in order.

        Raises:
            TypeError: an answer is not a `Reply` or a `Fault`.
        """
        for answer in answers:
            if not isinstance(answer, Reply | Fault):
                raise TypeError(
                    f"enqueue takes Reply or Fault objects, got {type(answer).__name__}"
                )
        self._script.extend(answers)

    async def wait_for_requests(self, count: int) -> None:
        """Return once at least ``count`` requests have been received.

        It waits without limit: wrap it in ``asyncio.timeout`` in tests.
        """
        async with self._received:
            await self._received.wait_for(lambda: len(self.requests) >= count)

    @property
    def remaining(self) -> int:
        """How many scripted answers have not been used yet."""
        return len(self._script)

    # ------------------------------------------------------------------ serving

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await request.text())
        except ValueError:
            return _error(400, "We could not parse the JSON body of your request.", None, None)
        if not isinstance(body, dict):
            return _error(400, "The request body must be a JSON object.", None, None)
        self.requests.append(body)
        async with self._received:
            self._received.notify_all()
        # Transport faults (rate limits, outages) happen before the request is looked at.
        head = self._script[0] if self._script else None
        if isinstance(head, Fault):
            self._script.popleft()
            return await self._answer_fault(head, body, request)
        rejection = _check_request(body)
        if rejection is not None:
            return _error(rejection.status, rejection.message, rejection.param, rejection.code)
        answer: object
        if self._script:
            answer = self._script.popleft()
        elif self.responder is not None:
            try:
                # Checked below: a responder written in a test may return anything.
                answer = cast(object, self.responder(body))
            except Exception as exc:
                # A broken responder is a test bug: say so in the answer the client sees.
                message = f"The scripted responder raised {type(exc).__name__}: {exc}"
                return _error(500, message, None, "scripted_responder_failed", "server_error")
        else:
            message = (
                "No scripted reply: the queue is empty and no responder is set "
                f"(request #{len(self.requests)})."
            )
            return _error(500, message, None, "no_scripted_reply", "server_error")
        if isinstance(answer, Fault):
            return await self._answer_fault(answer, body, request)
        if not isinstance(answer, Reply):
            message = (
                f"The scripted responder returned {type(answer).__name__}, not Reply or Fault."
            )
            return _error(500, message, None, "scripted_responder_failed", "server_error")
        if answer.delay_seconds > 0:
            stopping = asyncio.ensure_future(self._stopping.wait())
            try:
                await asyncio.wait({stopping}, timeout=answer.delay_seconds)
            finally:
                stopping.cancel()
        return web.json_response(self._render(answer, body))

    async def _list_models(self, request: web.Request) -> web.StreamResponse:
        given = request.headers.get("Authorization", "")
        if self.api_key is not None and given != f"Bearer {self.api_key}":
            return _error(401, _default_message(401, None, {}, request), None, "invalid_api_key")
        if self.models is None:
            return _error(404, "Invalid URL (GET /v1/models)", None, None)
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _answer_fault(
        self, fault: Fault, body: dict[str, Any], request: web.Request
    ) -> web.StreamResponse:
        if fault.kind == "hang":
            await self._stopping.wait()
            return _error(503, "The scripted server stopped.", None, None, "server_error")
        headers: dict[str, str] = {}
        if fault.retry_after is not None:
            headers["retry-after-ms"] = f"{fault.retry_after * 1000:g}"
            headers["retry-after"] = str(math.ceil(fault.retry_after))
        status = fault.status_code
        message = fault.message or _default_message(status, fault.code, body, request)
        error_type = (
            "server_error"
            if status >= 500
            else "requests"
            if status == 429
            else "invalid_request_error"
        )
        code = fault.code
        if code is None:
            code = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status)
        return _error(status, message, None, code, error_type, headers)

    def _next_id(self, prefix: str) -> str:
        self._serial += 1
        return f"{prefix}_scripted{self._serial:06d}"

    def _render(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        response_id = self._next_id("resp")
        include = body.get("include") or []
        output: list[Item] = []
        if reply.reasoning:
            reasoning: Item = {"type": "reasoning", "id": self._next_id("rs"), "summary": []}
            if _ENCRYPTED_REASONING in include:
                token = f"scripted-reasoning:{reasoning['id']}".encode()
                reasoning["encrypted_content"] = base64.b64encode(token).decode()
            output.append(reasoning)
        for template in reply.items:
            item = dict(template)
            prefix = {"message": "msg", "function_call": "fc", "reasoning": "rs"}.get(
                str(item.get("type")), "item"
            )
            item.setdefault("id", self._next_id(prefix))
            if item.get("type") == "function_call":
                item.setdefault("call_id", self._next_id("call"))
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
            "created_at": int(time.time()),
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
            "service_tier": "default",
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


def _error(
    status: int,
    message: str,
    param: str | None,
    code: str | None,
    error_type: str = "invalid_request_error",
    headers: Mapping[str, str] | None = None,
) -> web.Response:
    payload = {"error": {"message": message, "type": error_type, "param": param, "code": code}}
    return web.json_response(payload, status=status, headers=headers)


def _default_message(
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


# ---------------------------------------------------------------------- request checks


def _check_request(body: Mapping[str, Any]) -> _Rejection | None:
    """The error the real API would give for ``body``, or None if it would accept it."""
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return _Rejection(
            400, "Missing required parameter: 'model'.", "model", "missing_required_parameter"
        )
    if body.get("stream"):
        return _Rejection(
            400, "The scripted server does not stream; send stream=false.", "stream", None
        )
    if body.get("previous_response_id") is not None:
        message = (
            "The scripted server keeps no responses; "
            "send the whole input instead of previous_response_id."
        )
        return _Rejection(400, message, "previous_response_id", None)
    for index, tool in enumerate(body.get("tools") or []):
        rejection = _check_tool(index, tool)
        if rejection is not None:
            return rejection
    text_format = (body.get("text") or {}).get("format") or {}
    if text_format.get("type") == "json_schema" and text_format.get("strict"):
        problem = _strict_schema_problem(text_format.get("schema"), ())
        if problem is not None:
            message = f"Invalid schema for response_format '{text_format.get('name')}': {problem}"
            return _Rejection(400, message, "text.format.schema", "invalid_json_schema")
    items = body.get("input")
    if isinstance(items, list):
        return _check_items(items, store=body.get("store", True) is not False)
    return None


def _check_tool(index: int, tool: Any) -> _Rejection | None:
    if not isinstance(tool, dict) or tool.get("type") != "function":
        return None
    name = tool.get("name")
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        message = (
            f"Invalid 'tools[{index}].name': string does not match pattern. "
            "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."
        )
        return _Rejection(400, message, f"tools[{index}].name", "invalid_value")
    if tool.get("strict"):
        problem = _strict_schema_problem(tool.get("parameters"), ())
        if problem is not None:
            message = f"Invalid schema for function '{name}': {problem}"
            return _Rejection(
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


def _check_items(items: list[Any], *, store: bool) -> _Rejection | None:
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
            return _Rejection(404, message, "input", None)
        if kind == "function_call":
            call_ids.add(str(item.get("call_id")))
        elif kind == "function_call_output":
            call_id = str(item.get("call_id"))
            if call_id not in call_ids:
                message = f"No tool call found for function call output with call_id {call_id}."
                return _Rejection(400, message, "input", None)
            output_ids.add(call_id)
    unanswered = sorted(call_ids - output_ids)
    if unanswered:
        message = f"No tool output found for function call {unanswered[0]}."
        return _Rejection(400, message, "input", None)
    return None
