"""A scripted `Model` for tests of code that talks to a model, without HTTP.

`ScriptedModel` answers each request with the next step of its script and records every
request it was sent. A step is a `ModelResponse` (see `calls` and `text` for building them), an
exception to raise (a fault: ``ModelTransientError(...)``, ``ModelFatalError(..., status=401)``)
or an async function of the request (to answer from what was asked; `testing.steps` has
ready-made ones). Once the script has run out, the `then` step answers every further request.
`latency` seconds pass on the given `sleep` before each answer, so a `FakeClock`'s sleep makes
slowness deterministic; `hold` keeps answers back until `release`.

    model = ScriptedModel(
        calls(("CreateSituation", {"Title": "Theft", "Description": "..."})),
        ModelTransientError("HTTP 503"),
        text("done"),
    )
    forever = ScriptedModel(then=calls(("Noop", {})))

For tests over the real `openai` SDK and HTTP, use `ScriptedResponsesServer` (and
`ModelResponder` to put a `ScriptedModel` behind it).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import itertools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from storyteller_daemon.agent.models.interface import (
    FunctionCall,
    ModelRequest,
    ModelResponse,
    ResponseItem,
    Usage,
)

StepFunction = Callable[[ModelRequest], Awaitable[ModelResponse]]
"""A step that answers from the request (`testing.steps` builds such steps)."""
Step = ModelResponse | Exception | StepFunction
"""One scripted answer: a response, an exception to raise, or a function of the request."""


class ScriptedModel:
    """Answers requests from a script; records every request it was sent.

    Args:
        steps: the answers, in order.
        then: the answer to every request after `steps` have run out; None (the default) fails
            such a request as unexpected.
        latency: seconds each answer takes (on `sleep`); the attribute may be changed between
            requests.
        sleep: how the latency is waited: `asyncio.sleep` unless given (a `FakeClock`'s `sleep`
            keeps a test deterministic, its `advance` moves the clock by each latency).

    Attributes:
        requests: every request received, in order, including those still being answered.
        latency: seconds the next answers take.

    A response given more than once (a `then` response, or one object scripted twice) comes
    back with fresh response and call ids each time, as a real endpoint's answers would.
    """

    name = "scripted"

    def __init__(
        self,
        *steps: Step,
        then: Step | None = None,
        latency: float = 0.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._steps: collections.deque[Step] = collections.deque(steps)
        self._then = then
        self.latency = latency
        self._sleep = sleep
        self.requests: list[ModelRequest] = []
        self._given: set[str] = set()
        self._open = asyncio.Event()
        self._open.set()
        self._received = asyncio.Condition()

    def add(self, *steps: Step) -> None:
        """Append answers to the script."""
        self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        """Scripted answers not used yet (the `then` step is not counted)."""
        return len(self._steps)

    def hold(self) -> None:
        """Keep answers back: requests from now on wait (already recorded) until `release`."""
        self._open.clear()

    def release(self) -> None:
        """Let the held requests, and any later ones, be answered."""
        self._open.set()

    async def wait_for_requests(self, count: int) -> None:
        """Return once at least `count` requests have been received.

        It waits without limit: wrap it in ``asyncio.timeout`` in tests.
        """
        async with self._received:
            await self._received.wait_for(lambda: len(self.requests) >= count)

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """The next step's answer.

        Raises:
            AssertionError: the script has no step left and there is no `then` step (an
                unexpected request).
            Exception: the step's own exception.
        """
        self.requests.append(request)
        async with self._received:
            self._received.notify_all()
        if self._steps:
            step = self._steps.popleft()
        elif self._then is not None:
            step = self._then
        else:
            raise AssertionError(f"unscripted request #{len(self.requests)}")
        await self._open.wait()
        if self.latency:
            await self._sleep(self.latency)
        response = await respond_with(step, request)
        if response.id in self._given:
            response = _renewed(response)
        self._given.add(response.id)
        return response


async def respond_with(step: Step, request: ModelRequest) -> ModelResponse:
    """What `step` answers to `request`: the response itself, its exception raised, or the
    function's answer.

    Raises:
        Exception: the step is an exception, or its function raised one.
    """
    if isinstance(step, Exception):
        raise step
    if callable(step):
        return await step(request)
    return step


_serial = itertools.count(1)


def _next(prefix: str) -> str:
    return f"{prefix}_{next(_serial)}"


def _renewed(response: ModelResponse) -> ModelResponse:
    """`response` with a new id and new call ids (in its continuation too)."""
    new_ids = {call.call_id: _next("call") for call in response.function_calls}
    continuation = tuple(
        {**item, "call_id": new_ids[item["call_id"]]} if item.get("call_id") in new_ids else item
        for item in response.continuation
    )
    return dataclasses.replace(
        response,
        id=_next("resp"),
        function_calls=tuple(
            dataclasses.replace(call, call_id=new_ids[call.call_id])
            for call in response.function_calls
        ),
        continuation=continuation,
    )


def calls(
    *specs: tuple[str, Mapping[str, Any] | str] | tuple[str, Mapping[str, Any] | str, str],
    text: str = "",
    usage: Usage | None = None,
    echo_items: bool = True,
    reasoning: bool = False,
) -> ModelResponse:
    """A response calling tools; each spec is (name, arguments[, call_id]).

    Arguments given as a string are sent verbatim (for malformed JSON). The continuation holds
    one ``function_call`` item per call unless `echo_items` is false, after a reasoning item
    (with encrypted content, as a stateless client gets it) when `reasoning` is true.
    """
    function_calls: list[FunctionCall] = []
    for spec in specs:
        name, arguments = spec[0], spec[1]
        call_id = spec[2] if len(spec) > 2 else _next("call")
        raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
        function_calls.append(FunctionCall(str(call_id), name, raw))
    continuation = _reasoning(reasoning) + tuple(
        {"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments}
        for c in function_calls
        if echo_items
    )
    return ModelResponse(
        id=_next("resp"),
        model="scripted-model",
        status="completed",
        function_calls=tuple(function_calls),
        output_text=text,
        continuation=continuation,
        usage=usage or Usage(),
    )


def text(
    answer: str,
    usage: Usage | None = None,
    incomplete: str | None = None,
    *,
    reasoning: bool = False,
) -> ModelResponse:
    """A response with only free text (or nothing); `incomplete` names why it was cut off;
    `reasoning` puts a reasoning item (with encrypted content) first in the continuation."""
    item = {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": answer}],
    }
    return ModelResponse(
        id=_next("resp"),
        model="scripted-model",
        status="incomplete" if incomplete else "completed",
        function_calls=(),
        output_text=answer,
        continuation=_reasoning(reasoning) + ((item,) if answer else ()),
        usage=usage or Usage(),
        incomplete_reason=incomplete,
    )


def _reasoning(wanted: bool) -> tuple[ResponseItem, ...]:
    """A reasoning item as a stateless request gets it back (encrypted), if `wanted`."""
    if not wanted:
        return ()
    item_id = _next("rs")
    return ({"type": "reasoning", "id": item_id, "summary": [], "encrypted_content": item_id},)
