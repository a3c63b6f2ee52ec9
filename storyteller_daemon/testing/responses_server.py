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
asked, otherwise the server answers 500 "no scripted reply". A responder may answer with an
awaitable (an async function: `ModelResponder` puts a `ScriptedModel` behind the server). Every
request body is logged in ``requests``; ``in_flight`` and ``most_in_flight`` count the requests
being answered at once.

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

Two modes stand in for other servers: ``reasoning=False`` refuses reasoning fields, the
encrypted-reasoning include and ``prompt_cache_key`` with HTTP 400 (a server of models that do
not reason), and ``responses_api=False`` answers ``POST /v1/responses`` with 404 (a server
without the Responses API).
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import json
import math
from collections.abc import Awaitable
from types import TracebackType
from typing import Any, cast

from aiohttp import web

from storyteller_daemon.testing.responses_answers import Fault, Reply, Responder
from storyteller_daemon.testing.responses_bodies import (
    default_message,
    error_response,
    response_body,
)
from storyteller_daemon.testing.responses_checks import check_request, check_without_reasoning

SCRIPTED_EPOCH = 1_767_225_600
"""The Unix time (2026-01-01) every scripted response says it was created at."""


class ScriptedResponsesServer:
    """A Responses-API server on 127.0.0.1 answering from a script.

    Args:
        port: the port to bind; 0 picks a free one.
        responder: asked for an answer when the queue is empty (see `responder`).
        reasoning: False makes it a server whose models do not reason: a request with
            ``reasoning``, the encrypted-reasoning ``include`` or ``prompt_cache_key`` is
            refused with HTTP 400 and an OpenAI-style error body, as such servers do.
        responses_api: False makes it a server without ``POST /v1/responses`` (HTTP 404 with
            ``{"detail": "Not Found"}``, as an OpenAI-compatible server that serves only chat
            completions answers); ``GET /v1/models`` still works.

    Attributes:
        requests: every request body that parsed as a JSON object, in order, including those
            answered with a fault or rejected.
        headers: the HTTP headers (names lower-cased) of each of `requests`, in order.
        responder: ``(request body) -> Reply | Fault`` (or an awaitable of one), consulted when
            the queue is empty.
        in_flight: requests received and not answered yet.
        most_in_flight: the most requests that were being answered at the same time.
        models: model ids listed by ``GET /v1/models``; None answers 404, like a compatible
            server without that endpoint.
        api_key: when set, ``GET /v1/models`` answers 401 to any other bearer token.
        created_at: the Unix time every response says it was created at (fixed, so the
            answers are the same on every run).
    """

    def __init__(
        self,
        *,
        port: int = 0,
        responder: Responder | None = None,
        reasoning: bool = True,
        responses_api: bool = True,
    ) -> None:
        if not 0 <= port <= 65535:
            raise ValueError(f"port must be 0..65535, got {port}")
        self._port = port
        self.responder = responder
        self.reasoning = reasoning
        self.responses_api = responses_api
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.models: list[str] | None = None
        self.api_key: str | None = None
        self.created_at = SCRIPTED_EPOCH
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
        app.router.add_post(
            "/v1/responses", self._handle if self.responses_api else self._not_found
        )
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
            return error_response(
                400, "We could not parse the JSON body of your request.", None, None
            )
        if not isinstance(body, dict):
            return error_response(400, "The request body must be a JSON object.", None, None)
        self.requests.append(body)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        async with self._received:
            self._received.notify_all()
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            return await self._answer(body, request)
        finally:
            self.in_flight -= 1

    async def _not_found(self, request: web.Request) -> web.StreamResponse:
        return web.json_response({"detail": "Not Found"}, status=404)

    async def _answer(self, body: dict[str, Any], request: web.Request) -> web.StreamResponse:
        # Transport faults (rate limits, outages) happen before the request is looked at.
        head = self._script[0] if self._script else None
        if isinstance(head, Fault):
            self._script.popleft()
            return await self._answer_fault(head, body, request)
        rejection = None if self.reasoning else check_without_reasoning(body)
        rejection = rejection or check_request(body)
        if rejection is not None:
            return error_response(
                rejection.status, rejection.message, rejection.param, rejection.code
            )
        answer: object
        if self._script:
            answer = self._script.popleft()
        elif self.responder is not None:
            try:
                # Checked below: a responder written in a test may return anything.
                answer = cast(object, self.responder(body))
                if inspect.isawaitable(answer):
                    answer = await self._unless_stopping(answer)
            except Exception as exc:
                # A broken responder is a test bug: say so in the answer the client sees.
                message = f"The scripted responder raised {type(exc).__name__}: {exc}"
                return error_response(
                    500, message, None, "scripted_responder_failed", "server_error"
                )
        else:
            message = (
                "No scripted reply: the queue is empty and no responder is set "
                f"(request #{len(self.requests)})."
            )
            return error_response(500, message, None, "no_scripted_reply", "server_error")
        if isinstance(answer, Fault):
            return await self._answer_fault(answer, body, request)
        if not isinstance(answer, Reply):
            message = (
                f"The scripted responder returned {type(answer).__name__}, not Reply or Fault."
            )
            return error_response(500, message, None, "scripted_responder_failed", "server_error")
        if answer.delay_seconds > 0:
            stopping = asyncio.ensure_future(self._stopping.wait())
            try:
                await asyncio.wait({stopping}, timeout=answer.delay_seconds)
            finally:
                stopping.cancel()
        return web.json_response(response_body(answer, body, self._next_id, self.created_at))

    async def _unless_stopping(self, answer: Awaitable[object]) -> object:
        """What `answer` comes to, or (when the server stops first) a hang, which the stopping
        server ends."""
        answering = asyncio.ensure_future(answer)
        stopping = asyncio.ensure_future(self._stopping.wait())
        try:
            done, _ = await asyncio.wait({answering, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopping.cancel()
            answering.cancel()  # nothing to cancel once it has answered
        return answering.result() if answering in done else Fault.hang()

    async def _list_models(self, request: web.Request) -> web.StreamResponse:
        given = request.headers.get("Authorization", "")
        if self.api_key is not None and given != f"Bearer {self.api_key}":
            return error_response(
                401, default_message(401, None, {}, request), None, "invalid_api_key"
            )
        if self.models is None:
            return error_response(404, "Invalid URL (GET /v1/models)", None, None)
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "scripted"} for m in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    async def _answer_fault(
        self, fault: Fault, body: dict[str, Any], request: web.Request
    ) -> web.StreamResponse:
        if fault.kind == "hang":
            await self._stopping.wait()
            return error_response(503, "The scripted server stopped.", None, None, "server_error")
        if fault.kind == "drop":
            if request.transport is not None:
                request.transport.abort()
            return error_response(500, "The connection was dropped.", None, None, "server_error")
        headers: dict[str, str] = {}
        if fault.retry_after is not None:
            headers["retry-after-ms"] = f"{fault.retry_after * 1000:g}"
            headers["retry-after"] = str(math.ceil(fault.retry_after))
        status = fault.status_code
        message = fault.message or default_message(status, fault.code, body, request)
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
        return error_response(status, message, None, code, error_type, headers)

    def _next_id(self, prefix: str) -> str:
        self._serial += 1
        return f"{prefix}_scripted{self._serial:06d}"
