"""A scripted `Model` for tests of code that talks to a model, without HTTP.

`ScriptedModel` answers each request with the next step of its script and records every
request it was sent. A step is a `ModelResponse` (see `calls` and `text` for building them), an
exception to raise (a fault: ``ModelTransientError(...)``, ``ModelFatalError(..., status=401)``)
or an async function of the request (to answer from what was asked). `latency` seconds pass on
the given `sleep` before each answer, so a `FakeClock`'s sleep makes slowness deterministic.

    model = ScriptedModel(
        calls(("CreateSituation", {"Title": "Theft", "Description": "..."})),
        ModelTransientError("HTTP 503"),
        text("done"),
    )

For tests over the real `openai` SDK and HTTP, use `ScriptedResponsesServer`.
"""

from __future__ import annotations

import collections
import itertools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from storyteller_daemon.agent.model import FunctionCall, ModelRequest, ModelResponse, Usage

Step = ModelResponse | Exception | Callable[[ModelRequest], Awaitable[ModelResponse]]
"""One scripted answer: a response, an exception to raise, or a function of the request."""


class ScriptedModel:
    """Answers requests from a script; records every request it was sent.

    Args:
        steps: the answers, in order; a request beyond them fails the test.
        latency: seconds each answer takes (on `sleep`).
        sleep: how the latency is waited (a `FakeClock`'s `sleep` in deterministic tests).
    """

    name = "scripted"

    def __init__(
        self,
        *steps: Step,
        latency: float = 0.0,
        sleep: Callable[[float], Awaitable[None]] | None = None,
    ) -> None:
        self._steps: collections.deque[Step] = collections.deque(steps)
        self._latency = latency
        self._sleep = sleep
        self.requests: list[ModelRequest] = []

    def add(self, *steps: Step) -> None:
        """Append answers to the script."""
        self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        """Answers not used yet."""
        return len(self._steps)

    async def respond(self, request: ModelRequest) -> ModelResponse:
        """The next step's answer.

        Raises:
            AssertionError: the script has no step left (an unexpected request).
            Exception: the step's own exception.
        """
        self.requests.append(request)
        if not self._steps:
            raise AssertionError(f"unscripted request #{len(self.requests)}")
        step = self._steps.popleft()
        if self._latency and self._sleep is not None:
            await self._sleep(self._latency)
        if isinstance(step, Exception):
            raise step
        if callable(step):
            return await step(request)
        return step


_serial = itertools.count(1)


def _next(prefix: str) -> str:
    return f"{prefix}_{next(_serial)}"


def calls(
    *specs: tuple[str, Mapping[str, Any] | str] | tuple[str, Mapping[str, Any] | str, str],
    text: str = "",
    usage: Usage | None = None,
    echo_items: bool = True,
) -> ModelResponse:
    """A response calling tools; each spec is (name, arguments[, call_id]).

    Arguments given as a string are sent verbatim (for malformed JSON). The continuation holds
    one ``function_call`` item per call unless `echo_items` is false.
    """
    function_calls: list[FunctionCall] = []
    for spec in specs:
        name, arguments = spec[0], spec[1]
        call_id = spec[2] if len(spec) > 2 else _next("call")
        raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
        function_calls.append(FunctionCall(str(call_id), name, raw))
    continuation = tuple(
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


def text(answer: str, usage: Usage | None = None, incomplete: str | None = None) -> ModelResponse:
    """A response with only free text (or nothing); `incomplete` names why it was cut off."""
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
        continuation=(item,) if answer else (),
        usage=usage or Usage(),
        incomplete_reason=incomplete,
    )
