"""Test doubles for the agent tests: a scripted `Model`, a manual clock, response builders."""

from __future__ import annotations

import collections
import itertools
import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from storyteller_daemon.agent.model import FunctionCall, ModelRequest, ModelResponse, Usage
from storyteller_daemon.agent.tools.base import Envelope, ToolContext, invoke, parse_arguments
from storyteller_daemon.agent.tools.registry import BUILTIN_TOOLS

Step = ModelResponse | Exception | Callable[[ModelRequest], Awaitable[ModelResponse]]


class ManualClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class ScriptedModel:
    """Answers requests from a script; records every request it was sent."""

    name = "scripted"

    def __init__(self, *steps: Step) -> None:
        self._steps: collections.deque[Step] = collections.deque(steps)
        self.requests: list[ModelRequest] = []

    def add(self, *steps: Step) -> None:
        self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        return len(self._steps)

    async def respond(self, request: ModelRequest) -> ModelResponse:
        self.requests.append(request)
        if not self._steps:
            raise AssertionError(f"unscripted request #{len(self.requests)}")
        step = self._steps.popleft()
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
    """A response with only free text (or nothing)."""
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


async def execute(ctx: ToolContext, name: str, arguments: Mapping[str, Any] | str) -> Envelope:
    """Run a built-in tool as the loop would, from argument text."""
    raw = arguments if isinstance(arguments, str) else json.dumps(dict(arguments))
    return await invoke(BUILTIN_TOOLS[name], parse_arguments(raw), ctx)
